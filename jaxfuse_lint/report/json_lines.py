"""One ruff-style JSON object per line (streams well into log processors)."""
from __future__ import annotations

import json

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.json_format import as_json


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    return "".join(json.dumps(as_json(d), ensure_ascii=False) + "\n" for d in diagnostics)
