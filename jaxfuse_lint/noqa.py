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


def _unsafe_rows(source: str) -> set[int]:
    """Rows whose end is inside a multi-line string or continued with a backslash: a comment
    cannot be appended there."""
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                rows.update(range(tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for row, line in enumerate(source.splitlines(), 1):
        if line.rstrip().endswith("\\"):
            rows.add(row)
    return rows


def add_noqa(source: str, codes_by_row: dict[int, set[str]]) -> tuple[str, int, list[int]]:
    """`# noqa: CODES` on each row (merged into a `# noqa: ...` already there; a blanket
    `# noqa` already covers everything). Returns the text, how many rows got a directive,
    and the rows that could not take one."""
    from jaxfuse_lint.lines import split_lines

    lines = split_lines(source)
    comments = dict(_comments(source)) if codes_by_row else {}
    unsafe = _unsafe_rows(source)
    added, skipped = 0, []
    for row in sorted(codes_by_row):
        if row < 1 or row > len(lines):
            continue
        if row in unsafe:
            skipped.append(row)
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        eol = line[len(body):]
        codes = set(codes_by_row[row])
        comment = comments.get(row)
        m = _NOQA.search(comment) if comment else None
        if m is not None:
            existing = _codes(m.group("codes"))
            if existing is None or all(any(c.startswith(e) for e in existing) for c in codes):
                continue  # already suppressed
            merged = ", ".join(sorted(set(existing) | codes))
            start = len(body) - len(comment) + m.start()
            end = len(body) - len(comment) + m.end()
            body = body[:start] + f"# noqa: {merged}" + body[end:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(sorted(codes))
        lines[row - 1] = body + eol
        added += 1
    return "".join(lines), added, skipped
