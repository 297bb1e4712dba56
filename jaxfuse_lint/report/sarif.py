"""SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

One run; `tool.driver.rules[]` lists every rule (id, name, short and full
description, help text and URL), and each result points at its rule by id and
index. Regions are 1-based with exclusive end columns counted in Unicode code
points (`columnKind: unicodeCodePoints`). A fix becomes `fixes[]` with
whole-line replacements; GitHub code scanning ignores those (`review` is where
fixes reach reviewers), other viewers apply them.
"""
from __future__ import annotations

import json
import re
import os
from pathlib import Path
from urllib.parse import quote

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Location
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.core.edits import split_lines, strip_eol
from jaxfuse_lint.report.rules import INFORMATION_URI, TOOL_NAME, RuleInfo, rule_info, rule_table, tool_version

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"


def _root(context: ReportContext) -> str:
    return os.path.abspath(context.root or os.getcwd())


def artifact_location(filename: str, root: str) -> dict:
    """A relative URI against %SRCROOT% when the file is below the root, else an absolute file URI."""
    if filename in ("-", "<stdin>"):
        return {"uri": "stdin"}
    path = os.path.abspath(filename)
    try:
        rel = os.path.relpath(path, root)
    except ValueError:
        rel = ".."
    if rel.startswith(".."):
        return {"uri": Path(path).as_uri()}  # its bytes percent-encoded, as below
    # A URI's path is bytes, percent-encoded: a name that is not UTF-8 keeps its own (`bad%FF.py`).
    return {"uri": quote(os.fsencode(Path(rel).as_posix())), "uriBaseId": SRCROOT}


def _rule_descriptor(info: RuleInfo, with_help: bool = True, level: str = "warning") -> dict:
    """Every rule is described; the rule's whole page (`help`) only goes with the rules that have
    results in this run (the pages of all rules made a 4-result log 200 KB; `helpUri` links each)."""
    descriptor = {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "fullDescription": {"text": _first_paragraph(info.what_it_does)},
        "defaultConfiguration": {"level": level},
        "properties": {"fixable": info.fixable, "tags": ["jax", "performance"]},
    }
    if with_help:
        text = info.what_it_does + (f" Documentation: {info.url}" if info.url else "")
        descriptor["help"] = {"text": text, "markdown": _without_tables(info.documentation)}
    if info.url:
        descriptor["helpUri"] = info.url
    return descriptor


# The measured tables of a rule's page (its calibration, the GPU timings) and its lists of test cases: long,
# and on the page `helpUri` links; a viewer's help pane gets the rule's own sections.
_TABLE_SECTIONS = re.compile(r"\n## (Calibration|Measured on a GPU|Backends|Test files|Flagged|Not flagged)\b.*?(?=\n## |\Z)",
                             re.S)


def _first_paragraph(text: str, limit: int = 400) -> str:
    """A rule's description in a viewer's list: the first sentence of its "What it does" (the rest
    is in `help` for the rules with results, and on the page `helpUri` links); at most `limit`
    characters, cut at a word."""
    text = " ".join(text.split())
    end = text.find(". ")
    first = text if end < 0 else text[:end + 1]
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + " …"


def _without_tables(markdown: str) -> str:
    return _TABLE_SECTIONS.sub("", markdown)


def _region(start: Location, end: Location) -> dict:
    region = {"startLine": start.row, "startColumn": start.column}
    if end > start:
        region["endLine"] = end.row
        region["endColumn"] = end.column
    return region


def _end_of_edit(lines: list[str] | None, loc: Location) -> Location:
    """An edit's end past the last line of a file without a final newline is its last character."""
    if lines and loc.row > len(lines) and not lines[-1].endswith(("\n", "\r")):
        return Location(len(lines), len(strip_eol(lines[-1])) + 1)
    return loc


def _fixes(d: Diagnostic, artifact: dict, source: str | None) -> list[dict]:
    if d.fix is None:
        return []
    lines = split_lines(source) if source is not None else None
    replacements = []
    for e in d.fix.edits:
        end = _end_of_edit(lines, e.end_location)
        deleted = {"startLine": e.location.row, "startColumn": e.location.column,
                   "endLine": end.row, "endColumn": end.column}
        replacements.append({"deletedRegion": deleted, "insertedContent": {"text": e.content}})
    safety = "" if d.fix.applicability is Applicability.SAFE else f" ({d.fix.applicability.value} fix: review it)"
    return [{
        "description": {"text": d.fix.described + safety},
        "artifactChanges": [{"artifactLocation": dict(artifact), "replacements": replacements}],
    }]


def build(diagnostics: list[Diagnostic], context: ReportContext) -> dict:
    root = _root(context)
    infos = list(rule_table().values())
    known = {i.code for i in infos}
    for d in diagnostics:  # JF000 or a code from elsewhere: its rule must be listed too
        if d.code not in known:
            infos.append(rule_info(d.code, d.name))
            known.add(d.code)
    index = {info.code: i for i, info in enumerate(infos)}
    results = []
    reported = {d.code for d in diagnostics}
    for d in diagnostics:
        artifact = artifact_location(d.filename, root)
        result = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": context.level(d.code),
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {"artifactLocation": artifact,
                                                "region": _region(d.location, d.end_location)}}],
        }
        if d.premises:  # what the finding rests on (model/premises.py)
            result["properties"] = {"premises": [p.to_json() for p in d.premises]}
        if d.extra.get("undecided"):  # `--show-undecided`: a pattern seen but not decided is a note
            result["level"] = "note"
            result.setdefault("properties", {})["undecided"] = True
        fixes = _fixes(d, artifact, context.sources.get(d.filename))
        if fixes:
            result["fixes"] = fixes
        results.append(result)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": TOOL_NAME,
                "version": tool_version(),
                "semanticVersion": tool_version(),
                "informationUri": INFORMATION_URI,
                "rules": [_rule_descriptor(i, i.code in reported, context.level(i.code)) for i in infos],
            }},
            "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    from jaxfuse_lint.report.notebooks import file_located

    diagnostics = file_located(diagnostics, context.sources)  # notebooks: lines of the .ipynb file
    return json.dumps(build(diagnostics, context), indent=2, ensure_ascii=False) + "\n"
