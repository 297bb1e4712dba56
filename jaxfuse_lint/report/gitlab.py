"""GitLab Code Quality report (a Code Climate subset): a JSON array of issues.

GitLab requires `description`, `check_name`, `fingerprint`, `severity` and
`location.path` with `location.lines.begin`; paths are relative to the
project root ($CI_PROJECT_DIR in a pipeline). The fingerprint hashes the path,
the code, the message and the flagged source text (not the line number), so an
issue keeps its identity when lines above it move; identical issues in one
file are told apart by their order.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.core.edits import source_line
from jaxfuse_lint.report.paths import display_path
from jaxfuse_lint.report.rules import SYNTAX_ERROR


def _fingerprint(path: str, d: Diagnostic, text: str, occurrence: int) -> str:
    key = "\0".join((path, d.code, d.message, text.strip(), str(occurrence)))
    return hashlib.md5(key.encode("utf-8", "surrogatepass"), usedforsecurity=False).hexdigest()


def build(diagnostics: list[Diagnostic], context: ReportContext) -> list[dict]:
    root = context.root or os.environ.get("CI_PROJECT_DIR") or None
    seen: Counter = Counter()
    issues = []
    for d in diagnostics:
        path = display_path(d.filename, root).replace(os.sep, "/")
        text = source_line(context.sources.get(d.filename), d.location.row)
        base = (path, d.code, d.message, text.strip())
        occurrence = seen[base]
        seen[base] += 1
        issues.append({
            "type": "issue",
            "check_name": d.code,
            "description": f"{d.code} {d.message}",
            "content": {"body": f"[{d.code}]({d.url})" if d.url and d.code != SYNTAX_ERROR else d.message},
            "categories": ["Bug Risk"] if d.code == SYNTAX_ERROR else ["Performance"],
            "severity": {"error": "major", "warning": "minor", "note": "info"}[context.level(d.code)],
            "fingerprint": _fingerprint(path, d, text, occurrence),
            "location": {
                "path": path,
                "lines": {"begin": d.location.row, "end": max(d.end_location.row, d.location.row)},
            },
        })
    return issues


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    from jaxfuse_lint.report.notebooks import file_located

    diagnostics = file_located(diagnostics, context.sources)  # notebooks: lines of the .ipynb file
    return json.dumps(build(diagnostics, context), indent=2, ensure_ascii=False) + "\n"
