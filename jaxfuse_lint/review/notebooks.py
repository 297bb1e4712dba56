"""`review` on notebooks: a pull request's diff of an `.ipynb` is a diff of its JSON.

A finding is in a cell (rows counted in the cell); the diff's hunks and added lines
are lines of the JSON file. Each source line of a cell is one line of the JSON file
when the cell's source is stored as a list of lines (nbformat's way), so findings map
to file lines (report/notebooks.py) and are kept when they touch an added one.
The comment sits on that file line and names the cell; the fix is shown as a diff of
the cell, not as a ```suggestion (a suggestion replaces file lines, which here are
JSON string literals).
"""
from __future__ import annotations

import difflib

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.report.notebooks import cell_text, source_file_rows
from jaxfuse_lint.report.paths import printable
from jaxfuse_lint.core.edits import apply_edits, split_lines
from jaxfuse_lint.review.comments import ReviewComment, _fix_note, _headline, fence
from jaxfuse_lint.review.diff import ChangedFile


def file_span(raw: str, d: Diagnostic, rows: dict[int, list[int]] | None = None) -> tuple[int, int] | None:
    """The lines of the .ipynb file that the finding's cell rows are on."""
    rows = source_file_rows(raw) if rows is None else rows
    lines = rows.get(d.cell or 0)
    if not lines:
        return None
    first = lines[min(max(d.location.row, 1), len(lines)) - 1]
    last = lines[min(max(d.end_location.row, d.location.row, 1), len(lines)) - 1]
    return first, max(first, last)


def changed_lines(raw: str, d: Diagnostic, changed: ChangedFile, rows: dict[int, list[int]]) -> list[int]:
    span = file_span(raw, d, rows)
    return changed.changed_in(*span) if span else []


def cell_fix_diff(path: str, raw: str, d: Diagnostic, cell: int) -> str:
    """The fix's edits to one cell, as a unified diff of that cell."""
    before = cell_text(raw, cell) or ""
    edits = [e for e in d.fix.edits if (e.cell or d.cell) == cell]
    after = apply_edits(before, edits)
    path = printable(path)  # its header on one line
    lines = difflib.unified_diff(split_lines(before), split_lines(after), f"a/{path}:cell {cell}",
                                 f"b/{path}:cell {cell}", n=1)
    return "".join(l if l.endswith("\n") else l + "\n\\ No newline at end of cell\n" for l in lines)


def build_notebook_comment(d: Diagnostic, path: str, raw: str, changed: ChangedFile,
                           rows: dict[int, list[int]], evidence: str | None = None) -> ReviewComment:
    anchor = changed_lines(raw, d, changed, rows)[0]
    parts = [_headline(d), f"In cell {d.cell}, line {d.location.row} (column {d.location.column})."]
    if d.fix is not None and d.fix.edits:
        parts.append(_fix_note(d))
        for cell in sorted({e.cell or d.cell for e in d.fix.edits}):
            parts.append(fence(cell_fix_diff(path, raw, d, cell), "diff"))
    if evidence:
        parts.append(f"Measured by `jaxfuse-lint verify`: {evidence}")
    return ReviewComment(path=path, line=anchor, body="\n\n".join(parts), diagnostic=d, evidence=evidence)


def safe_fix_diff(path: str, raw: str, diagnostics: list[Diagnostic]) -> str:
    """What `--fix` would do to the reported findings of a notebook, cell by cell."""
    edits_by_cell: dict[int, list] = {}
    taken: dict[int, list[tuple[int, int]]] = {}
    for d in diagnostics:
        if d.fix is None or d.fix.applicability is not Applicability.SAFE or not d.fix.edits:
            continue
        spans = [((e.cell or d.cell), e.location.row, e.end_location.row) for e in d.fix.edits]
        if any(not (hi < a or b < lo) for c, lo, hi in spans for a, b in taken.get(c, [])):
            continue
        for e, (c, lo, hi) in zip(d.fix.edits, spans):
            taken.setdefault(c, []).append((lo, hi))
            edits_by_cell.setdefault(c, []).append(e)
    out = []
    for cell, edits in sorted(edits_by_cell.items()):
        before = cell_text(raw, cell) or ""
        after = apply_edits(before, edits)
        lines = difflib.unified_diff(split_lines(before), split_lines(after), f"a/{path}:cell {cell}",
                                     f"b/{path}:cell {cell}", n=2)
        out.append("".join(l if l.endswith("\n") else l + "\n" for l in lines))
    return "".join(out)
