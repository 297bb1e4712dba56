"""Pylint's parseable format, as ruff writes it: `path:row: [CODE] message` (no column),
for tools that read pylint output (Jenkins' warnings plugin, some editors)."""
from __future__ import annotations

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.paths import display_path


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    lines = [f"{display_path(d.filename, context.root)}:{d.location.row}: [{d.code}] {d.message}" for d in diagnostics]
    return "\n".join(lines) + ("\n" if lines else "")
