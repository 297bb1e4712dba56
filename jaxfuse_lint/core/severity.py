"""How severe a finding is, for the output formats that say so (SARIF `level`, GitHub's `::error`,
GitLab's `severity`, rdjson, JUnit's failure `type`, the language server).

By default a finding is a `warning`, except where the code cannot run as written: a file that was
not checked (JF000), a concretization error (JF402), a traced value used where jax needs a static
one (JF405), a NumPy function called on a tracer (JF406). Those raise on the first trace, so they
are `error`s: code scanning and CI can gate on them. `[tool.jaxfuse-lint.severity]` sets the level
of any code or prefix (the most specific one wins, as for selection): "error", "warning" or "note".
"""
from __future__ import annotations

from typing import Iterable

LEVELS = ("error", "warning", "note")
# Findings of code that raises when it is traced (or a file that was not checked at all).
CRASH_CODES = ("JF000", "JF402", "JF405", "JF406")


def level(code: str, overrides: Iterable[tuple[str, str]] = ()) -> str:
    """The level of CODE: the most specific `severity` setting that matches it, else the default."""
    best, chosen = -1, None
    for prefix, value in overrides:
        specific = 0 if prefix == "ALL" else len(prefix) if code.startswith(prefix) else -1
        if specific > best:
            best, chosen = specific, value
    if chosen is not None:
        return chosen
    return "error" if code in CRASH_CODES else "warning"
