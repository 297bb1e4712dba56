"""Identifiers as Python reads them: NFKC-normalised (PEP 3131).

Python reads the fullwidth `ｇ` as `g`, `𝐱` as `x`, `ﬁle` as `file`: one name however it is
spelled. libcst keeps each spelling, so an analysis that compared them as written would take
`g = ...` and a later read of `ｇ` for two names (a safe fix moved `g` into a loop body and the
read after the loop raised NameError). The engine analyses the text with every identifier
normalised (`normalized`), only identifiers, never strings or comments, and maps what it found
back to the text as written: columns on the lines where a name's spelling changed length, and
fixed code whose untouched lines keep their own spelling (`Normalized.restore`).

Nearly every file is ASCII, or NFKC-normal as a whole: those cost one scan of the text.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from jaxfuse_lint.core.lines import split_lines

if TYPE_CHECKING:
    from jaxfuse_lint.core.diagnostics import Diagnostic, Location

# A word holding a character outside ASCII: the only place an identifier can change under NFKC.
_WIDE_WORD = re.compile(r"\w*[^\x00-\x7f]\w*")


@dataclass
class Normalized:
    """The text with its identifiers normalised, and how to go back to the original."""

    original: str
    text: str
    # row (1-based) -> [(start column in `text` (0-based), its length there, its length as written)]
    changes: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)

    def column(self, row: int, column: int) -> int:
        """The 1-based column in the original text of a 1-based column of `text`."""
        changes = self.changes.get(row)
        if not changes:
            return column
        at = column - 1
        shift = 0
        for start, now, was in changes:
            if at >= start + now:
                shift += now - was
            elif at > start:
                shift += at - start - min(at - start, was)
        return at - shift + 1

    def location(self, loc: Location) -> Location:
        column = self.column(loc.row, loc.column)
        return loc if column == loc.column else replace(loc, column=column)

    def diagnostic(self, d: Diagnostic) -> Diagnostic:
        """D, found in `text`, located in the original. A fix's replacement lines keep the
        normalised spelling: the same names to Python."""
        if not self.changes:
            return d
        fix = d.fix
        if fix is not None:
            edits = tuple(replace(e, location=self.location(e.location), end_location=self.location(e.end_location))
                          for e in fix.edits)
            fix = replace(fix, edits=edits)
        return replace(d, location=self.location(d.location), end_location=self.location(d.end_location), fix=fix)

    def restore(self, fixed: str) -> str:
        """Fixed code made from `text`, with every line the fixes left as it was spelled in the
        original (the lines they wrote keep the normalised spelling)."""
        if fixed == self.text:
            return self.original
        import difflib

        normal = split_lines(self.text)
        written = split_lines(self.original)
        new = split_lines(fixed)
        out: list[str] = []
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, normal, new, autojunk=False).get_opcodes():
            out.extend(written[i1:i2] if tag == "equal" else new[j1:j2])
        return "".join(out)


def normalized(text: str) -> Normalized | None:
    """TEXT with its identifiers NFKC-normalised, or None when none changes (or the text cannot
    be tokenized: the parsers say why)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return None
    if not any(unicodedata.normalize("NFKC", w) != w for w in _WIDE_WORD.findall(text)):
        return None  # the changes are in punctuation, strings' symbols...: no identifier changes
    import tokenize

    lines = split_lines(text)
    found: dict[int, list[tuple[int, str, str]]] = {}
    try:
        for tok in tokenize.generate_tokens(iter(lines + [""]).__next__):
            if tok.type == tokenize.NAME and not tok.string.isascii():
                name = unicodedata.normalize("NFKC", tok.string)
                if name != tok.string:
                    found.setdefault(tok.start[0], []).append((tok.start[1], tok.string, name))
    except (tokenize.TokenError, SyntaxError, StopIteration):
        return None
    if not found:
        return None
    out = list(lines)
    changes: dict[int, list[tuple[int, int, int]]] = {}
    for row, names in found.items():
        line = lines[row - 1]
        pieces, last, shift, moved = [], 0, 0, []
        for col, was, now in sorted(names):
            if line[col:col + len(was)] != was:
                return None  # not where the tokenizer says: leave the text alone
            pieces += [line[last:col], now]
            last = col + len(was)
            if len(now) != len(was):
                moved.append((col + shift, len(now), len(was)))
            shift += len(now) - len(was)
        pieces.append(line[last:])
        out[row - 1] = "".join(pieces)
        if moved:
            changes[row] = moved
    return Normalized(text, "".join(out), changes)
