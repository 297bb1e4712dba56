"""Suppression comments: `# noqa`, `# noqa: JF101,JF2`, and file-level `# jaxfuse-lint: noqa[: CODES]`.

Comments are found with the tokenizer, so `"# noqa"` inside a string does not count.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"#\s*jaxfuse-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[\s,]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)


@dataclass
class Suppressions:
    # row -> None (all codes) or the code prefixes listed
    lines: dict[int, tuple[str, ...] | None] = field(default_factory=dict)
    file_all: bool = False
    file_codes: tuple[str, ...] = ()

    def suppressed(self, code: str, row: int) -> bool:
        if self.file_all or any(code.startswith(c) for c in self.file_codes):
            return True
        if row in self.lines:
            codes = self.lines[row]
            return codes is None or any(code.startswith(c) for c in codes)
        return False


def _codes(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    return tuple(c.upper() for c in re.split(r"[\s,]+", text.strip()) if c)


def _comments(source: str):
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a line scan: good enough for files the tokenizer rejects.
        for row, line in enumerate(source.splitlines(), 1):
            i = line.find("#")
            if i >= 0:
                yield row, line[i:]


def parse_suppressions(source: str) -> Suppressions:
    s = Suppressions()
    if "noqa" not in source and "NOQA" not in source:
        return s
    for row, comment in _comments(source):
        m = _FILE_NOQA.search(comment)
        if m:
            codes = _codes(m.group("codes"))
            if codes is None:
                s.file_all = True
            else:
                s.file_codes += codes
            continue
        m = _NOQA.search(comment)
        if m:
            s.lines[row] = _codes(m.group("codes"))
    return s
