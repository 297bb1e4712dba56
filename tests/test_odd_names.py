"""File names that are not UTF-8, or hold a newline (issue 37, item 10): every output format
shows them with escapes (`bad\\xff.py`, `new\\nline.py`: one line per finding, output that is
valid UTF-8), SARIF's URIs percent-encode their bytes, and `review` neither crashes on them nor
on a submodule at a `.py` path (it is skipped, with a note)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxfuse_lint.report.paths import printable

ROOT = Path(__file__).resolve().parent.parent
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"  # JF201 by default
FORMATS = ("concise", "full", "json", "json-lines", "sarif", "github", "gitlab", "rdjson", "junit", "pylint")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0", "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, cwd=cwd, env=env,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_printable_escapes_undecodable_bytes_and_line_breaks():
    assert printable(os.fsdecode(b"bad\xff.py")) == "bad\\xff.py"
    assert printable("new\nline\r\t.py") == "new\\nline\\r\\t.py"
    assert printable("caf\u00e9/\u2028x\x1b.py") == "caf\u00e9/\\u2028x\\x1b.py"
    assert printable("plain/path.py") == "plain/path.py"


@pytest.fixture(scope="module")
def odd_tree(tmp_path_factory):
    tree = tmp_path_factory.mktemp("odd_names")
    (tree / os.fsdecode(b"bad\xff.py")).write_text(BAD)
    (tree / "new\nline.py").write_text(BAD)
    return tree


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_shows_odd_names_escaped(odd_tree, fmt):
    result = run("check", "--no-cache", "--output-format", fmt, ".", cwd=odd_tree)
    assert result.returncode == 1, result.stderr.decode("utf-8", "replace")
    text = result.stdout.decode("utf-8")  # valid UTF-8: no raw 0xff
    if fmt == "sarif":
        uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                for r in json.loads(text)["runs"][0]["results"]}
        assert uris == {"bad%FF.py", "new%0Aline.py"}
        return
    if fmt in ("json", "gitlab", "rdjson"):
        json.loads(text)
    if fmt == "json-lines":
        for line in text.splitlines():
            json.loads(line)
    assert "bad\\xff.py" in text or "bad\\\\xff.py" in text  # as written, or inside a JSON string
    assert "new\\nline.py" in text or "new\\\\nline.py" in text
    if fmt in ("concise", "pylint"):
        lines = text.splitlines()
        assert len([ln for ln in lines if "JF201" in ln]) == 2
        assert all(ln.startswith(("bad\\xff.py:", "new\\nline.py:")) for ln in lines if "JF201" in ln)


def test_output_file_with_odd_names(odd_tree, tmp_path):
    result = run("check", "--no-cache", "--output-format", "json", "-o", str(tmp_path / "out.json"), ".", cwd=odd_tree)
    assert result.returncode == 1
    names = {Path(d["filename"]).name for d in json.loads((tmp_path / "out.json").read_text("utf-8"))}
    assert names == {"bad\\xff.py", "new\\nline.py"}


@pytest.fixture(scope="module")
def odd_pull_request(tmp_path_factory):
    """A repository whose head adds a non-UTF-8 name, a name with a newline, a plain file and a
    submodule at `sub.py`, all but the submodule with a finding."""
    base = tmp_path_factory.mktemp("odd_pr")
    sub, repo = base / "sub", base / "repo"
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-c", "protocol.file.allow=always"]
    for folder in (sub, repo):
        folder.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    (sub / "f.txt").write_text("x\n")
    subprocess.run([*git, "add", "."], cwd=sub, check=True)
    subprocess.run([*git, "commit", "-qm", "sub"], cwd=sub, check=True)
    (repo / "base.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    (repo / os.fsdecode(b"bad\xff.py")).write_text(BAD)
    (repo / "new\nline.py").write_text(BAD)
    (repo / "ok.py").write_text(BAD)
    subprocess.run([*git, "submodule", "add", "-q", str(sub), "sub.py"], cwd=repo, check=True, capture_output=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "head"], cwd=repo, check=True)
    return repo


def test_review_of_odd_names_and_a_submodule(odd_pull_request, tmp_path):
    repo = odd_pull_request
    out, summary = tmp_path / "review.json", tmp_path / "summary.md"
    result = run("review", "--base", "HEAD~1", "-o", str(out), "--summary", str(summary), cwd=repo)
    stderr = result.stderr.decode("utf-8")
    assert result.returncode == 1, stderr
    assert "Traceback" not in stderr
    assert "sub.py: a submodule, not a file: skipped" in stderr
    payload = json.loads(out.read_text("utf-8"))
    # GitHub addresses files by their UTF-8 names: the others' findings are in the summary only.
    assert sorted(c["path"] for c in payload["comments"]) == ["new\nline.py", "ok.py"]
    body = payload["body"]
    assert "bad\\xff.py" in body and "new\\nline.py" in body
    assert "bad\\xff.py: 1 finding not posted as a comment: the file name is not UTF-8" in body
    assert "sub.py: a submodule, not a file: skipped" in body
    assert summary.read_text("utf-8") == body
