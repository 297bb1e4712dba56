"""A one-line progress bar on stderr for long runs.

It draws only on a terminal, only once a run has lasted `delay` seconds (short runs
never flicker), redraws at most ten times a second, and erases itself when done, so
nothing of it is left in the terminal's scrollback or in anything piped or captured.
The command line never enables it for machine-readable output formats.
"""
from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO


def wanted(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    def __init__(self, total: int, *, stream: TextIO | None = None, enabled: bool = True,
                 delay: float = 0.5, label: str = "Checking") -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and total > 0
        self.delay = delay
        self.label = label
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.shown = False
        self.done = 0

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def update(self, done: int) -> None:
        self.done = done
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.start < self.delay or (now - self.last_draw < 0.1 and done < self.total):
            return
        self.last_draw = now
        self._draw(now)

    def _draw(self, now: float) -> None:
        width = shutil.get_terminal_size((80, 20)).columns
        counts = f" {self.done}/{self.total} files {now - self.start:5.1f}s"
        bar_width = max(10, min(40, width - len(self.label) - len(counts) - 4))
        filled = bar_width * self.done // self.total if self.total else bar_width
        line = f"{self.label} [{'#' * filled}{'.' * (bar_width - filled)}]{counts}"
        try:
            self.stream.write("\r" + line[: width - 1])
            self.stream.flush()
            self.shown = True
        except (OSError, ValueError):
            self.enabled = False

    def close(self) -> None:
        if self.shown:
            width = shutil.get_terminal_size((80, 20)).columns
            try:
                self.stream.write("\r" + " " * (width - 1) + "\r")
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.shown = False
        self.enabled = False
