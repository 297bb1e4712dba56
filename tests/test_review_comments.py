"""Review comments for the awkward fixes: insertions, deletions, backticks, CRLF, fixes across hunks.

For every case, "commit the suggestion" (replace lines start_line..line with
the block) must give exactly what applying the fix's edits gives.
"""
from __future__ import annotations

import re

import pytest

from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from jaxfuse_lint.core.edits import apply_edits, replaced_lines, split_lines
from jaxfuse_lint.review.comments import build_comment, fence
from jaxfuse_lint.review.diff import ChangedFile, parse_diff, unquote_git_path

SOURCE = "".join(f"line{i}\n" for i in range(1, 11))


def diag(row: int, *edits: Edit, applicability=Applicability.SAFE) -> Diagnostic:
    fix = Fix(applicability, "the fix", tuple(edits)) if edits else None
    return Diagnostic("JF101", "small-axis-reduction", "the message", "m.py", Location(row, 1), Location(row, 5), fix)


def commit_suggestion(text: str, comment) -> str:
    data = comment.to_json()
    m = re.search(r"(`{3,})suggestion\n(.*?)\1", data["body"], re.S)
    assert m, data["body"]
    lines = split_lines(text)
    first = data.get("start_line", data["line"])
    return "".join(lines[: first - 1]) + m.group(2) + "".join(lines[data["line"]:])


CHANGED = ChangedFile("m.py", added={4, 5, 6}, hunks=[(1, 9)])

CASES = {
    "replace one line": [Edit("LINE5\n", Location(5, 1), Location(6, 1))],
    "replace two lines by three": [Edit("a\nb\nc\n", Location(4, 1), Location(6, 1))],
    "delete a line": [Edit("", Location(5, 1), Location(6, 1))],
    "insert before a line": [Edit("inserted\n", Location(5, 1), Location(5, 1))],
    "two edits": [Edit("A\n", Location(4, 1), Location(5, 1)), Edit("C\n", Location(6, 1), Location(7, 1))],
    "blank line": [Edit("\n", Location(5, 1), Location(6, 1))],
    "backticks inside": [Edit("s = '```python'\n", Location(5, 1), Location(6, 1))],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_committing_the_suggestion_applies_the_fix(name):
    d = diag(5, *CASES[name])
    comment = build_comment(d, "m.py", SOURCE, CHANGED)
    assert comment.suggested
    assert commit_suggestion(SOURCE, comment) == apply_edits(SOURCE, d.fix.edits)
    first, last, _ = replaced_lines(SOURCE, d.fix)
    data = comment.to_json()
    assert data["line"] == last and data.get("start_line", last) == first


def test_empty_suggestion_deletes_and_fences_outgrow_backticks():
    comment = build_comment(diag(5, *CASES["delete a line"]), "m.py", SOURCE, CHANGED)
    assert "```suggestion\n```" in comment.body
    assert fence("a ```` b\n", "suggestion").startswith("`````suggestion\n")


def test_crlf_suggestion_has_plain_newlines():
    text = SOURCE.replace("\n", "\r\n")
    d = diag(4, Edit("a\r\nb\r\n", Location(4, 1), Location(6, 1)))
    comment = build_comment(d, "m.py", text, CHANGED)
    assert "```suggestion\na\nb\n```" in comment.body
    assert comment.to_json()["start_line"] == 4 and comment.to_json()["line"] == 5


def test_fix_spanning_two_hunks_is_described():
    changed = ChangedFile("m.py", added={2, 8}, hunks=[(1, 4), (6, 10)])
    d = diag(8, Edit("X\n", Location(2, 1), Location(3, 1)), Edit("Y\n", Location(8, 1), Location(9, 1)))
    comment = build_comment(d, "m.py", SOURCE, changed)
    assert not comment.suggested and comment.to_json() == {
        "path": "m.py", "line": 8, "side": "RIGHT", "body": comment.body}
    assert "lines 2-8, outside" in comment.body and "-line2\n+X\n" in comment.body


def test_finding_without_fix_and_unsafe_fix_wording():
    comment = build_comment(diag(5), "m.py", SOURCE, CHANGED)
    assert comment.body.startswith("**[JF101](https://") and "suggestion" not in comment.body
    unsafe = build_comment(diag(5, *CASES["replace one line"], applicability=Applicability.UNSAFE), "m.py", SOURCE,
                           CHANGED)
    assert "`--unsafe-fixes`" in unsafe.body and unsafe.suggested


def test_diff_parsing_of_quoted_and_renamed_paths():
    diff = (
        'diff --git "a/caf\\303\\251.py" "b/caf\\303\\251.py"\n'
        "index 1111111..2222222 100644\n"
        '--- "a/caf\\303\\251.py"\n'
        '+++ "b/caf\\303\\251.py"\n'
        "@@ -1,2 +1,3 @@\n"
        " a\n"
        "+b\n"
        " c\n"
        "diff --git a/old.py b/new.py\n"
        "similarity index 90%\n"
        "rename from old.py\n"
        "rename to new.py\n"
        "index 3333333..4444444 100644\n"
        "--- a/old.py\n"
        "+++ b/new.py\n"
        "@@ -10,3 +10,3 @@ def f():\n"
        " x\n"
        "-y\n"
        "+z\n"
        " w\n"
    )
    files = parse_diff(diff)
    assert set(files) == {"café.py", "new.py"}
    assert files["café.py"].added == {2} and files["café.py"].hunks == [(1, 3)]
    assert files["new.py"].added == {11} and files["new.py"].hunks == [(10, 12)]
    assert unquote_git_path('"a\\tb\\"c"') == 'a\tb"c'
