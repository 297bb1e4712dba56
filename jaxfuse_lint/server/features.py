"""What the language server computes: LSP diagnostics, code actions and hover text.

Pure functions of the document text and jaxfuse-lint's diagnostics, in
lsprotocol types; `server.py` wires them to pygls.
"""
from __future__ import annotations

from typing import Callable, Iterable

from lsprotocol import types

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Edit, Location
from jaxfuse_lint.report.rules import rule_info
from jaxfuse_lint.server.positions import UTF16, document_lines, from_lsp, to_lsp

SOURCE = "jaxfuse-lint"
FIX_ALL_KIND = "source.fixAll.jaxfuse-lint"


def lsp_range(lines: list[str], start: Location, end: Location, encoding: str = UTF16) -> types.Range:
    s_line, s_char = to_lsp(lines, start.row, start.column, encoding)
    e_line, e_char = to_lsp(lines, end.row, end.column, encoding)
    return types.Range(types.Position(s_line, s_char), types.Position(e_line, e_char))


_LSP_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
                 "note": types.DiagnosticSeverity.Information}


def lsp_diagnostic(d: Diagnostic, lines: list[str], encoding: str = UTF16,
                   severity: tuple[tuple[str, str], ...] = ()) -> types.Diagnostic:
    """`severity`: the project's `[tool.jaxfuse-lint.severity]` (core/severity.py)."""
    from jaxfuse_lint.core.severity import level

    info = rule_info(d.code, d.name)
    fixable = d.fix is not None and bool(d.fix.edits)
    return types.Diagnostic(
        range=lsp_range(lines, d.location, max(d.end_location, d.location), encoding),
        message=d.message,
        severity=_LSP_SEVERITY[level(d.code, severity)],
        code=d.code,
        code_description=types.CodeDescription(href=info.url) if info.url else None,
        source=SOURCE,
        data={"name": info.name, "fixable": fixable,
              "row": d.location.row, "column": d.location.column},
    )


def text_edits(edits: Iterable[Edit], lines: list[str], encoding: str = UTF16) -> list[types.TextEdit]:
    return [types.TextEdit(range=lsp_range(lines, e.location, e.end_location, encoding), new_text=e.content)
            for e in edits]


def line_edits(before: str, after: str) -> list[Edit]:
    """Whole-line edits turning `before` into `after` (lines split as editors split them)."""
    import difflib

    a, b = document_lines(before), document_lines(after)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append(Edit("".join(b[j1:j2]), Location(i1 + 1, 1), Location(i2 + 1, 1)))
    return edits


def _overlaps(a: types.Range, b: types.Range) -> bool:
    a0, a1 = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b0, b1 = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a0 <= b1 and b0 <= a1


def _wanted(kind: str, only: list[str] | None) -> bool:
    """LSP `only`: a kind is wanted when it equals or refines one of the listed kinds."""
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in only)


def wants_fix_all(diagnostics: list[Diagnostic], only: list[str] | None) -> bool:
    """Whether a fix-all action is asked for and may change something (a safe fix exists): only
    then are the fixes computed."""
    return _wanted(FIX_ALL_KIND, only) and any(
        d.fix is not None and d.fix.applicability is Applicability.SAFE for d in diagnostics)


def _workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=edits,
    )])


def code_actions(
    uri: str,
    version: int | None,
    text: str,
    diagnostics: list[Diagnostic],
    request_range: types.Range,
    only: list[str] | None,
    fix_all: Callable[[], str | None] | None,
    encoding: str = UTF16,
) -> list[types.CodeAction]:
    """A quick fix per fixable diagnostic in the range, and a fix-all source action.

    `fix_all()` returns the text with every safe fix applied (the engine's
    `fix_source`); it is called only when a fix-all action is wanted (`wants_fix_all`: the
    server computes it off the message loop beforehand).
    """
    lines = document_lines(text)
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        for d in diagnostics:
            if d.fix is None or not d.fix.edits:
                continue
            lsp_diag = lsp_diagnostic(d, lines, encoding)
            if not _overlaps(lsp_diag.range, request_range):
                continue
            safe = d.fix.applicability is Applicability.SAFE
            title = f"{d.code}: {d.fix.message}" + ("" if safe else f" ({d.fix.applicability.value} fix)")
            actions.append(types.CodeAction(
                title=title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[lsp_diag],
                is_preferred=safe,
                edit=_workspace_edit(uri, version, text_edits(d.fix.edits, lines, encoding)),
            ))
    if fix_all is not None and wants_fix_all(diagnostics, only):
        fixed = fix_all()
        if fixed is not None and fixed != text:
            actions.append(types.CodeAction(
                title="jaxfuse-lint: fix all safely fixable problems",
                kind=FIX_ALL_KIND,
                edit=_workspace_edit(uri, version, text_edits(line_edits(text, fixed), lines, encoding)),
            ))
    return actions


def hover_markdown(text: str, diagnostics: list[Diagnostic], position: types.Position,
                   encoding: str = UTF16) -> str | None:
    """The rule documentation of every diagnostic under the cursor."""
    lines = document_lines(text)
    row, column = from_lsp(lines, position.line, position.character, encoding)
    here = Location(row, column)
    docs: list[str] = []
    for d in diagnostics:
        end = max(d.end_location, d.location)
        inside = d.location <= here < end or (d.location == end == here)
        if not inside:
            continue
        if d.fix is not None and d.fix.detail:  # the quick fix's title is one line; here is why
            note = f"**{d.code} {d.fix.applicability.value} fix:** {d.fix.message}. {d.fix.detail}"
            if note not in docs:
                docs.append(note)
        info = rule_info(d.code, d.name)
        doc = info.documentation.strip()
        if info.url:
            doc += f"\n\n[Documentation]({info.url})"
        if doc not in docs:
            docs.append(doc)
    return "\n\n---\n\n".join(docs) if docs else None
