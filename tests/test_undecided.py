"""Undecided is a result (issue 41, item 2): patterns seen whose findings rest on an assumed premise
(the preview tier, off by default) are counted in the summary with what they lack, listed with
`--show-undecided`, carried as notes in JSON and SARIF, and kept by the cache."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.report.summary import summary_text

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''\
import flax.linen as nn
import jax


class Pos(nn.Module):
    def __call__(self, length):
        if length > 8:
            return 1
        return 0


@jax.jit
def f(x):
    print(x)
    return x + 1
'''


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"})


def test_the_engine_keeps_what_it_did_not_decide():
    result = check_source(SOURCE, "m.py", Settings())
    assert [d.code for d in result.diagnostics] == ["JF401"]
    (u,) = result.undecided
    assert (u.code, u.location.row) == ("JF402", 7)
    assert [p.status for p in u.premises if p.premise.startswith("traced(")] == ["assumed"]
    assert u.fix is None
    # with the preview tier on, it is a finding, and nothing is left undecided
    preview = check_source(SOURCE, "m.py", Settings(preview=True))
    assert [d.code for d in preview.diagnostics] == ["JF402", "JF401"] and preview.undecided == []


def test_the_summary_counts_them_by_what_they_lack():
    undecided = check_source(SOURCE, "m.py", Settings()).undecided
    text = summary_text([], False, undecided)
    assert text.splitlines()[:2] == [
        "All checks passed!",
        "1 not decided: 1 not shown to be traced.",
    ]
    assert "`jaxfuse-lint record -- <your tests>`" in text and "`--show-undecided` lists them" in text
    assert summary_text([], False, []) == "All checks passed!"


def test_the_command_line(tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    plain = run("check", "--no-cache", "m.py", cwd=tmp_path)
    assert plain.returncode == 1
    assert "1 not decided: 1 not shown to be traced." in plain.stdout
    assert "JF402" not in plain.stdout
    listed = run("check", "--no-cache", "--show-undecided", "m.py", cwd=tmp_path)
    assert "m.py:7:12: JF402 not decided (traced(`length > 8`): assumes `length` is a tracer" in listed.stdout
    data = json.loads(run("check", "--no-cache", "--show-undecided", "--output-format", "json", "m.py",
                          cwd=tmp_path).stdout)
    assert [(d["code"], d.get("undecided", False)) for d in data] == [("JF402", True), ("JF401", False)]
    sarif = json.loads(run("check", "--no-cache", "--show-undecided", "--output-format", "sarif", "m.py",
                           cwd=tmp_path).stdout)
    levels = {r["ruleId"]: (r["level"], r.get("properties", {}).get("undecided")) for r in sarif["runs"][0]["results"]}
    assert levels["JF402"] == ("note", True)
    # undecided patterns never change the exit code
    (tmp_path / "m.py").write_text(SOURCE.split("@jax.jit")[0])
    assert run("check", "--no-cache", "m.py", cwd=tmp_path).returncode == 0


def test_the_cache_keeps_them(tmp_path):
    (tmp_path / "m.py").write_text(SOURCE)
    first = run("check", "--show-undecided", "m.py", cwd=tmp_path)
    second = run("check", "--show-undecided", "m.py", cwd=tmp_path)
    assert first.stdout == second.stdout and "JF402 not decided" in second.stdout


def test_a_notebook_locates_them_in_cells(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    head, tail = SOURCE.split("@jax.jit")
    nb.cells = [nbformat.v4.new_code_cell(head.strip()), nbformat.v4.new_code_cell("@jax.jit" + tail.rstrip())]
    text = nbformat.writes(nb)
    (u,) = check_source(text, "n.ipynb", Settings()).undecided
    assert (u.cell, u.location.row, u.code) == (1, 7, "JF402")
