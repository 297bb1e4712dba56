"""JUnit XML, as ruff writes it: one <testsuite> per file, one failing <testcase> per diagnostic
(`org.jaxfuse_lint.JF101`), and a single passing case when there is nothing to report, so CI
test-report views (GitLab, Jenkins, Azure) show the findings as failed tests."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import groupby
from pathlib import PurePath

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.paths import display_path

PACKAGE = "org.jaxfuse_lint"


def render(diagnostics: list[Diagnostic], context: ReportContext) -> str:
    root = ET.Element("testsuites", name="jaxfuse-lint", tests=str(max(len(diagnostics), 1)),
                      failures=str(len(diagnostics)), errors="0")
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="jaxfuse-lint", tests="1", disabled="0", errors="0",
                              failures="0", package=PACKAGE)
        ET.SubElement(suite, "testcase", name="No errors found", classname="jaxfuse-lint")
    ordered = sorted(diagnostics, key=Diagnostic.sort_key)
    for filename, group in groupby(ordered, key=lambda d: d.filename):
        items = list(group)
        path = display_path(filename, context.root)
        suite = ET.SubElement(root, "testsuite", name=path, tests=str(len(items)), disabled="0", errors="0",
                              failures=str(len(items)), package=PACKAGE)
        pure = PurePath(path)
        classname = str(pure.parent / pure.stem) if str(pure.parent) != "." else pure.stem
        for d in items:
            case = ET.SubElement(suite, "testcase", name=f"{PACKAGE}.{d.code}", classname=classname,
                                 line=str(d.location.row), column=str(d.location.column))
            failure = ET.SubElement(case, "failure", message=d.message, type=context.level(d.code))
            failure.text = f"line {d.location.row}, col {d.location.column}, {d.message}"
    ET.indent(root, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
