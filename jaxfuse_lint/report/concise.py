"""`path:row:col: CODE message` — one line per diagnostic, as flake8 and ruff print them."""
from __future__ import annotations

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.paths import display_path


def fix_marker(d: Diagnostic, context: ReportContext) -> str:
    if d.fix is None:
        return ""
    if d.fix.applicability is Applicability.SAFE or (context.unsafe_fixes and d.fix.applicability is Applicability.UNSAFE):
        return "[" + _style("*", context, fg="cyan") + "] "
    return ""


def _style(text: str, context: ReportContext, **style) -> str:
    """ANSI colour only when the command line asked for it (a terminal, FORCE_COLOR; see output.py)."""
    if not context.color:
        return text
    import click

    return click.style(text, **style)


def header(d: Diagnostic, context: ReportContext) -> str:
    """`path:row:col: CODE [*] message`, ruff's colours on a terminal."""
    path = display_path(d.filename, context.root)
    if d.cell is not None:  # ruff's notation for a notebook cell
        path += f":cell {d.cell}"
    where = (_style(path, context, bold=True) + _style(":", context, fg="cyan") + str(d.location.row)
             + _style(":", context, fg="cyan") + str(d.location.column) + _style(":", context, fg="cyan"))
    return f"{where} {_style(d.code, context, fg='red', bold=True)} {fix_marker(d, context)}{d.message}"


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    lines = [header(d, context) for d in diagnostics]
    return "\n".join(lines) + ("\n" if lines else "")
