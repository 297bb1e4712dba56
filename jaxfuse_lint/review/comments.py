"""One pull-request review comment per finding, with the fix as a ```suggestion when it fits.

GitHub applies a suggestion by replacing exactly the commented lines
(`start_line`..`line`, or `line` alone) with the block's text, so the comment
covers exactly the lines the fix replaces (its edits are whole-line edits), and
those lines must all lie in one hunk of the diff. A fix that reaches outside
the diff (an import added at the top of the file, say) cannot be suggested: the
comment then sits on the finding's changed line and shows the fix as a diff.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.core.edits import apply_edits, replaced_lines, split_lines
from jaxfuse_lint.report.paths import printable
from jaxfuse_lint.report.rules import rule_info
from jaxfuse_lint.review.diff import ChangedFile


@dataclass
class ReviewComment:
    path: str
    line: int
    body: str
    diagnostic: Diagnostic
    start_line: int | None = None  # set for multi-line comments
    suggested: bool = False  # the body carries a ```suggestion block
    evidence: str | None = None  # the verify summary, when measured

    def to_json(self) -> dict[str, Any]:
        """A `comments[]` item of POST /repos/{owner}/{repo}/pulls/{n}/reviews."""
        data: dict[str, Any] = {"path": self.path}
        if self.start_line is not None and self.start_line != self.line:
            data["start_line"] = self.start_line
            data["start_side"] = "RIGHT"
        data["line"] = self.line
        data["side"] = "RIGHT"
        data["body"] = self.body
        return data


def fence(text: str, info: str) -> str:
    """A code block whose backtick fence is longer than any backtick run inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{ticks}{info}\n{text}{ticks}"


def fix_diff(path: str, source: str, d: Diagnostic) -> str:
    before = split_lines(source)
    after = split_lines(apply_edits(source, d.fix.edits))
    path = printable(path)  # its header on one line
    lines = difflib.unified_diff(before, after, f"a/{path}", f"b/{path}", n=1)
    return "".join(l if l.endswith("\n") else l + "\n\\ No newline at end of file\n" for l in lines)


def _headline(d: Diagnostic) -> str:
    info = rule_info(d.code, d.name)
    link = f"[{d.code}]({info.url})" if info.url else d.code
    return f"**{link}** `{info.name}`: {d.message}"


def _fix_note(d: Diagnostic) -> str:
    assert d.fix is not None
    if d.fix.applicability is Applicability.SAFE:
        return f"Fix (safe, `jaxfuse-lint --fix` applies it): {d.fix.described}"
    return (f"Fix ({d.fix.applicability.value}: it may change results, so `--fix` applies it only with "
            f"`--unsafe-fixes`; review it): {d.fix.described}")


def build_comment(d: Diagnostic, path: str, source: str, changed: ChangedFile,
                  evidence: str | None = None) -> ReviewComment:
    """The comment for one finding that touches a changed line of `path`."""
    anchor = changed.changed_in(d.location.row, d.end_location.row)[0]
    parts = [_headline(d)]
    comment = ReviewComment(path=path, line=anchor, body="", diagnostic=d, evidence=evidence)
    if d.fix is not None and d.fix.edits:
        first, last, replacement = replaced_lines(source, d.fix)
        hunk = changed.hunk_containing(first, last)
        if hunk is not None:
            comment.line = last
            comment.start_line = first if first != last else None
            comment.suggested = True
            # The block holds the new lines without the last terminator: "" deletes the lines.
            text = replacement.replace("\r\n", "\n").replace("\r", "\n")
            parts.append(_fix_note(d))
            parts.append(fence(text, "suggestion"))
        else:
            span = f"line {first}" if first == last else f"lines {first}-{last}"
            parts.append(_fix_note(d))
            parts.append(f"The fix also changes {span}, outside this pull request's diff, so it is not "
                         f"offered as a suggestion; run `jaxfuse-lint --fix {path}` or apply:")
            parts.append(fence(fix_diff(path, source, d), "diff"))
    if evidence:
        parts.append(f"Measured by `jaxfuse-lint verify`: {evidence}")
    comment.body = "\n\n".join(parts)
    return comment
