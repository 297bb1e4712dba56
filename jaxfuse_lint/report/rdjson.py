"""reviewdog's diagnostic format (rdjson): `reviewdog -f=rdjson` posts these as review comments.

Positions are 1-based lines and 1-based columns counted in UTF-8 bytes, as
reviewdog's proto defines them; ranges end exclusively. A fix becomes
`suggestions[]`: each whole-line edit replaces lines start..end-1 (from column
1 to column 1 of the line after), which reviewdog turns into a GitHub
```suggestion block when the lines are in the diff.
"""
from __future__ import annotations

import json
import os

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Location
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.core.edits import source_line, utf8_column
from jaxfuse_lint.report.paths import display_path
from jaxfuse_lint.report.rules import INFORMATION_URI, SYNTAX_ERROR, TOOL_NAME


def _position(loc: Location, source: str | None) -> dict:
    column = utf8_column(source_line(source, loc.row), loc.column) if source is not None else loc.column
    return {"line": loc.row, "column": column}


def diagnostic(d: Diagnostic, context: ReportContext) -> dict:
    source = context.sources.get(d.filename)
    path = display_path(d.filename, context.root).replace(os.sep, "/")
    severity = {"error": "ERROR", "warning": "WARNING", "note": "INFO"}[context.level(d.code)]
    out: dict = {
        "message": d.message,
        "location": {"path": path, "range": {"start": _position(d.location, source),
                                              "end": _position(max(d.end_location, d.location), source)}},
        "severity": severity,
        "code": {"value": d.code, **({"url": d.url} if d.url and d.code != SYNTAX_ERROR else {})},
        "original_output": f"{path}:{d.location.row}:{d.location.column}: {d.code} {d.message}",
    }
    if d.fix is not None:
        # Whole-line edits: column 1 is column 1 in bytes too.
        out["suggestions"] = [
            {"range": {"start": _position(e.location, source), "end": _position(e.end_location, source)},
             "text": e.content}
            for e in d.fix.edits
        ]
        if d.fix.applicability is not Applicability.SAFE:
            out["message"] += f" ({d.fix.applicability.value} fix: {d.fix.described}; review it)"
    return out


def build(diagnostics: list[Diagnostic], context: ReportContext) -> dict:
    return {
        "source": {"name": TOOL_NAME, "url": INFORMATION_URI},
        "severity": "WARNING",
        "diagnostics": [diagnostic(d, context) for d in diagnostics],
    }


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    from jaxfuse_lint.report.notebooks import file_located

    diagnostics = file_located(diagnostics, context.sources)  # notebooks: lines of the .ipynb file
    return json.dumps(build(diagnostics, context), indent=2, ensure_ascii=False) + "\n"
