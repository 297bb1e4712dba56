"""GitHub Actions workflow commands: one `::warning file=...,line=...::message` per diagnostic.

The runner turns each into an annotation on the file and line. Paths are made
relative to $GITHUB_WORKSPACE (the repository root on the runner) when set.
Columns go only on single-line ranges: GitHub refuses `col`/`endColumn` on an
annotation whose `line` and `endLine` differ. Property values escape `%`, CR,
LF, `:` and `,`; the message escapes `%`, CR and LF (the runner's own rules).
GitHub shows at most 10 warning annotations per step; `review` posts fixes as
pull-request suggestions instead.
"""
from __future__ import annotations

import os

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.paths import display_path
from jaxfuse_lint.report.rules import SYNTAX_ERROR


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(d: Diagnostic, context: ReportContext) -> str:
    root = context.root or os.environ.get("GITHUB_WORKSPACE") or None
    path = display_path(d.filename, root).replace(os.sep, "/")
    props = [("file", path), ("line", str(d.location.row))]
    end = d.end_location if d.end_location >= d.location else d.location
    if end.row == d.location.row:
        props.append(("col", str(d.location.column)))
        props += [("endLine", str(end.row)), ("endColumn", str(max(end.column, d.location.column)))]
    else:
        props.append(("endLine", str(end.row)))
    props.append(("title", d.code))
    message = f"{d.code} {d.message}"
    if d.fix is not None:
        if d.fix.applicability is Applicability.SAFE:
            message += f"\nfix available: {d.fix.message} (jaxfuse-lint --fix)"
        else:  # `--fix` alone does not apply it
            message += (f"\n{d.fix.applicability.value} fix available: {d.fix.described} "
                        f"(jaxfuse-lint --fix --unsafe-fixes; review it)")
    if d.url and d.code != SYNTAX_ERROR:
        message += f"\n{d.url}"
    level = {"error": "error", "warning": "warning", "note": "notice"}[context.level(d.code)]
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{level} {joined}::{escape_data(message)}"


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    from jaxfuse_lint.report.notebooks import file_located

    diagnostics = file_located(diagnostics, context.sources)  # notebooks: lines of the .ipynb file
    return "".join(command(d, context) + "\n" for d in diagnostics)
