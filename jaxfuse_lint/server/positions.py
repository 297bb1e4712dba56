"""jaxfuse-lint positions <-> LSP positions.

jaxfuse-lint: 1-based rows, 1-based columns counted in code points.
LSP: 0-based lines, 0-based `character` counted in the negotiated position
encoding's code units: UTF-16 unless the client offered another ("utf-8",
"utf-32") in `general.positionEncodings`. A line holding non-ASCII text before
a range is where getting this wrong shows (an "é" is 1 UTF-16 unit but 2 UTF-8
bytes; a "𝜋" is 2 UTF-16 units, 4 UTF-8 bytes, 1 code point).
"""
from __future__ import annotations

from jaxfuse_lint.core.edits import split_lines, strip_eol

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def code_units(text: str, encoding: str = UTF16) -> int:
    if encoding == UTF32:
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def to_lsp(lines: list[str], row: int, column: int, encoding: str = UTF16) -> tuple[int, int]:
    """A 1-based (row, column) as an LSP (line, character).

    A row just past the last line (the end of a whole-line edit that reaches the
    end of the file) is the start of the empty line after a final newline, or
    the end of the last line when the file has no final newline.
    """
    index = row - 1
    if index < 0:
        return (0, 0)
    if index >= len(lines):
        if lines and not lines[-1].endswith(("\n", "\r")):
            last = strip_eol(lines[-1])
            return (len(lines) - 1, code_units(last, encoding))
        return (len(lines), 0)
    text = strip_eol(lines[index])
    return (index, code_units(text[: max(column - 1, 0)], encoding))


def from_lsp(lines: list[str], line: int, character: int, encoding: str = UTF16) -> tuple[int, int]:
    """An LSP (line, character) as a 1-based (row, column); a position inside a
    surrogate pair or a UTF-8 sequence counts as the character it falls in."""
    if line >= len(lines):
        return (line + 1, 1)
    text = strip_eol(lines[line])
    units = 0
    for i, c in enumerate(text):
        if units >= character:
            return (line + 1, i + 1)
        units += code_units(c, encoding)
        if units > character:
            return (line + 1, i + 1)
    return (line + 1, len(text) + 1)


def document_lines(text: str) -> list[str]:
    return split_lines(text)
