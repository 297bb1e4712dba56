"""Output files against a checkout that plants links (issue 42, item 3). The shipped CI example runs
`review ... --output review.json` in the pull request's checkout: a committed `review.json` link
to `../outside/target.txt` made the tool overwrite that file (so did `check -o report.sarif`). An
output file is never written through a symbolic link (`--follow-output-link` allows it), and it
is written whole, atomically."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from tests.test_review_support import commit, git, make_repo

BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"
TARGET_TEXT = "precious\n"


def everything_under(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): (p.read_text() if p.is_file() and not p.is_symlink() else "")
            for p in sorted(folder.rglob("*"))}


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A pull request's checkout (a git repository whose head adds a finding) beside a folder
    outside it that holds a file the links point at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text(TARGET_TEXT)
    repo = make_repo(tmp_path / "checkout", {"pyproject.toml": "[tool.jaxfuse-lint]\n", "m.py": "import jax\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"m.py": BAD}, "head")
    monkeypatch.chdir(repo)
    return repo, outside


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("jaxfuse-lint: error:")]


# -- the output file is a link ----------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ("check", "--no-cache", "--output-format", "sarif", "-o", "report.sarif", "."),
    ("review", "--base", "main", "--output", "report.sarif", "."),
    ("review", "--base", "main", "--summary", "report.sarif", "--output", "payload.json", "."),
])
def test_an_output_file_that_is_a_link_is_refused(checkout, command):
    repo, outside = checkout
    (repo / "report.sarif").symlink_to("../outside/target.txt")
    before = everything_under(outside)
    result = invoke(*command)
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "jaxfuse-lint: error: report.sarif: cannot write the output file: report.sarif is a symbolic link; not "
        "written through it (--follow-output-link writes through it)"]
    assert everything_under(outside) == before
    assert (repo / "report.sarif").is_symlink()


@pytest.mark.parametrize("command", [
    ("check", "--no-cache", "-o", "reports/out.txt", "."),
    ("review", "--base", "main", "--output", "reports/out.txt", "."),
])
def test_an_output_file_in_a_folder_that_is_a_link_is_refused(checkout, command):
    repo, outside = checkout
    (repo / "reports").symlink_to(outside, target_is_directory=True)
    before = everything_under(outside)
    result = invoke(*command)
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "jaxfuse-lint: error: reports/out.txt: cannot write the output file: reports is a symbolic link; not "
        "written through it (--follow-output-link writes through it)"]
    assert everything_under(outside) == before


def test_a_dangling_output_link_is_refused_and_creates_nothing(checkout):
    repo, outside = checkout
    (repo / "review.json").symlink_to("../outside/new.txt")
    result = invoke("review", "--base", "main", "--output", "review.json", ".")
    assert result.exit_code == 2
    assert not (outside / "new.txt").exists()


@pytest.mark.parametrize("command", [
    ("check", "--no-cache", "--follow-output-link", "-o", "report.txt", "."),
    ("review", "--base", "main", "--follow-output-link", "--output", "report.txt", "."),
])
def test_follow_output_link_writes_through_the_link(checkout, command):
    repo, outside = checkout
    (repo / "report.txt").symlink_to("../outside/target.txt")
    result = invoke(*command)
    assert result.exit_code == 1, result.output
    assert (repo / "report.txt").is_symlink()
    assert "JF201" in (outside / "target.txt").read_text()


# -- written whole, atomically ------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    ("check", "--no-cache", "--output-format", "json", "-o", "out/report.json", "."),
    ("review", "--base", "main", "--output", "out/report.json", "."),
])
def test_an_output_file_is_replaced_whole_by_a_new_file(checkout, command):
    """A reader never sees half a report: the new text is written beside it and renamed over it
    (a new inode), and missing folders are made."""
    repo, _ = checkout
    result = invoke(*command)
    assert result.exit_code == 1, result.output
    report = repo / "out" / "report.json"
    first = report.stat().st_ino
    json.loads(report.read_text())
    result = invoke(*command)
    assert result.exit_code == 1
    assert report.stat().st_ino != first
    json.loads(report.read_text())
    assert sorted(os.listdir(repo / "out")) == ["report.json"]  # no temporary file left


def test_an_output_file_outside_the_checkout_is_written(checkout, tmp_path):
    """Folders outside the working directory are the user's to trust (`$RUNNER_TEMP/x.sarif`):
    only the file's own name must not be a link."""
    repo, outside = checkout
    (tmp_path / "linked").symlink_to(outside, target_is_directory=True)
    result = invoke("check", "--no-cache", "-o", str(tmp_path / "linked" / "report.txt"), ".")
    assert result.exit_code == 1, result.output
    assert "JF201" in (outside / "report.txt").read_text()
    (outside / "via.txt").symlink_to("target.txt")
    result = invoke("check", "--no-cache", "-o", str(tmp_path / "linked" / "via.txt"), ".")
    assert result.exit_code == 2 and (outside / "target.txt").read_text() == TARGET_TEXT


def test_the_summary_is_appended_to(checkout):
    repo, _ = checkout
    (repo / "summary.md").write_text("# before\n")
    result = invoke("review", "--base", "main", "--output", "payload.json", "--summary", "summary.md", ".")
    assert result.exit_code == 1, result.output
    text = (repo / "summary.md").read_text()
    assert text.startswith("# before\n") and "JF201" in text
