"""`check --watch`: check, then check again each time a checked file or the configuration changes
(ruff's `--watch`).

Changes are found by polling, without a file-watching dependency: every `INTERVAL` seconds the
paths are discovered again (a new file counts) and the stat signature of each source file and of
the configuration files is compared with the one taken before the last check began (a change made
while it ran is checked next). Each check is the whole `check` (with its cache, only what changed,
and what imports it, is analysed again), its report on stdout after the terminal is cleared; the
lines about watching go to stderr. Ctrl-C ends it with exit 0; a check that Ctrl-C interrupts
writes nothing, as `check` does, and the worker processes end with it.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable

from jaxfuse_lint.core.config import ConfigError, Settings

INTERVAL = 0.5
# ANSI: erase the screen and the scroll-back, cursor home (only on a terminal).
CLEAR = "\x1b[2J\x1b[3J\x1b[H"


def watch_check(run: Callable[[], None], paths: tuple[str, ...], settings: Callable[[], Settings],
                interval: float = INTERVAL) -> None:
    """Run RUN (one `check`, which ends with SystemExit) now and after every change; never returns
    but through SystemExit(0) on Ctrl-C."""
    first = True
    try:
        while True:
            _clear()
            print("Starting linter in watch mode..." if first else "File change detected...", file=sys.stderr,
                  flush=True)
            first = False
            before = snapshot(paths, settings)
            try:
                run()
            except SystemExit as exc:
                if exc.code == 130:  # the check was interrupted (Ctrl-C)
                    raise KeyboardInterrupt from None
            sys.stdout.flush()
            print("Watching for file changes.", file=sys.stderr, flush=True)
            while snapshot(paths, settings) == before:
                time.sleep(interval)
    except KeyboardInterrupt:
        sys.stdout.flush()
        raise SystemExit(0) from None


def snapshot(paths: tuple[str, ...], settings: Callable[[], Settings]) -> dict[str, list[int] | None]:
    """Stat signatures of the source files under PATHS and of the configuration files that may
    apply to them (a configuration that does not load: its files only; the check says what is wrong)."""
    from jaxfuse_lint.core.stat_signature import file_signature
    from jaxfuse_lint.discover.files import discover_files

    watched: set[str] = set()
    for raw in paths:
        start = Path(raw).resolve()
        for folder in (start, *start.parents):
            for name in ("pyproject.toml", "jaxfuse-lint.toml"):
                watched.add(str(folder / name))
    try:
        resolved = settings()
    except ConfigError:
        resolved = None
    if resolved is not None:
        if resolved.config_path:
            watched.add(os.path.abspath(resolved.config_path))
        watched.update(str(f) for f in discover_files(list(paths), resolved).files)
    return {path: file_signature(path) for path in sorted(watched)}


def _clear() -> None:
    if sys.stdout.isatty():
        sys.stdout.write(CLEAR)
        sys.stdout.flush()
