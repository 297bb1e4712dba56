"""How file names are shown: relative to the working directory when they are below it, and
printable (`printable`): a name is any bytes but `/` and NUL, so it may not be UTF-8 (Python
holds such bytes as lone surrogates, which no UTF-8 output can carry) or may hold a newline
(which would split a one-line-per-finding report)."""
from __future__ import annotations

import os
import re

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# C0 and C1 controls, DEL, the Unicode line and paragraph separators, and lone surrogates.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match) -> str:
    c = match.group()
    if c in _ESCAPES:
        return _ESCAPES[c]
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte, as os.fsdecode keeps it (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(name: str) -> str:
    """The name with undecodable bytes as `\\xNN` and control characters and line breaks escaped
    (`\\n`, `\\x1b`, `\\u2028`): valid UTF-8, on one line. Other names are returned as they are."""
    return _UNPRINTABLE.sub(_escape, name)


def display_path(filename: str, root: str | None = None) -> str:
    """The name as reports show it: relative to `root` (default: the working directory) when
    the file is below it, and printable."""
    if filename in ("-", "<stdin>"):
        return filename
    base = root or os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(filename), base)
    except ValueError:
        return printable(filename)
    return printable(filename if rel.startswith("..") else rel)
