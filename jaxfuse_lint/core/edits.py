"""Text arithmetic shared by reporters, `review` and the language server.

Locations are 1-based rows and 1-based columns counted in characters (code
points); end locations are exclusive. Fix edits are whole-line edits (column 1
to column 1), but everything here works for any edit.
"""
from __future__ import annotations

from typing import Iterable

from jaxfuse_lint.core.diagnostics import Edit, Fix, Location
from jaxfuse_lint.core.lines import split_lines  # noqa: F401  (re-exported: reporters use it)


def strip_eol(line: str) -> str:
    return line.rstrip("\r\n")


def offset_of(lines: list[str], loc: Location) -> int:
    """Character offset of `loc` in the text made of `lines` (clamped to the text)."""
    row = loc.row - 1
    if row < 0:
        return 0
    if row >= len(lines):
        return sum(len(l) for l in lines)
    before = sum(len(l) for l in lines[:row])
    return before + min(max(loc.column - 1, 0), len(strip_eol(lines[row])))


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """The text with `edits` applied (edits must not overlap)."""
    lines = split_lines(text)
    spans = sorted(((offset_of(lines, e.location), offset_of(lines, e.end_location), e.content) for e in edits),
                   reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def fix_line_span(fix: Fix, n_lines: int) -> tuple[int, int]:
    """The original lines (1-based, inclusive) that a fix replaces.

    A pure insertion before line r (an edit from r:1 to r:1) is anchored to line
    r itself (or to the last line when it inserts at the end of the file), so the
    span is never empty and "replace these lines with that text" says it all.
    """
    lo, hi = None, None
    for e in fix.edits:
        start = e.location.row
        # An end at column 1 does not touch its row.
        end = e.end_location.row - 1 if e.end_location.column == 1 else e.end_location.row
        if end < start:  # insertion
            start = end = min(start, max(n_lines, 1))
        lo = start if lo is None else min(lo, start)
        hi = end if hi is None else max(hi, end)
    if lo is None:
        return (1, 0)
    return lo, hi


def replaced_lines(text: str, fix: Fix) -> tuple[int, int, str]:
    """(first row, last row, replacement text): the fix as "replace lines first..last with this".

    The replacement includes the line terminator of its last line when the
    original span had one.
    """
    lines = split_lines(text)
    lo, hi = fix_line_span(fix, len(lines))
    fixed = split_lines(apply_edits(text, fix.edits))
    # Lines before `lo` and after `hi` are untouched, so they match at both ends.
    tail = len(lines) - hi
    middle = fixed[lo - 1:len(fixed) - tail if tail else len(fixed)]
    return lo, hi, "".join(middle)


def utf8_column(line: str, column: int) -> int:
    """A 1-based character column as a 1-based UTF-8 byte column (reviewdog's unit)."""
    return len(line[: max(column - 1, 0)].encode("utf-8", "surrogatepass")) + 1


def source_line(text: str | None, row: int) -> str:
    if text is None:
        return ""
    lines = split_lines(text)
    return strip_eol(lines[row - 1]) if 0 < row <= len(lines) else ""
