"""ruff's JSON output: a list of diagnostics with code, message, locations, fix, noqa_row and url."""
from __future__ import annotations

import json
import os

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.paths import printable


def as_json(d: Diagnostic) -> dict:
    data = d.to_json()
    # ruff reports absolute paths; so do we, so consumers can open them from anywhere (a name
    # that is not UTF-8 has its bytes escaped: JSON text cannot hold them).
    if d.filename not in ("-", "<stdin>"):
        data["filename"] = printable(os.path.abspath(d.filename))
    if d.extra.get("undecided"):  # `--show-undecided`: a pattern seen but not decided (a note)
        data["undecided"] = True
    return data


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    return json.dumps([as_json(d) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
