"""The cache folder against someone who can write the checked tree (issue 37, item 8): links
planted where the cache writes, a tree's own `cache-dir` naming a folder elsewhere, and entries
whose checksum was recomputed over ill-typed values."""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.run.runner import check_files
from tests.test_cache import files, settings, tree  # noqa: F401

# One JF201 finding that the default calibration table reports (the CLI runs as users do: the tables
# decide): the checks below need a run that has something to report, and to cache.
BAD = """\
import jax
import numpy as np


@jax.jit
def f(x):
    return x + np.eye(64)
"""


def check(folder: Path, *args: str, monkeypatch):
    monkeypatch.chdir(folder)
    return CliRunner().invoke(cli, ["check", "-j1", *args, "."])


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def project(tmp_path):
    """A project (its pyproject.toml at the root) and a folder outside it that others may not
    write (where a planted link would point)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n")
    (proj / "m.py").write_text(BAD)
    outside = tmp_path / "outside"
    outside.mkdir()
    return proj, outside


# -- links planted in the cache folder ---------------------------------------------------------------------

def test_a_planted_dangling_gitignore_link_is_not_followed(project, monkeypatch):
    proj, outside = project
    cache = proj / ".jaxfuse_lint_cache"
    cache.mkdir()
    (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n"
                                        "# This file is a cache directory tag created by jaxfuse-lint.\n")
    (cache / ".gitignore").symlink_to(outside / "created-by-the-run")
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 1 and "JF201" in result.output
    assert everything_under(outside) == []
    assert (cache / ".gitignore").is_symlink()


def test_a_cache_folder_that_is_a_link_out_of_the_tree_is_not_written(project, monkeypatch):
    proj, outside = project
    (proj / ".jaxfuse_lint_cache").symlink_to(outside, target_is_directory=True)
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 1 and "JF201" in result.output
    assert everything_under(outside) == []
    errors = [line for line in result.output.splitlines() if "cannot write the cache" in line]
    assert len(errors) == 1 and "a symbolic link, not followed" in errors[0]


def test_a_link_planted_inside_the_cache_is_not_followed(project, monkeypatch):
    proj, outside = project
    check(proj, monkeypatch=monkeypatch)
    version = next(p for p in (proj / ".jaxfuse_lint_cache").iterdir() if re.fullmatch(r"[0-9a-f]{16}", p.name))
    (settings_folder,) = [p for p in version.iterdir() if p.is_dir()]
    runs = settings_folder / "runs"
    for p in runs.iterdir():
        p.unlink()
    runs.rmdir()
    runs.symlink_to(outside, target_is_directory=True)
    (proj / "m.py").write_text(BAD + "# changed\n")
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 1
    assert everything_under(outside) == []


# -- `cache-dir` in the checked tree's configuration ---------------------------------------------------------

@pytest.mark.parametrize("value", ["{outside}", "..", "../outside", "sub/../../outside"])
def test_a_configured_cache_dir_outside_the_project_is_a_configuration_error(project, monkeypatch, value):
    proj, outside = project
    (proj / "pyproject.toml").write_text(f"[tool.jaxfuse-lint]\ncache-dir = {value.format(outside=outside)!r}\n")
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 2
    assert "`cache-dir` must be a folder inside the project" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert everything_under(outside) == [] and everything_under(proj.parent) == sorted(
        ["proj", "outside", "proj/m.py", "proj/pyproject.toml"])


def test_a_configured_cache_dir_through_a_link_out_of_the_project_is_not_written(project, monkeypatch):
    proj, outside = project
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\ncache-dir = 'out/cache'\n")
    (proj / "out").symlink_to(outside, target_is_directory=True)
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 1 and "JF201" in result.output
    assert everything_under(outside) == []


def test_a_configured_cache_dir_inside_the_project_and_the_command_line_anywhere(project, monkeypatch):
    proj, outside = project
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\ncache-dir = 'build/lint-cache'\n")
    check(proj, monkeypatch=monkeypatch)
    assert (proj / "build" / "lint-cache" / "CACHEDIR.TAG").is_file()
    linked = proj.parent / "linked"
    linked.symlink_to(outside, target_is_directory=True)
    result = check(proj, "--cache-dir", str(linked / "cache"), monkeypatch=monkeypatch)
    assert result.exit_code == 1
    assert (outside / "cache" / "CACHEDIR.TAG").is_file()  # named by the user: followed


# -- entries whose checksum was recomputed ------------------------------------------------------------------

def _rewrite(path: Path, change) -> None:
    head, _, body = path.read_bytes().partition(b"\n")
    new = json.dumps(change(json.loads(body))).encode()
    path.write_bytes(hashlib.sha256(new).hexdigest().encode() + b"\n" + new)


def _results(data: dict) -> list[dict]:
    """The cached results of an entry or of a run's record."""
    if "files" in data:
        return [item[2] for item in data["files"]]
    return [data["result"]] if data.get("result") else []


def _each_diagnostic(change):
    def apply(data):
        for result in _results(data):
            for d in result["diagnostics"]:
                change(d)
        return data
    return apply


def _other_file(d):
    d["filename"] = "/etc/passwd"


def _summary_ref(data):
    if data.get("summary") and data["summary"]["base"]:
        data["summary"]["base"][0] = ["only", "two"]
    elif data.get("summary"):
        data["summary"]["defs"] = [1]
    return data


TAMPERINGS = {
    "row_a_string": _each_diagnostic(lambda d: d["location"].update(row=str(d["location"]["row"]))),
    "row_a_bool": _each_diagnostic(lambda d: d["location"].update(row=True)),
    "row_zero": _each_diagnostic(lambda d: d["end_location"].update(row=0)),
    "edit_content_a_number": _each_diagnostic(
        lambda d: [e.update(content=7) for e in (d["fix"] or {}).get("edits", [])]),
    "code_a_number": _each_diagnostic(lambda d: d.update(code=201)),
    "another_files_diagnostic": _each_diagnostic(_other_file),
    "summary_ref_of_two": _summary_ref,
    "prescan_imports_numbers": lambda d: {**d, "prescan": {**d["prescan"], "imports": [1, 2]}} if "prescan" in d else d,
    "skipped_a_string": lambda d: [r.update(skipped="no") for r in _results(d)] and d,
}


def everything(run) -> tuple:
    """What a run reports, every field of every diagnostic, and which files it skipped."""
    return [d.to_json() for d in run.diagnostics], [(r.filename, r.skipped) for r in run.results]


@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
def test_an_entry_with_a_recomputed_checksum_and_wrong_types_is_a_miss(tree, tampering):  # noqa: F811
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    assert cold.diagnostics
    for entry in sorted(p for p in (tree / "cache").rglob("*.json") if "walks" not in p.parts):
        _rewrite(entry, TAMPERINGS[tampering])
    warm = check_files(files(tree), s, jobs=1, use_cache=True)  # the run's record
    assert everything(warm) == everything(cold) and warm.errors == []
    for entry in (tree / "cache").rglob("runs/*.json"):
        entry.unlink()
    warm = check_files(files(tree), s, jobs=1, use_cache=True)  # each file's entry
    assert everything(warm) == everything(cold) and warm.errors == []


def test_a_remembered_walk_naming_files_outside_the_folder_is_a_miss(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "m.py").write_text(BAD)
    secret = tmp_path / "secret.py"
    secret.write_text(BAD.replace("def f(", "def g("))  # would be reported, were it checked
    for p in (proj / "m.py", proj):  # changed long ago: the walk is remembered
        os.utime(p, (1e9, 1e9))
    cache = tmp_path / "cache"
    check(proj, "--cache-dir", str(cache), monkeypatch=monkeypatch)
    (walk,) = cache.rglob("walks/*.json")
    _rewrite(walk, lambda d: {**d, "files": d["files"] + [[str(secret), str(secret)]]})
    result = check(proj, "--cache-dir", str(cache), monkeypatch=monkeypatch)
    assert "secret.py" not in result.output and "m.py" in result.output
