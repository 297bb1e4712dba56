"""`jaxfuse-lint review` on real git repositories: a base commit, a head commit, the payload.

The hunks and added lines the payload must respect are computed here
independently of the implementation (from `git diff` hunk headers with a
regex, not unidiff), with GitHub's rules: a comment's lines are in one hunk,
the finding is on an added line, and a suggestion replaces exactly the
commented lines.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.test_review_support import FIX_MESSAGE, commit, git, install_jf101_fixer, make_repo

pytest.importorskip("unidiff")

from jaxfuse_lint.cli.review import review_command  # noqa: E402

BASE_MODEL = '''import jax
import jax.numpy as jnp


@jax.jit
def old(x):
    v = jnp.stack([x, 2 * x], axis=-1)
    return v + jnp.sum(v * v, axis=-1, keepdims=True)
'''
HEAD_MODEL = BASE_MODEL + '''

@jax.jit
def new(x):
    v = jnp.stack([x, 3 * x], axis=-1)
    w = v + 1
    return v + jnp.sum(
        w * v, axis=-1, keepdims=True
    )
'''
NEW_FILE = '''import jax
import jax.numpy as jnp


@jax.jit
def h(x):
    u = jnp.stack([x, x], axis=-1)
    return u + jnp.sum(u, axis=-1, keepdims=True)
'''
PROOF = '''import jax
import jax.numpy as jnp


def kvec_mesh(n):
    return jnp.stack((jnp.arange(0, n), jnp.arange(0, n)), axis=-1)


@jax.jit
def f_sum_jax(x):
    kvm = kvec_mesh(len(x))
    return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)
'''
# Only JF101, so rules added later cannot change what these sources report.
PYPROJECT = '[tool.jaxfuse-lint]\nselect = ["JF101"]\nextend-exclude = ["generated"]\n'


def diff_facts(repo: Path, base: str = "main") -> dict[str, dict]:
    """path -> {"hunks": [(first, last)], "added": {lines}} from `git diff base...HEAD`, parsed by hand."""
    out = git(repo, "-c", "core.quotepath=false", "diff", "--no-color", "-U3", f"{base}...HEAD")
    facts: dict[str, dict] = {}
    current = None
    row = 0
    for line in out.splitlines():
        if line.startswith("+++ "):
            name = line[4:].rstrip("\t")  # git ends names holding spaces with a tab
            current = facts.setdefault(name[2:], {"hunks": [], "added": set()}) if name != "/dev/null" else None
        elif line.startswith("@@") and current is not None:
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            start, length = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
            current["hunks"].append((start, start + length - 1))
            row = start
        elif current is not None and line[:1] in ("+", " ") and not line.startswith("+++"):
            if line.startswith("+"):
                current["added"].add(row)
            row += 1
    return facts


def suggestion_of(body: str) -> str | None:
    m = re.search(r"(`{3,})suggestion\n(.*?)\1", body, re.S)
    return m.group(2) if m else None


def apply_suggestion(text: str, comment: dict) -> str:
    """What GitHub's "Commit suggestion" does: replace lines start_line..line with the block."""
    lines = text.splitlines(keepends=True)
    first = comment.get("start_line", comment["line"])
    block = suggestion_of(comment["body"])
    return "".join(lines[: first - 1]) + block + "".join(lines[comment["line"]:])


@pytest.fixture
def repo(tmp_path, monkeypatch):
    install_jf101_fixer(monkeypatch)
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": PYPROJECT,
        "pkg/model.py": BASE_MODEL,
        "pkg/gone.py": "import os\n\nprint(os.getcwd())\n",
        "generated/model.py": BASE_MODEL,
    })
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {
        "pkg/model.py": HEAD_MODEL,
        "pkg/nouveau modèle.py": NEW_FILE,  # an added file with a space and non-ASCII in its name
        "pkg/gone.py": None,  # deleted: nothing to say
        "generated/model.py": HEAD_MODEL,  # excluded by the configuration
        "notes.txt": "not python\n",
    }, "head")
    monkeypatch.chdir(repo)
    return repo


def run_review(*args: str) -> tuple[int, dict, str]:
    result = CliRunner().invoke(review_command, list(args), catch_exceptions=False)
    payload = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.exit_code, payload, result.stderr


def test_payload_comments_only_changed_lines_with_exact_suggestions(repo):
    code, payload, stderr = run_review("--base", "main")
    assert code == 1, stderr
    head = git(repo, "rev-parse", "HEAD").strip()
    assert payload["commit_id"] == head and payload["event"] == "COMMENT"
    comments = payload["comments"]
    # `old`'s finding (line 8) is on an unchanged line; generated/ is excluded; gone.py is deleted.
    assert [(c["path"], c.get("start_line"), c["line"]) for c in comments] == [
        ("pkg/model.py", 15, 17),
        ("pkg/nouveau modèle.py", None, 8),
    ]
    facts = diff_facts(repo)
    for c in comments:
        assert c["side"] == "RIGHT" and set(c) <= {"path", "line", "side", "start_line", "start_side", "body"}
        if "start_line" in c:
            assert c["start_side"] == "RIGHT" and c["start_line"] < c["line"]
        first, last = c.get("start_line", c["line"]), c["line"]
        hunks = facts[c["path"]]["hunks"]
        assert any(a <= first and last <= b for a, b in hunks), (c, hunks)  # GitHub: one hunk
        assert set(range(first, last + 1)) & facts[c["path"]]["added"]  # on changed lines
        assert "[JF101](https://" in c["body"] and "small-axis-reduction" in c["body"]
        assert FIX_MESSAGE in c["body"]

    # The suggestion replaces exactly the commented lines: committing it gives the fixed file.
    model = comments[0]
    assert suggestion_of(model["body"]) == "    return v + (w * v)[..., 0:1] + (w * v)[..., 1:2]\n"
    assert apply_suggestion(HEAD_MODEL, model) == HEAD_MODEL.replace(
        "jnp.sum(\n        w * v, axis=-1, keepdims=True\n    )", "(w * v)[..., 0:1] + (w * v)[..., 1:2]")
    assert apply_suggestion(NEW_FILE, comments[1]) == NEW_FILE.replace(
        "jnp.sum(u, axis=-1, keepdims=True)", "(u)[..., 0:1] + (u)[..., 1:2]")

    body = payload["body"]
    assert "jaxfuse-lint: 2 findings on the lines this pull request changes" in body
    assert re.search(r"\| \[JF101\]\(https://\S+small-axis-reduction\.md\) \| `small-axis-reduction` \| 2 \| 2 \| 0 \|",
                     body)
    assert "What `jaxfuse-lint --fix` would change:** 2 safe fixes" in body
    assert "- `pkg/model.py:15` JF101 (safe): " + FIX_MESSAGE in body
    assert "+    return v + (w * v)[..., 0:1] + (w * v)[..., 1:2]" in body  # the safe-fix diff


def test_unchanged_findings_appear_once_their_line_changes(repo):
    commit(repo, {"pkg/model.py": HEAD_MODEL.replace("2 * x], axis=-1)\n    return v + jnp.sum(v * v",
                                                     "2 * x], axis=-1)\n    return 1 + v + jnp.sum(v * v")}, "touch old")
    _, payload, _ = run_review("--base", "main", "pkg/model.py")
    assert [(c["path"], c["line"]) for c in payload["comments"]] == [("pkg/model.py", 8), ("pkg/model.py", 17)]


def test_a_fix_reaching_outside_the_diff_is_described_not_suggested(repo, monkeypatch):
    install_jf101_fixer(monkeypatch, add_import="math")  # the fix also adds `import math` at the top
    _, payload, _ = run_review("--base", "main", "pkg/model.py")
    (c,) = payload["comments"]
    assert "start_line" not in c and c["line"] == 15  # on the finding's first changed line
    assert suggestion_of(c["body"]) is None
    assert "outside this pull request's diff" in c["body"]
    assert "```diff\n--- a/pkg/model.py\n+++ b/pkg/model.py\n" in c["body"]
    assert "\n+import math\n" in c["body"] and "\n+    return v + (w * v)[..., 0:1] + (w * v)[..., 1:2]\n" in c["body"]


def test_paths_summary_file_and_exit_codes(repo, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# Job summary\n")
    out = tmp_path / "payload.json"
    result = CliRunner().invoke(review_command, ["--base", "main", "--output", str(out), "--summary", str(summary),
                                                 "--exit-zero", "pkg/nouveau modèle.py"])
    assert result.exit_code == 0, result.output
    payload = json.loads(out.read_text())
    assert [c["path"] for c in payload["comments"]] == ["pkg/nouveau modèle.py"]
    text = summary.read_text()
    assert text.startswith("# Job summary\n### jaxfuse-lint: 1 finding on the lines")  # appended
    assert text.endswith(payload["body"])
    assert "1 finding on changed lines (1 with a suggestion)" in result.stderr


def test_nothing_to_report(repo):
    code, payload, _ = run_review("--base", "feature")
    assert code == 0 and payload["comments"] == []
    assert "nothing to report" in payload["body"]


def test_usage_errors(repo, tmp_path, monkeypatch):
    result = CliRunner().invoke(review_command, ["--base", "no-such-branch"])
    assert result.exit_code == 2 and "unknown revision `no-such-branch`" in result.stderr
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = CliRunner().invoke(review_command, ["--base", "main"])
    assert result.exit_code == 2 and "not inside a git repository" in result.stderr


def _proof_notebook() -> str:
    """PROOF as a notebook: its imports (and a magic) in one cell, the functions in the next."""
    imports, rest = PROOF.split("\n\n\n", 1)
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": [line + "\n" for line in text.rstrip("\n").split("\n")]}
             for text in (imports + "\n%matplotlib inline", rest)]
    return json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                                     "display_name": "Python 3"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


@pytest.mark.parametrize("path, module", [("pkg/model.py", "pkg.model"), ("notebooks/study.ipynb", "notebooks.study")])
def test_verify_adds_measured_evidence(tmp_path, monkeypatch, path, module):
    pytest.importorskip("jax")
    install_jf101_fixer(monkeypatch)
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": ('[tool.jaxfuse-lint]\nselect = ["JF101"]\ntarget = "cpu"\n\n'
                           f'[tool.jaxfuse-lint.verify]\n"{module}:f_sum_jax" = ["f32[131072,2]"]\n'),
        "README.md": "base\n",
    })
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {path: _proof_notebook() if path.endswith(".ipynb") else PROOF}, "head")
    monkeypatch.chdir(repo)
    code, payload, stderr = run_review("--base", "main", "--verify")
    assert code == 1, stderr
    (c,) = [c for c in payload["comments"] if "JF101" in c["body"]]
    m = re.search(r"Measured by `jaxfuse-lint verify`: (on CPU: .*?) \(verdict: (\w[\w ]*)\)", c["body"])
    assert m, c["body"]
    # The code was compiled (a notebook's cells as one module): the proof file's 2 kernels, 1 MiB.
    assert "2 kernels" in m.group(1) and "1.0 MiB" in m.group(1), m.group(1)
    assert m.group(2) in ("proved", "unchanged", "regressed", "changed results")
    assert "**Measured**" in payload["body"] and m.group(1) in payload["body"]
    assert f"verifying {path}::f_sum_jax" in stderr


def test_without_a_verify_spec_nothing_is_run(repo):
    code, payload, stderr = run_review("--base", "main", "--verify")
    assert code == 1 and "verifying" not in stderr
    assert all("Measured" not in c["body"] for c in payload["comments"])
    # ...and it says why, and what would let it measure the fixes.
    assert "--verify measured no fix in `pkg/model.py::new`" in stderr, stderr
    assert "no [tool.jaxfuse-lint.verify] spec" in stderr and '"pkg.model:new" = ["f32[1024,3]"]' in stderr
    assert "jaxfuse-lint record --" in stderr


def test_git_command_line_is_not_needed_beyond_git(repo):
    # The diff helper ignores user configuration that would change its output.
    git(repo, "config", "diff.noprefix", "true")
    git(repo, "config", "diff.mnemonicPrefix", "true")
    _, payload, _ = run_review("--base", "main")
    assert len(payload["comments"]) == 2
    assert subprocess.run(["git", "--version"], capture_output=True).returncode == 0
