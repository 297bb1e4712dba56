"""Notebooks in output: a cell's text, `--diff` per cell, and the lines of the .ipynb file
that hold a cell's rows (for formats and hosts that open the file itself)."""
from __future__ import annotations

import difflib

from jaxfuse_lint.core.diagnostics import Diagnostic, Location
from jaxfuse_lint.core.lines import split_lines
from jaxfuse_lint.parse.notebook import cell_outline, cells_of, source_text


def cell_text(raw: str, number: int) -> str | None:
    """Cell `number`'s source in a notebook's text (None if it cannot be read)."""
    try:
        return source_text(cells_of(raw)[number - 1])
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


def unified_diff(original: str, fixed: str, filename: str) -> str:
    """ruff's `--diff` for notebooks: one unified diff per changed cell, headed
    `--- a/nb.ipynb:cell N` / `+++ b/nb.ipynb:cell N`."""
    try:
        before = cells_of(original)
        after = cells_of(fixed)
    except ValueError:
        return ""
    out = []
    for number, (a, b) in enumerate(zip(before, after), 1):
        sa, sb = source_text(a), source_text(b)
        if sa == sb:
            continue
        la, lb = split_lines(sa), split_lines(sb)
        if la and not la[-1].endswith("\n"):
            la[-1] += "\n"
        if lb and not lb[-1].endswith("\n"):
            lb[-1] += "\n"
        out.append("".join(difflib.unified_diff(la, lb, f"a/{filename}:cell {number}", f"b/{filename}:cell {number}")))
    return "".join(out)


def source_file_rows(raw: str) -> dict[int, list[int]]:
    """Cell number -> the line of the .ipynb file each row of the cell's source is on
    (where an editor or a code host opens the file). A source stored as one string is
    on one line; cells whose source cannot be found are left out."""
    from jaxfuse_lint.parse.json_splice import SpliceError, elements

    try:
        cells, spans = cell_outline(raw)
    except ValueError:
        return {}
    line, counted = 1, 0  # the line of offset `counted` (offsets are asked in increasing order)

    def line_of(offset: int) -> int:
        nonlocal line, counted
        line += raw.count("\n", counted, offset)
        counted = offset
        return line

    out: dict[int, list[int]] = {}
    for number, (cell, span) in enumerate(zip(cells, spans), 1):
        source = cell.get("source") if isinstance(cell, dict) else None
        if source is None or span is None:
            continue
        if isinstance(source, str):
            out[number] = [line_of(span[0])] * max(1, len(split_lines(source)))
            continue
        try:
            out[number] = [line_of(start) for start, _ in elements(raw, span[0])]
        except SpliceError:
            continue
    return out


def file_located(diagnostics: list[Diagnostic], sources: dict[str, str]) -> list[Diagnostic]:
    """For formats that point into files (SARIF, GitHub and GitLab annotations, rdjson):
    notebook diagnostics located on the lines of the .ipynb file that hold their cell rows
    (a place a viewer can open), the cell named in the message. Their fixes, which edit
    cell text rather than the file's JSON, are left out there. Other diagnostics pass as
    they are."""
    import dataclasses

    if not any(d.cell is not None for d in diagnostics):
        return diagnostics
    rows_of: dict[str, dict[int, list[int]]] = {}
    out = []
    for d in diagnostics:
        if d.cell is None:
            out.append(d)
            continue
        raw = sources.get(d.filename)
        if raw is not None and d.filename not in rows_of:
            rows_of[d.filename] = source_file_rows(raw)
        lines = rows_of.get(d.filename, {}).get(d.cell)
        where = f"cell {d.cell}:{d.location.row}:{d.location.column}: "
        if lines:
            first = lines[min(max(d.location.row, 1), len(lines)) - 1]
            last = lines[min(max(d.end_location.row, d.location.row, 1), len(lines)) - 1]
            last = max(first, last)
            text = split_lines(raw)[last - 1].rstrip("\r\n")
            start, end = Location(first, 1), Location(last, len(text) + 1)  # whole lines of the file
        else:
            start = end = Location(1, 1)
        out.append(dataclasses.replace(d, message=where + d.message, location=start, end_location=end,
                                       fix=None, noqa_row=None, cell=None))
    return out
