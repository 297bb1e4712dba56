"""Message, the source lines with the range marked, and the fix as a diff (ruff's `full`)."""
from __future__ import annotations

import difflib
import textwrap
from dataclasses import replace

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.concise import header
from jaxfuse_lint.core.edits import apply_edits, split_lines


def _excerpt(d: Diagnostic, lines: list[str]) -> list[str]:
    out = []
    first, last = d.location.row, max(d.end_location.row, d.location.row)
    last = min(last, first + 5)
    width = len(str(last + 1))
    for row in range(max(1, first - 1), min(len(lines), last + 1) + 1):
        text = lines[row - 1].rstrip("\r\n")
        out.append(f" {row:>{width}} | {text}")
        if first <= row <= last:
            start = d.location.column if row == first else 1
            end = d.end_location.column if row == d.end_location.row else len(text) + 1
            end = max(end, start + 1)
            out.append(f" {'':>{width}} | {' ' * (start - 1)}{'^' * (end - start)}")
    return out


def _fix_diff(d: Diagnostic, source: str) -> list[str]:
    if d.fix is None:
        return []
    lines = split_lines(source)
    new = split_lines(apply_edits(source, d.fix.edits))
    diff = difflib.unified_diff(lines, new, "before", "after", n=1)
    body = [l.rstrip("\r\n") for l in list(diff)[2:]]
    head = [f"  {d.fix.applicability.value} fix: {d.fix.message}"]
    if d.fix.detail:  # why it is (un)safe, and what would make it safe
        head += textwrap.wrap(d.fix.detail, 100, initial_indent="    ", subsequent_indent="    ",
                              break_long_words=False, break_on_hyphens=False)
    return head + ["    " + l for l in body]


def _premises(d: Diagnostic) -> list[str]:
    """What the finding rests on, one premise a line: `  proven  traced(`x`): value-flow: ...`."""
    return [f"  {p.status:<9} {p.premise}" + (f": {p.source}" if p.source else "") for p in d.premises]


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    blocks = []
    for d in diagnostics:
        source = context.sources.get(d.filename)
        if d.cell is not None:  # a notebook: rows count in the cell, the excerpt is the cell's
            from jaxfuse_lint.report.notebooks import cell_text

            source = cell_text(source, d.cell) if source is not None else None
            if d.fix is not None:  # show what the fix does to this cell
                d = replace(d, fix=replace(d.fix, edits=tuple(e for e in d.fix.edits if e.cell in (None, d.cell))))
        block = [header(d, context)]
        block += _premises(d)
        if source is not None:
            block += _excerpt(d, split_lines(source))
            block += _fix_diff(d, source)
        if d.url:
            block.append(f"  = help: {d.url}")
        blocks.append("\n".join(block))
    return "\n\n".join(blocks) + ("\n" if blocks else "")
