"""Remembered folder walks (discovery._walk_remembered): a walk is replayed only while stat
says that nothing it depended on changed: the entries of every folder it listed, the
.gitignore files it read (edited in place, they leave their folder's time alone), what is in
the folders it judged to be virtual environments, and the `.git` markers above it."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import jaxfuse_lint.discover.files as discovery
from jaxfuse_lint.run.cache import Cache
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.discover.files import discover_files

AN_HOUR = 3600 * 10**9


def age(root: Path) -> None:
    """Every file and folder under `root` last modified an hour ago, so that whatever a test
    changes next moves a time (the clock may not tick between two steps of a test)."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns - AN_HOUR))
    st = os.stat(root)
    os.utime(root, ns=(st.st_atime_ns, st.st_mtime_ns - AN_HOUR))


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setattr("jaxfuse_lint.core.stat_signature.RACY_NS", 0)  # the racy window has its own test
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("x = 1\n")
    (root / "pkg" / "sub" / "b.py").write_text("y = 2\n")
    (root / "notes").mkdir()
    (root / "notes" / "n.py").write_text("z = 3\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("")
    (root / ".gitignore").write_text("build/\n")
    age(root)
    monkeypatch.chdir(root)
    return root


def cache_for(root: Path) -> tuple[Settings, Cache]:
    settings = replace(Settings(), project_root=str(root), cache_dir=str(root.parent / "cache"))
    return settings, Cache(settings.cache_dir, settings)


def found(root: Path) -> tuple[list[str], list[tuple[str, str]]]:
    settings, cache = cache_for(root)
    d = discover_files(["."], settings, cache=cache)
    return sorted(map(str, d.files)), sorted(d.skipped)


def walks(root: Path) -> list[Path]:
    return sorted((root.parent / "cache").rglob("walks/*.json"))


def no_walking(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("walked again")

    monkeypatch.setattr(discovery, "_walk", refuse)


def test_an_unchanged_tree_is_replayed_as_walked(project, monkeypatch):
    settings, _ = cache_for(project)
    fresh = discover_files(["."], settings)  # no cache: the plain walk
    first = found(project)
    assert first == (sorted(map(str, fresh.files)), sorted(fresh.skipped))
    assert first[0] == ["notes/n.py", "pkg/a.py", "pkg/sub/b.py"]
    assert len(walks(project)) == 1
    no_walking(monkeypatch)
    assert found(project) == first


def test_a_new_or_removed_file_is_seen(project):
    found(project)
    (project / "pkg" / "sub" / "c.py").write_text("")
    assert "pkg/sub/c.py" in found(project)[0]
    (project / "pkg" / "a.py").unlink()
    assert "pkg/a.py" not in found(project)[0]


def test_a_new_folder_is_seen(project):
    found(project)
    (project / "pkg" / "deeper").mkdir()
    (project / "pkg" / "deeper" / "d.py").write_text("")
    assert "pkg/deeper/d.py" in found(project)[0]


def test_a_gitignore_edited_in_place_is_seen(project):
    assert "notes/n.py" in found(project)[0]
    folder_time = os.stat(project).st_mtime_ns
    with open(project / ".gitignore", "a") as fh:  # in place: the folder's time stays
        fh.write("notes/\n")
    assert os.stat(project).st_mtime_ns == folder_time
    files, skipped = found(project)
    assert "notes/n.py" not in files and ("notes", "gitignored") in skipped


def test_a_gitignore_changed_above_the_walked_folder_is_seen(project, monkeypatch):
    monkeypatch.chdir(project / "pkg")
    settings, cache = cache_for(project)
    before = discover_files(["."], settings, cache=cache).files
    assert Path("sub/b.py") in before
    (project / ".gitignore").write_text("build/\nsub/\n")
    after = discover_files(["."], settings, cache=cache).files
    assert Path("sub/b.py") not in after


def test_a_folder_that_becomes_a_virtual_environment_is_skipped(project):
    found(project)
    (project / "notes" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    files, skipped = found(project)
    assert "notes/n.py" not in files and ("notes", "a virtual environment") in skipped


def test_the_settings_that_decide_discovery_are_part_of_the_key(project):
    found(project)
    settings, cache = cache_for(project)
    narrowed = replace(settings, extend_exclude=("notes",))
    assert Path("notes/n.py") not in discover_files(["."], narrowed, cache=cache).files
    assert Path("notes/n.py") in discover_files(["."], settings, cache=cache).files


def test_a_damaged_memo_is_a_miss(project):
    first = found(project)
    [memo] = walks(project)
    memo.write_text('{"format": 2, "observed": [["d"]], "files": 3}')
    assert found(project) == first


def test_a_tree_changed_within_the_racy_window_is_not_remembered(project, monkeypatch):
    monkeypatch.setattr("jaxfuse_lint.core.stat_signature.RACY_NS", 2 * 10**9)
    (project / "pkg" / "new.py").write_text("")  # its folder's time is now
    found(project)
    assert walks(project) == []


def test_a_warm_check_neither_walks_nor_loads_pathspec(tmp_path):
    """End to end, through the command line in a fresh interpreter: the second run replays the
    walk (a .gitignore is there: walking would load pathspec) and says the same."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("import jax\n\n\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    age(root)
    probe = ("import runpy, sys\n"
             "sys.argv = ['jaxfuse-lint', 'check', '--cache-dir', sys.argv[1], '-j1', '.']\n"
             "try:\n    runpy.run_module('jaxfuse_lint', run_name='__main__', alter_sys=True)\n"
             "except SystemExit:\n    pass\n"
             "print('pathspec loaded' if 'pathspec' in sys.modules else 'pathspec not loaded')\n")
    env = {**os.environ, "NO_COLOR": "1"}

    def run() -> str:
        return subprocess.run([sys.executable, "-c", probe, str(tmp_path / "cache")], cwd=root, env=env,
                              capture_output=True, text=True, timeout=300).stdout

    import time

    time.sleep(2.1)  # past the racy window (core.stat_signature.RACY_NS) of the .gitignore just written
    cold = run()
    assert "JF401" in cold and "pathspec loaded" in cold
    warm = run()
    assert "pathspec not loaded" in warm
    assert warm.replace("pathspec not loaded", "") == cold.replace("pathspec loaded", "")
