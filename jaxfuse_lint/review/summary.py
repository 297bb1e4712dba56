"""The Markdown summary of a review: the review's body, or a job summary ($GITHUB_STEP_SUMMARY)."""
from __future__ import annotations

import difflib
from collections import Counter

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.core.edits import apply_edits, fix_line_span, split_lines
from jaxfuse_lint.report.paths import printable
from jaxfuse_lint.report.rules import rule_info
from jaxfuse_lint.review.comments import fence
from jaxfuse_lint.review.results import FileReview, Review


def _plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n} {word}"
    return f"{n} {word}{'es' if word.endswith(('x', 's', 'sh', 'ch')) else 's'}"


def _safe_fix_diff(f: FileReview) -> str:
    """What `--fix` would do to this file's reported findings: their safe fixes, non-overlapping."""
    if f.path.lower().endswith(".ipynb"):
        from jaxfuse_lint.review.notebooks import safe_fix_diff

        return safe_fix_diff(printable(f.path), f.source, f.diagnostics)
    n_lines = len(split_lines(f.source))
    taken: list[tuple[int, int]] = []
    edits = []
    for d in f.diagnostics:
        if d.fix is None or d.fix.applicability is not Applicability.SAFE or not d.fix.edits:
            continue
        lo, hi = fix_line_span(d.fix, n_lines)
        if any(not (hi < a or b < lo) for a, b in taken):
            continue  # overlaps a fix already taken; --fix would apply it on a later pass
        taken.append((lo, hi))
        edits.extend(d.fix.edits)
    if not edits:
        return ""
    after = apply_edits(f.source, edits)
    path = printable(f.path)
    lines = difflib.unified_diff(split_lines(f.source), split_lines(after), f"a/{path}", f"b/{path}", n=2)
    return "".join(l if l.endswith("\n") else l + "\n" for l in lines)


def _where(d: Diagnostic) -> str:
    name = printable(d.filename)
    return f"{name}:cell {d.cell}:{d.location.row}" if d.cell is not None else f"{name}:{d.location.row}"


def render_summary(review: Review) -> str:
    diagnostics: list[Diagnostic] = review.diagnostics
    n_files = len(review.files)
    out = [f"### jaxfuse-lint: {_plural(len(diagnostics), 'finding')} on the lines this pull request changes", ""]
    if not diagnostics:
        out.append(f"Checked the changed lines of {_plural(n_files, 'Python file')} against "
                   f"`{review.base}` ({review.base_sha[:12]}): nothing to report.")
        out += [""] + [f"> {e}" for e in review.errors + review.notes]
        return "\n".join(out).rstrip() + "\n"
    counts = Counter(d.code for d in diagnostics)
    safe = Counter(d.code for d in diagnostics if d.fix and d.fix.applicability is Applicability.SAFE)
    unsafe = Counter(d.code for d in diagnostics if d.fix and d.fix.applicability is not Applicability.SAFE)
    out += ["| Rule | Name | Findings | Safe fixes | Unsafe fixes |", "| --- | --- | ---: | ---: | ---: |"]
    for code in sorted(counts):
        info = rule_info(code)
        link = f"[{code}]({info.url})" if info.url else code
        out.append(f"| {link} | `{info.name}` | {counts[code]} | {safe[code]} | {unsafe[code]} |")
    out.append("")
    suggested = sum(1 for c in review.comments if c.suggested)
    out.append(f"{_plural(len(review.comments), 'review comment')}, {suggested} with a suggested change. "
               f"Compared `{review.base}` ({review.base_sha[:12]}) with {review.head_sha[:12]}.")
    out.append("")
    fixable = [d for d in diagnostics if d.fix is not None]
    if fixable:
        n_safe, n_unsafe = sum(safe.values()), sum(unsafe.values())
        line = f"**What `jaxfuse-lint --fix` would change:** {_plural(n_safe, 'safe fix')}"
        if n_unsafe:
            line += f"; {n_unsafe} more with `--fix --unsafe-fixes` (they may change results: review them)"
        out += [line + ".", ""]
        for d in fixable:
            kind = "safe" if d.fix.applicability is Applicability.SAFE else d.fix.applicability.value
            out.append(f"- `{_where(d)}` {d.code} ({kind}): {d.fix.message}")
        out.append("")
        for f in review.files:
            diff = _safe_fix_diff(f)
            if diff:
                out += [f"<details><summary>Safe fixes in <code>{printable(f.path)}</code></summary>", "",
                        fence(diff, "diff"), "", "</details>", ""]
    else:
        out += ["No finding has an automatic fix.", ""]
    evidence = [c for c in review.comments if c.evidence]
    if evidence:
        out += ["**Measured** (`jaxfuse-lint verify`, which compiles both versions):", ""]
        for c in evidence:
            d = c.diagnostic
            out.append(f"- `{_where(d)}` {d.code}: {c.evidence}")
        out.append("")
    for e in review.errors + review.notes:
        out.append(f"> {e}")
    return "\n".join(out).rstrip() + "\n"
