"""The per-file cache: warm runs parse nothing, and every input of a result is in its key."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from jaxfuse_lint.run.cache import Cache, default_directory
from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from jaxfuse_lint.run.runner import check_files

ROOT = Path(__file__).resolve().parent.parent
CROSS = ROOT / "fixtures" / "cross_module"

BAD = """\
import jax
import numpy as np


@jax.jit
def f(x):
    return x + np.ones(3)
"""


@pytest.fixture
def tree(tmp_path):
    """A copy of the cross-module `trainer` package plus a standalone file."""
    shutil.copytree(CROSS / "trainer", tmp_path / "src" / "trainer")
    (tmp_path / "src" / "bad.py").write_text(BAD)
    (tmp_path / "src" / "clean.py").write_text("x = 1\n")
    return tmp_path


def files(tree: Path) -> list[Path]:
    return sorted((tree / "src").rglob("*.py"))


def settings(tree: Path, **kw) -> Settings:
    # The calibrated rules report their raw pattern (as in the fixture folders): the findings here
    # are probes of what the cache keeps, whatever the calibration tables say of them.
    return replace(Settings(), cache_dir=str(tree / "cache"), extra=(RAW,), **kw)


def summary(run):
    return [(d.filename, d.location, d.code, d.message, d.fix) for d in run.diagnostics]


def test_warm_run_parses_nothing_and_says_the_same(tree):
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=2, use_cache=True)
    assert cold.stats["analysed"] > 0 and cold.stats["cached"] == 0
    warm = check_files(files(tree), s, jobs=2, use_cache=True)
    assert warm.stats["analysed"] == 0
    assert warm.stats["cached"] == len(files(tree))
    assert summary(warm) == summary(cold)
    assert warm.diagnostics == cold.diagnostics  # fixes and names survive the JSON round trip
    assert warm.sources == cold.sources  # reporters still get the text of flagged files
    assert warm.errors == cold.errors == []


def test_editing_one_file_reanalyses_that_file(tree):
    s = settings(tree)
    check_files(files(tree), s, jobs=1, use_cache=True)
    bad = tree / "src" / "bad.py"
    bad.write_text(BAD.replace("np.ones(3)", "np.zeros(3)"))
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert run.stats["analysed"] == 1
    assert any("np.zeros" in d.message for d in run.diagnostics)


def test_cross_module_facts_are_part_of_the_key(tree):
    """Editing loop.py changes what is traced in ops/math.py, whose text did not change."""
    s = settings(tree)
    first = check_files(files(tree), s, jobs=1, use_cache=True)
    assert any(d.filename.endswith("math.py") and "`normalize`" in d.message for d in first.diagnostics)
    loop = tree / "src" / "trainer" / "loop.py"
    loop.write_text(loop.read_text().replace("step = jax.jit(trainer.normalize)\n", ""))
    second = check_files(files(tree), s, jobs=1, use_cache=True)
    assert not any("`normalize`" in d.message for d in second.diagnostics)
    assert second.stats["analysed"] == 2  # loop.py (edited) and math.py (its map changed)
    # ...and the result is what an uncached run says.
    fresh = check_files(files(tree), replace(Settings(), extra=(RAW,)), jobs=1)
    assert summary(second) == summary(fresh)


def test_configuration_is_part_of_the_key(tree):
    s = settings(tree)
    check_files(files(tree), s, jobs=1, use_cache=True)
    narrowed = replace(s, select=("JF403",))
    run = check_files(files(tree), narrowed, jobs=1, use_cache=True)
    assert run.stats["cached"] == 0
    assert {d.code for d in run.diagnostics} == {"JF403"}
    # The first configuration's entries are still there.
    assert check_files(files(tree), s, jobs=1, use_cache=True).stats["analysed"] == 0


def test_corrupt_entries_are_misses(tree):
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    entries = sorted((tree / "cache").rglob("*.json"))
    assert entries
    for i, entry in enumerate(entries):
        entry.write_text(["{not json", "[]", json.dumps({"format": 1})][i % 3])
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert summary(run) == summary(cold)
    assert run.errors == []


def test_unwritable_cache_is_reported_once(tree):
    blocker = tree / "cache"
    blocker.write_text("a file where the directory should be")
    run = check_files(files(tree), settings(tree), jobs=1, use_cache=True)
    assert len(run.errors) == 1 and "cannot write the cache" in run.errors[0]
    assert any(d.code == "JF201" for d in run.diagnostics)


def test_no_cache_writes_nothing(tree):
    check_files(files(tree), settings(tree), jobs=1, use_cache=False)
    assert not (tree / "cache").exists()


def test_cache_directory_layout(tree):
    s = settings(tree)
    check_files(files(tree), s, jobs=1, use_cache=True)
    root = tree / "cache"
    assert (root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (root / ".gitignore").read_text().splitlines()[-1] == "*"
    # One namespace per tool build and per configuration.
    assert len([p for p in root.iterdir() if p.is_dir()]) == 1


def test_other_versions_caches_go_when_unused_for_a_day(tree):
    """An upgrade (or an edited checkout) starts a new folder; the old ones must not pile up."""
    from jaxfuse_lint.run.cache import MARKER, PRUNE_AFTER_S, tool_fingerprint

    root = tree / "cache"
    stale, recent, other = root / ("a" * 16), root / ("b" * 16), root / "notes"
    unmarked = root / ("c" * 16)  # looks like a version's folder, but this tool did not create it
    for d in (stale, recent, other, unmarked):
        (d / "settings").mkdir(parents=True)
        (d / "settings" / "entry.json").write_text("{}")
        if d.name != "notes" and d is not unmarked:
            (d / MARKER).write_text("")
    long_ago = os.stat(recent).st_mtime - PRUNE_AFTER_S - 60
    for d in (stale, other, unmarked):
        os.utime(d, (long_ago, long_ago))
    check_files(files(tree), settings(tree), jobs=1, use_cache=True)
    assert not stale.exists()
    assert recent.exists() and other.exists()  # in use lately; not a version's folder
    assert unmarked.exists()
    assert (root / tool_fingerprint() / MARKER).is_file()
    assert (root / tool_fingerprint()).is_dir()
    # A later run of the same version writes to its own folder and keeps it fresh.
    mine = root / tool_fingerprint()
    os.utime(mine, (long_ago, long_ago))
    (tree / "src" / "bad.py").write_text(BAD + "# changed\n")
    check_files(files(tree), settings(tree), jobs=1, use_cache=True)
    assert os.stat(mine).st_mtime > long_ago + 60


def test_default_directory():
    assert default_directory(Settings()) == Path(".jaxfuse_lint_cache")
    assert default_directory(replace(Settings(), cache_dir="/x/y")) == Path("/x/y")
    configured = replace(Settings(), config_path="/proj/pyproject.toml", project_root="/proj")
    assert default_directory(configured) == Path("/proj/.jaxfuse_lint_cache")


def test_keys_separate_files_and_modules():
    assert Cache.key("a.py", "d", "a") != Cache.key("b.py", "d", "a")
    assert Cache.key("a.py", "d", "a") != Cache.key("a.py", "d", "pkg.a")
    assert Cache.key("a.py", "d", "a") != Cache.key("a.py", "e", "a")


def test_diagnostic_json_round_trip():
    d = Diagnostic(
        "JF201", "numpy-constant-in-traced-code", "message with `code`", "pkg/m.py", Location(3, 5), Location(3, 9),
        Fix(Applicability.UNSAFE, "Use jnp", (Edit("import jax.numpy as jnp\n", Location(1, 1), Location(1, 1)),
                                             Edit("y\n", Location(3, 1), Location(4, 1)))),
        noqa_row=3,
    )
    assert Diagnostic.from_json(json.loads(json.dumps(d.to_json()))) == d
    syntax = Diagnostic("JF000", "syntax-error", "Could not parse file", "x.py", Location(1, 1), Location(1, 1), noqa_row=1)
    assert Diagnostic.from_json(syntax.to_json()) == syntax


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], cwd=cwd, capture_output=True, text=True,
                          env=env)


def test_cli_cache_options(tree):
    first = _cli("check", "--output-format", "json", "src", cwd=tree)
    assert first.returncode == 1
    assert (tree / ".jaxfuse_lint_cache" / "CACHEDIR.TAG").exists()
    second = _cli("check", "--output-format", "json", "src", cwd=tree)
    assert second.stdout == first.stdout and second.returncode == 1
    other = _cli("check", "--cache-dir", str(tree / "elsewhere"), "--output-format", "json", "src", cwd=tree)
    assert other.stdout == first.stdout
    assert (tree / "elsewhere" / "CACHEDIR.TAG").exists()
    shutil.rmtree(tree / ".jaxfuse_lint_cache")
    none = _cli("check", "--no-cache", "--output-format", "json", "src", cwd=tree)
    assert none.stdout == first.stdout
    assert not (tree / ".jaxfuse_lint_cache").exists()
