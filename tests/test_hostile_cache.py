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


# -- entries another user wrote (issue 42, item 6) -----------------------------------------------------------

def _forge(path: Path, change, key: bytes | None) -> None:
    """Rewrite an entry as someone else could: its JSON changed (values of valid types), behind
    the SHA-256 line of the old format (key None) or an HMAC under a key of their own."""
    import hmac

    _, _, body = path.read_bytes().partition(b"\n")
    new = json.dumps(change(json.loads(body))).encode()
    line = (hashlib.sha256(new).hexdigest() if key is None else hmac.new(key, new, hashlib.sha256).hexdigest())
    path.write_bytes(line.encode() + b"\n" + new)


def _plant(d):
    d["message"] = "TAMPERED MESSAGE"
    d["location"]["row"] = 10**9
    d["end_location"]["row"] = 10**9
    d["cell"] = 1  # a cell of a `.py` file


@pytest.mark.parametrize("key", [None, b"k" * 32], ids=["checksum", "another key"])
def test_an_entry_another_user_wrote_is_not_replayed(project, monkeypatch, key):
    proj, _ = project
    cold = check(proj, monkeypatch=monkeypatch)
    assert cold.exit_code == 1 and "JF201" in cold.output
    entries = sorted(p for p in (proj / ".jaxfuse_lint_cache").rglob("*.json") if "walks" not in p.parts)
    assert any("runs" in p.parts for p in entries) and any("runs" not in p.parts for p in entries)
    for entry in entries:
        _forge(entry, _each_diagnostic(_plant), key)
    warm = check(proj, monkeypatch=monkeypatch)
    assert "TAMPERED" not in warm.output and "1000000000" not in warm.output and "cell" not in warm.output
    assert warm.output == cold.output
    for entry in (proj / ".jaxfuse_lint_cache").rglob("runs/*.json"):  # each file's entry alone
        entry.unlink()
    for entry in entries:
        if entry.exists():
            _forge(entry, _each_diagnostic(_plant), key)
    assert check(proj, monkeypatch=monkeypatch).output == cold.output


def test_the_key_is_the_users_own(tmp_path, monkeypatch):
    """Made once, 0600, in the user's cache folder (it outlives a reboot); a key file someone else
    could read or that is a link is no key: the run goes on without the cache and says so once."""
    from jaxfuse_lint.core.private_folder import KEY_BYTES, key_folder
    from jaxfuse_lint.run import cache as cache_module

    (tmp_path / "run").mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    cache_module.user_key.cache_clear()
    try:
        key = cache_module.user_key()
        assert key is not None and len(key) == KEY_BYTES
        path = Path(key_folder()) / cache_module.KEY_NAME
        assert (path.parent.stat().st_mode & 0o777) == 0o700
        assert path.stat().st_mode & 0o777 == 0o600
        cache_module.user_key.cache_clear()
        assert cache_module.user_key() == key  # the same key on the next run
        path.chmod(0o644)
        cache_module.user_key.cache_clear()
        assert cache_module.user_key() is None
        proj = tmp_path / "proj"
        proj.mkdir()
        (proj / "m.py").write_text(BAD)
        result = check(proj, monkeypatch=monkeypatch)
        assert result.exit_code == 1 and "JF201" in result.output
        said = [line for line in result.output.splitlines() if "cache" in line]
        assert said == [f"jaxfuse-lint: .jaxfuse_lint_cache: cannot use the cache (no private folder for its key: "
                        f"{key_folder()} or {tmp_path / 'run'}/jaxfuse-lint-{os.getuid()}); continuing without it"]
    finally:
        cache_module.user_key.cache_clear()


def _listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(folder)), p.stat(follow_symlinks=False).st_mtime_ns) for p in folder.rglob("*"))


def test_a_cache_folder_owned_by_another_user_is_not_used(project, monkeypatch):
    proj, _ = project
    cold = check(proj, monkeypatch=monkeypatch)
    cache = proj / ".jaxfuse_lint_cache"
    (proj / "m.py").write_text(BAD + "# changed: a run would write new entries\n")
    before = _listing(cache)
    uid = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: uid + 1)  # this run's user owns nothing here
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 1 and "JF201" in result.output
    assert _listing(cache) == before
    said = [line for line in result.output.splitlines() if "cache" in line]
    assert said == [f"jaxfuse-lint: {cache}: cannot use the cache (owned by another user (uid {uid}), "
                    "not used); continuing without it"]
    assert cold.exit_code == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="root's run over a folder another uid owns")
def test_root_does_not_write_into_a_users_cache(project, monkeypatch):
    proj, _ = project
    check(proj, monkeypatch=monkeypatch)
    cache = proj / ".jaxfuse_lint_cache"
    for p in [cache, *cache.rglob("*")]:
        os.chown(p, 12345, 12345, follow_symlinks=False)
    (proj / "m.py").write_text(BAD + "# changed\n")
    before = _listing(cache)
    result = check(proj, monkeypatch=monkeypatch)
    assert result.exit_code == 1 and "JF201" in result.output
    assert _listing(cache) == before
    assert "cannot use the cache (owned by another user (uid 12345), not used); continuing without it" in result.output
