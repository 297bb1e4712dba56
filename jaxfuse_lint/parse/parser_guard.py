"""Guarding libcst's native parser: a text nested deeply enough to overflow its stack (a
segfault) or to make it run for minutes is shown to CPython's parser first, which stops at its
own limits with an exception; a text CPython rejects gets JF000 and is not given to libcst.
The engine guards every text it parses (engine/pipeline.py); the runner's workers guard each
file before the engine sees it, and word a crashed worker's file with CPython's verdict."""
from __future__ import annotations

import re
import warnings

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.parse.syntax_errors import nul_byte, syntax_error_diagnostic

# Lines this long, or brackets nested this deep, are checked by CPython's parser before
# libcst's, whose native parser can overflow its stack on such input.
LONG_LINE = 4000
DEEP_BRACKETS = 150

_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
_PAIR = re.compile(r"\(\)|\[\]|\{\}")


def _deep_brackets(text: str, limit: int = DEEP_BRACKETS) -> bool:
    """Brackets nested more than `limit` deep: innermost pairs are removed one level at a
    time (strings and comments are not told apart: a false alarm costs a CPython parse)."""
    s = _NOT_BRACKETS.sub("", text)
    for _ in range(limit):
        s, n = _PAIR.subn("", s)
        if not n:
            return False
    return _PAIR.search(s) is not None


def cpython_rejects(text: str, filename: str) -> BaseException | None:
    """CPython's own verdict on a text: the exception compile() raises, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return exc
    return None


_LOGICAL_BREAKS = re.compile(r"[()\[\]{}]|\\?\n")
_ELIF = re.compile(r"^[ \t]*elif\b", re.MULTILINE)
# More `elif`s than this in a file: CPython's parser recurses once per `elif` of a chain.
MANY_ELIFS = 400


def _long_logical_line(text: str, limit: int = LONG_LINE) -> bool:
    """A logical line (physical lines joined inside brackets or by a backslash) longer than
    `limit`: the only way to nest expressions deeply with short lines (`(-\n-\n-\n...1)`).
    Strings and comments are not told apart: a false alarm costs a CPython parse."""
    depth, start = 0, 0
    for m in _LOGICAL_BREAKS.finditer(text):
        c = m.group()
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and c == "\n":
            if m.start() - start > limit:
                return True
            start = m.end()
    return len(text) - start > limit


def needs_cpython_check(text: str) -> bool:
    """Whether a text may nest deeply enough to overflow libcst's native parser's stack (a
    segfault) or make it run for minutes: then CPython's parser, which stops at its own
    limits with an exception, looks at it first."""
    return (max(map(len, text.split("\n")), default=0) >= LONG_LINE or _deep_brackets(text)
            or _long_logical_line(text) or len(_ELIF.findall(text)) > MANY_ELIFS)


def parse_guard_text(text: str, filename: str) -> Diagnostic | None:
    """JF000 for a text with a NUL (CPython refuses it, libcst does not), or that needs
    CPython's check (`needs_cpython_check`) and that CPython rejects; None for any other text."""
    nul = nul_byte(text, filename)
    if nul is not None:
        return nul
    if not needs_cpython_check(text):
        return None
    exc = cpython_rejects(text, filename)
    if exc is None:
        return None
    return cpython_diagnostic(filename, exc)


def cpython_diagnostic(filename: str, exc: BaseException) -> Diagnostic:
    if isinstance(exc, SyntaxError):
        return syntax_error_diagnostic(filename, exc)
    d = syntax_error_diagnostic(filename, ValueError(f"{type(exc).__name__}: {exc}"))
    if isinstance(exc, (RecursionError, MemoryError)):  # CPython's parser says MemoryError on a deep stack
        d.message = "Could not parse file: too deeply nested for CPython to compile it"
    return d
