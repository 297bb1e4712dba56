"""Worker processes: the same output for any number of them, and one file's crash, hang or
internal error never takes the run down."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import jaxfuse_lint.run.pool as pool
import jaxfuse_lint.run.worker as worker
from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.run.runner import check_files, fix_files

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the monkeypatches reach workers through fork")


@pytest.fixture(autouse=True)
def forked_workers(monkeypatch):
    """The sabotage below reaches the workers only if they are forked from this process.
    The runner avoids fork once jax is imported (other tests import it); these workers
    never touch jax, so fork is safe for them."""
    monkeypatch.setattr(pool, "start_method", lambda: "fork")

TEMPLATE = """\
import jax
import numpy as np

LOG = []


@jax.jit
def f{i}(x):
    LOG.append(x)
    return x + np.eye({i} + 32)
"""


@pytest.fixture
def many(tmp_path):
    paths = []
    for i in range(12):
        p = tmp_path / f"m{i:02d}.py"
        p.write_text(TEMPLATE.format(i=i) if i % 3 else "x = 1\n")
        paths.append(p)
    (tmp_path / "broken.py").write_text("import jax\ndef f(:\n")
    paths.append(tmp_path / "broken.py")
    return paths


def snapshot(run):
    return ([(d.filename, d.location, d.end_location, d.code, d.message, d.fix) for d in run.diagnostics],
            run.errors, [r.filename for r in run.results])


def test_output_does_not_depend_on_the_number_of_workers(many):
    base = snapshot(check_files(many, Settings(), jobs=1))
    assert len(base[0]) == 2 * 8 + 1  # JF201 + JF403 in each JAX file, JF000 in broken.py
    for jobs in (2, 5):
        assert snapshot(check_files(many, Settings(), jobs=jobs)) == base
    # Results come back in input order, whatever order the workers finish in.
    assert snapshot(check_files(many, Settings(), jobs=3))[2] == [str(p) for p in many]


def test_fix_output_does_not_depend_on_the_number_of_workers(many):
    one = fix_files(many, Settings(), unsafe=False, jobs=1)
    two = fix_files(many, Settings(), unsafe=False, jobs=3)
    assert [(o.filename, o.source) for o in one.fixes] == [(o.filename, o.source) for o in two.fixes]
    assert any(o.changed for o in one.fixes)


def _sabotage(monkeypatch, victim: str, action):
    real = worker.analyse

    def analyse(task, settings):
        if task.filename.endswith(victim):
            action()
        return real(task, settings)

    monkeypatch.setattr(worker, "analyse", analyse)


def test_a_crashing_worker_costs_one_file(many, monkeypatch):
    _sabotage(monkeypatch, "m04.py", lambda: os.kill(os.getpid(), signal.SIGSEGV))
    run = check_files(many, Settings(), jobs=2)
    assert run.stats["crashed"] == 1
    assert [e for e in run.errors if "m04.py" in e] == [
        f"{many[4]}: internal error: the file could not be analysed: the worker process died (SIGSEGV)"]
    assert len(run.errors) == 1
    # Every other JAX file still has its two findings.
    flagged = {Path(d.filename).name for d in run.diagnostics}
    assert flagged == {p.name for i, p in enumerate(many[:12]) if i % 3 and i != 4} | {"broken.py"}


def test_a_crash_on_invalid_code_is_a_syntax_error(many, monkeypatch):
    # If the parser dies on a file that CPython rejects too, the file gets JF000.
    _sabotage(monkeypatch, "broken.py", lambda: os._exit(3))
    run = check_files(many, Settings(), jobs=2)
    assert run.errors == []
    [d] = [d for d in run.diagnostics if d.filename.endswith("broken.py")]
    assert d.code == "JF000" and d.location.row == 2


def test_a_hanging_file_times_out(many, monkeypatch):
    _sabotage(monkeypatch, "m05.py", lambda: time.sleep(120))
    started = time.monotonic()
    # 15 s: far above what analysing a small file takes even on a loaded 2-core machine, far below the hang.
    run = check_files(many, Settings(), jobs=2, timeout=15)
    assert time.monotonic() - started < 110
    assert run.errors == [f"{many[5]}: internal error: the file could not be analysed: it took longer than 15 s"]
    assert sum(1 for d in run.diagnostics if d.filename.endswith("m07.py")) == 2


def test_an_exception_in_the_worker_loop_is_reported(many, monkeypatch):
    def boom():
        raise RuntimeError("synthetic")

    _sabotage(monkeypatch, "m02.py", boom)
    run = check_files(many, Settings(), jobs=2)
    assert run.errors == [f"{many[2]}: internal error: RuntimeError: synthetic"]
    assert sum(1 for d in run.diagnostics if d.filename.endswith("m01.py")) == 2


def test_a_broken_rule_is_reported_with_rule_and_file(many, monkeypatch, tmp_path):
    """An internal error in one rule on one file: reported with both, the other rules and
    files unaffected; the file was not fully checked, so the run exits 2 (ruff's code for an
    internal error) and names it (issue 42, item 4: before, it exited 1, or 0 without findings)."""
    from jaxfuse_lint.rules import all_rules

    [rule] = [r for r in all_rules() if r.code == "JF403"]
    real = type(rule).check

    def check(self, model, settings):
        if "m07" in str(model.module.code):  # only on one file
            raise ValueError("rule bug")
        yield from real(self, model, settings)

    monkeypatch.setattr(type(rule), "check", check)
    (tmp_path / "m07.py").write_text(TEMPLATE.format(i=7).replace("LOG = []", "LOG = []  # m07"))
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--output-format", "concise", "-j", "2", str(tmp_path)])
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if "internal error" in line and "not checked" not in line]
    assert len(errors) == 1
    assert "1 file not checked (an internal error stopped the analysis; see above): " in result.output
    assert "m07.py: internal error in JF403 (side-effect-in-traced-code): ValueError: rule bug" in errors[0]
    m07 = [line for line in result.output.splitlines() if "m07.py:" in line and "internal error" not in line]
    assert [line.split()[1] for line in m07] == ["JF201"]  # JF201 still ran on that file
    assert sum(1 for line in result.output.splitlines() if "m08.py:" in line) == 2  # and JF403 elsewhere


def test_jobs_option(many, tmp_path):
    for args in (["-j", "1"], ["--jobs", "3"], []):
        result = CliRunner().invoke(cli, ["check", "--no-cache", *args, str(tmp_path)])
        assert result.exit_code == 1
    result = CliRunner().invoke(cli, ["check", "--no-cache", "-j", "-1", str(tmp_path)])
    assert result.exit_code == 2
