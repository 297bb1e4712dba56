"""The per-file cache: `.jaxfuse_lint_cache/` (or `--cache-dir` / `cache-dir`).

An entry is keyed by what a file's result depends on:
- the file's bytes (SHA-256) and the name it is reported under,
- its module name in the project (relative imports resolve against it),
- the tool: its version and a fingerprint of its own source files (so that an edited
  checkout never serves results of the old code),
- the effective configuration (`Settings.fingerprint()`).
It holds the file's text prescan and project summary (which depend on nothing else), and
the diagnostics of the last check together with the `external_traced` map they were
computed with: a result is reused only when the map is the same again, so a change in
another module that changes what is traced here invalidates it.

Next to the entries, a run of `check` over a list of files leaves a record of it: each
file's key and final result (`runs/`, one record per list of file names). When every file
of a run has the key its record says, the project index cannot have changed either (every
input of it is in the keys), so the results are replayed from that one file: a warm run of
an unchanged project reads one small file instead of every file's summary.

Entries are JSON files written atomically; a missing, unreadable or corrupt entry or record
is a miss, and a cache directory that cannot be written is reported once and then left
alone. JSON was measured against marshal, msgpack and pickle on the cache of flax (353
files): decoding every full entry took 24, 17, 19 and 24 ms. The format matters less than
not reading the summaries at all, so it stays JSON (stdlib, safe on a damaged file).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from jaxfuse_lint import __version__
from jaxfuse_lint.config import Settings

DEFAULT_DIR = ".jaxfuse_lint_cache"
FORMAT = 1


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The version plus the size and mtime of every source file of the tool."""
    h = hashlib.sha256(f"{__version__}:{FORMAT}".encode())
    roots = [Path(__file__).resolve().parent]
    # Located, not imported: a warm run loads none of the codemods.
    spec = importlib.util.find_spec("codemods")
    if spec is not None and spec.submodule_search_locations:  # codemods ships with the package
        roots.extend(Path(p).resolve() for p in spec.submodule_search_locations)
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    p = os.path.join(dirpath, name)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    h.update(f"{os.path.relpath(p, root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]


def default_directory(settings: Settings) -> Path:
    """`cache-dir` / `--cache-dir`; else next to the pyproject.toml that configured the run
    (the project root); else in the current directory (as ruff does)."""
    if settings.cache_dir:
        return Path(settings.cache_dir)
    if settings.config_path and settings.project_root:
        return Path(settings.project_root) / DEFAULT_DIR
    return Path(DEFAULT_DIR)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cache:
    def __init__(self, directory: str | os.PathLike, settings: Settings) -> None:
        self.root = Path(directory)
        settings_key = hashlib.sha256(settings.fingerprint().encode()).hexdigest()[:16]
        self.directory = self.root / tool_fingerprint() / settings_key
        self.error: str | None = None  # the first write failure, reported once by the runner
        self._prepared = False

    @staticmethod
    def key(filename: str, digest: str, module: str | None) -> str:
        return hashlib.sha256(f"{filename}\0{digest}\0{module}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    @staticmethod
    def run_key(filenames: list[str]) -> str:
        return hashlib.sha256("\0".join(filenames).encode()).hexdigest()

    def _run_path(self, run_key: str) -> Path:
        return self.directory / "runs" / f"{run_key}.json"

    def load_run(self, run_key: str) -> list[tuple[str, str, dict]] | None:
        """The record of the last run over these files: (filename, key, result) per file."""
        try:
            with open(self._run_path(run_key), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), list):
            return None
        out = []
        for item in data["files"]:
            if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                    and isinstance(item[1], str) and isinstance(item[2], dict)):
                return None
            out.append((item[0], item[1], item[2]))
        return out

    def store_run(self, run_key: str, files: list[tuple[str, str, dict]]) -> None:
        self._write(self._run_path(run_key), {"format": FORMAT, "files": files})

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("format") == FORMAT else None

    def store(self, key: str, entry: dict[str, Any]) -> None:
        self._write(self._path(key), {"format": FORMAT, **entry})

    def _write(self, path: Path, entry: dict[str, Any]) -> None:
        if self.error is not None:
            return
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(entry, fh, separators=(",", ":"))
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, TypeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error = f"{self.root}: cannot write the cache ({reason}); continuing without it"

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.root.mkdir(parents=True, exist_ok=True)
        tag = self.root / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n"
                           "# This file is a cache directory tag created by jaxfuse-lint.\n")
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Automatically created by jaxfuse-lint.\n*\n")
        self._prepared = True
