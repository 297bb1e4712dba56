"""Suppression comments: `# noqa`, `# noqa: JF101,JF2`, and file-level `# jaxfuse-lint: noqa[: CODES]`.

Comments are found with the tokenizer, so `"# noqa"` inside a string does not count.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

# A code is letters then digits (ruff's rule): `# noqa: JF101 because ...` lists one code.
_CODE = r"[A-Z]+[0-9]+"
_NOQA = re.compile(rf"#\s*noqa(?::\s*(?P<codes>{_CODE}(?:[\s,]+{_CODE}(?![A-Z]))*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(rf"#\s*jaxfuse-lint:\s*noqa(?::\s*(?P<codes>{_CODE}(?:[\s,]+{_CODE}(?![A-Z]))*))?", re.IGNORECASE)


@dataclass
class Directive:
    """One line's `# noqa: ...`, where it is (0-based character columns of the match)."""

    row: int
    codes: tuple[str, ...] | None
    start: int
    end: int
    raw_codes: tuple[str, ...] = ()  # as written, for the fix


@dataclass
class Suppressions:
    # row -> None (all codes) or the code prefixes listed
    lines: dict[int, tuple[str, ...] | None] = field(default_factory=dict)
    file_all: bool = False
    file_codes: tuple[str, ...] = ()
    directives: dict[int, Directive] = field(default_factory=dict)
    # (row, listed code) pairs that suppressed something (JF901 reports the others)
    used: set[tuple[int, str]] = field(default_factory=set)

    def suppressed(self, code: str, row: int) -> bool:
        if self.file_all or any(code.startswith(c) for c in self.file_codes):
            return True
        if row in self.lines:
            codes = self.lines[row]
            if codes is None:
                return True
            hits = [c for c in codes if code.startswith(c)]
            self.used.update((row, c) for c in hits)
            return bool(hits)
        return False


def _codes(text: str | None) -> tuple[str, ...] | None:
    if not text:
        return None
    return tuple(c.upper() for c in re.split(r"[\s,]+", text.strip()) if c)


def _comments(source: str):
    for row, _, comment in _comments_at(source):
        yield row, comment


def _comments_at(source: str):
    """(row, 0-based column, comment text) of every comment."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.start[1], tok.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Fall back to a line scan: good enough for files the tokenizer rejects.
        for row, line in enumerate(source.splitlines(), 1):
            i = line.find("#")
            if i >= 0:
                yield row, i, line[i:]


def parse_suppressions(source: str) -> Suppressions:
    s = Suppressions()
    if "noqa" not in source and "NOQA" not in source:
        return s
    for row, column, comment in _comments_at(source):
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
            codes = _codes(m.group("codes"))
            s.lines[row] = codes
            s.directives[row] = Directive(row, codes, column + m.start(), column + m.end(),
                                          tuple(re.split(r"[\s,]+", m.group("codes").strip())) if codes else ())
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
    from jaxfuse_lint.core.lines import split_lines

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



def add_noqa_to_notebook(raw: str, codes_by_cell_row: dict[tuple[int, int], set[str]]
                         ) -> tuple[str, int, list[tuple[int, int]]]:
    """`add_noqa` for a notebook's JSON text RAW: the rows are (cell, row in cell), as the
    diagnostics of a notebook give them. The directives go into the joined module (where the
    engine reads them) and back into the cells' sources; the file's JSON layout is kept.
    Raises NotebookError where a cell cannot take them back (IPython dedents it line by line)."""
    from jaxfuse_lint.parse.notebook import read

    nb = read(raw)
    by_module_row = {nb.module_row(cell, row): codes for (cell, row), codes in codes_by_cell_row.items()}
    module, added, skipped = add_noqa(nb.module, by_module_row)
    skipped_cells = []
    for row in skipped:
        hit = nb.cell_at(row)
        if hit is not None:
            skipped_cells.append((hit[0].number, hit[1]))
    if not added:
        return raw, 0, skipped_cells
    sources = nb.cell_sources(module)
    changed = {n: s for n, s in sources.items() if s != nb.cell_source(n)}
    return nb.with_sources(changed), added, skipped_cells

# -- JF901 unused-noqa ----------------------------------------------------------------------------

OWN_PREFIX = "JF"  # codes of other tools (E501, F401...) in a shared `# noqa` are theirs: left alone


def unused_directives(s: Suppressions, lines: list[str], enabled, known: set[str]) -> list[tuple[Directive, list[str], list[str]]]:
    """(directive, unused codes, unknown codes) for each `# noqa: ...` listing a jaxfuse-lint
    code that suppressed nothing. A code counts only when every rule it names is enabled
    for the file (`enabled(code)`): a code for a rule this run did not check may be needed
    by another configuration. Blanket `# noqa` is never reported (it may be there for
    another tool), nor are other tools' codes."""
    out = []
    for row, d in sorted(s.directives.items()):
        if d.codes is None:
            continue
        unused, unknown = [], []
        for raw, code in zip(d.raw_codes, d.codes):
            if not code.startswith(OWN_PREFIX) or (row, code) in s.used:
                continue
            named = [k for k in known if k.startswith(code)]
            if not named:
                unknown.append(raw)
            elif all(enabled(k) for k in named):
                unused.append(raw)
        if unused or unknown:
            out.append((d, unused, unknown))
    return out


def removal_edit(d: Directive, line: str, drop: list[str]) -> tuple[int, int, str]:
    """(start, end, replacement), 0-based columns in `line`: the codes in `drop` taken out of
    the directive, or the whole directive (and the spaces before it) when none is left."""
    keep = [c for c in d.raw_codes if c not in drop]
    if keep:
        return d.start, d.end, "# noqa: " + ", ".join(keep)
    body = line.rstrip("\r\n")
    rest = body[d.end:]
    if rest.strip():
        if rest.lstrip().startswith("#"):  # `# noqa: JF101  # why`: the next comment stays
            return d.start, d.end + len(rest) - len(rest.lstrip()), ""
        return d.start, d.end, "#"  # `# noqa: JF101 because ...`: the words stay a comment
    start = d.start
    while start > 0 and body[start - 1] in " \t":
        start -= 1
    return start, d.end, ""
