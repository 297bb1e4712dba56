"""`--statistics`: one row per rule code, as ruff prints it (flake8's layout).

Text: `count<TAB>code<TAB>[*] name`, most frequent first, then the summary lines. The
marker, shown only when some rule has a fix that `--fix` would apply: `[*]` every
diagnostic of the rule has one, `[-]` some have, `[ ]` none has. An unsafe fix counts only
with `--unsafe-fixes` (ruff's rule: without it, an unsafe-only rule is `[ ]`, and the
summary says how many unsafe fixes are held back).

JSON (`--output-format json`): a list of {code, name, count, fixable, fixable_count},
ruff's keys; `fixable` is true when every diagnostic of the code has an applicable fix.
"""
from __future__ import annotations

import json
from collections import Counter

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.report import ReportContext
from jaxfuse_lint.report.summary import summary_text


def applicable(d: Diagnostic, unsafe: bool) -> bool:
    if d.fix is None:
        return False
    return d.fix.applicability is Applicability.SAFE or (unsafe and d.fix.applicability is Applicability.UNSAFE)


def statistics(diagnostics: list[Diagnostic], unsafe: bool) -> list[dict]:
    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if applicable(d, unsafe))
    names = {}
    for d in diagnostics:
        names.setdefault(d.code, d.name or d.code.lower())
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rows.append({"code": code, "name": names[code], "count": n,
                     "fixable": fixable[code] == n, "fixable_count": fixable[code]})
    return rows


def render_statistics(diagnostics: list[Diagnostic], context: ReportContext, *, json_format: bool) -> str:
    rows = statistics(diagnostics, context.unsafe_fixes)
    if json_format:
        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return ""
    count_w = max(len(str(r["count"])) for r in rows)
    code_w = max(len(r["code"]) for r in rows)
    any_fixable = any(r["fixable_count"] for r in rows)
    paint = _painter(context.color)
    lines = []
    for r in rows:
        mark = ""
        if any_fixable:
            mark = ("[" + paint("*", "cyan") + "] " if r["fixable"]
                    else "[" + paint("-", "cyan") + "] " if r["fixable_count"] else "[ ] ")
        lines.append(f"{paint(str(r['count']).rjust(count_w), 'bold')}\t{paint(r['code'].ljust(code_w), 'red')}\t"
                     f"{mark}{r['name']}")
    # The total, and what --fix would do: the same lines as the check's own summary.
    lines.append(summary_text(diagnostics, context.unsafe_fixes, unchecked=context.unchecked))
    return "\n".join(lines) + "\n"


def _painter(color: bool):
    import click

    def paint(text: str, style: str) -> str:
        if not color:
            return text
        if style == "bold":
            return click.style(text, bold=True)
        return click.style(text, fg=style, bold=style == "red")

    return paint
