"""Notebooks in the language server (LSP notebook document sync).

An editor that syncs notebooks (VS Code, JupyterLab's LSP extension) opens a
`jupyter-notebook` document whose cells are text documents of their own
(`vscode-notebook-cell:` URIs). The notebook is checked as a whole — the cells
are put back into a notebook and go through the same `check_source` as a
`.ipynb` file, so cross-cell analysis and magics behave as on the command line —
and diagnostics are published on each cell's document. Quick fixes are offered
on a cell; a fix whose edits reach another cell (an import added to the first
cell) edits that cell's document too.

Pure functions of the cells' texts and jaxfuse-lint's diagnostics; `server.py`
wires them to pygls.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

from lsprotocol import types

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.server.features import (
    FIX_ALL_KIND,
    _overlaps,
    _wanted,
    line_edits,
    lsp_diagnostic,
    text_edits,
    wants_fix_all,
)
from jaxfuse_lint.server.positions import UTF16, document_lines

NOTEBOOK_TYPE = "jupyter-notebook"


def sync_options() -> types.NotebookDocumentSyncOptions:
    """What the server advertises: Jupyter notebooks, their Python cells, and saves."""
    return types.NotebookDocumentSyncOptions(
        notebook_selector=[types.NotebookDocumentFilterWithCells(
            notebook=NOTEBOOK_TYPE, cells=[types.NotebookCellLanguage(language="python")])],
        save=True,
    )


@dataclass
class CellText:
    uri: str
    version: int | None
    text: str
    code: bool  # a Python code cell (markup cells and cells in other languages are not)


def notebook_json(cells: list[CellText], language: str = "python") -> str:
    """The cells as an nbformat 4 notebook (what `check_source` reads for a `.ipynb`)."""
    return json.dumps({
        "cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c.text}
            if c.code else {"cell_type": "markdown", "metadata": {}, "source": c.text}
            for c in cells
        ],
        "metadata": {"language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })


def by_cell(cells: list[CellText], diagnostics: list[Diagnostic]) -> dict[str, list[Diagnostic]]:
    """Cell URI -> its diagnostics (every code cell has an entry, so stale ones get cleared).
    A diagnostic about the whole notebook (no cell) goes on the first code cell."""
    out: dict[str, list[Diagnostic]] = {c.uri: [] for c in cells if c.code}
    first = next((c.uri for c in cells if c.code), None)
    for d in diagnostics:
        if d.cell is not None and 1 <= d.cell <= len(cells) and cells[d.cell - 1].code:
            out[cells[d.cell - 1].uri].append(d)
        elif first is not None:
            out[first].append(d)
    return out


def _cell_edits(cells: list[CellText], d: Diagnostic, encoding: str) -> list[types.TextDocumentEdit] | None:
    grouped: dict[int, list] = {}
    for e in d.fix.edits:
        number = e.cell or d.cell
        if number is None or not 1 <= number <= len(cells):
            return None
        grouped.setdefault(number, []).append(e)
    changes = []
    for number, edits in sorted(grouped.items()):
        cell = cells[number - 1]
        changes.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=cell.uri, version=cell.version),
            edits=text_edits(edits, document_lines(cell.text), encoding)))
    return changes


def code_actions(
    cell_uri: str,
    cells: list[CellText],
    diagnostics: list[Diagnostic],
    request_range: types.Range,
    only: list[str] | None,
    fix_all: Callable[[], dict[int, str] | None] | None,
    encoding: str = UTF16,
) -> list[types.CodeAction]:
    """Quick fixes for the diagnostics of one cell in the range, and a fix-all for the notebook.

    `fix_all()` returns cell number -> text for the cells every safe fix changes (called only
    when `wants_fix_all`)."""
    cell = next((c for c in cells if c.uri == cell_uri), None)
    if cell is None:
        return []
    lines = document_lines(cell.text)
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for d in diagnostics:
            if d.fix is None or not d.fix.edits:
                continue
            lsp_diag = lsp_diagnostic(d, lines, encoding)
            if not _overlaps(lsp_diag.range, request_range):
                continue
            changes = _cell_edits(cells, d, encoding)
            if changes is None:
                continue
            safe = d.fix.applicability is Applicability.SAFE
            title = f"{d.code}: {d.fix.message}" + ("" if safe else f" ({d.fix.applicability.value} fix)")
            actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diag],
                                            is_preferred=safe, edit=types.WorkspaceEdit(document_changes=changes)))
    if fix_all is not None and wants_fix_all(diagnostics, only):
        fixed = fix_all()
        changes = []
        for number, text in sorted((fixed or {}).items()):
            target = cells[number - 1]
            if text == target.text:
                continue
            changes.append(types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=target.uri, version=target.version),
                edits=text_edits(line_edits(target.text, text), document_lines(target.text), encoding)))
        if changes:
            actions.append(types.CodeAction(title="jaxfuse-lint: fix all safely fixable problems", kind=FIX_ALL_KIND,
                                            edit=types.WorkspaceEdit(document_changes=changes)))
    return actions


def fixed_cells(source_json: str, fixed_json: str) -> dict[int, str]:
    """Cell number -> new text, for the cells a fix changed."""
    from jaxfuse_lint.parse.notebook import source_text

    before = json.loads(source_json)["cells"]
    after = json.loads(fixed_json)["cells"]
    return {i: source_text(b) for i, (a, b) in enumerate(zip(before, after), 1) if source_text(a) != source_text(b)}
