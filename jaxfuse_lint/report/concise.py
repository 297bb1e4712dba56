"""`path:row:col: CODE message` — one line per diagnostic, as flake8 and ruff print them."""
from __future__ import annotations

from jaxfuse_lint.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.paths import display_path


def fix_marker(d: Diagnostic, context: ReportContext) -> str:
    if d.fix is None:
        return ""
    if d.fix.applicability is Applicability.SAFE or (context.unsafe_fixes and d.fix.applicability is Applicability.UNSAFE):
        return "[*] "
    return ""


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    lines = []
    for d in diagnostics:
        path = display_path(d.filename, context.root)
        if d.cell is not None:  # ruff's notation for a notebook cell
            path += f":cell {d.cell}"
        lines.append(f"{path}:{d.location.row}:{d.location.column}: {d.code} {fix_marker(d, context)}{d.message}")
    return "\n".join(lines) + ("\n" if lines else "")
