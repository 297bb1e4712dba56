"""`explain`'s text speaks about the user's code: only the user's own frames (no site-packages,
pytest, pluggy, runpy or click frames), no docstring rows, and it fits 100 columns."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from jaxfuse_lint.verify.attribution import Attribution, KernelAccount, LineAccount
from jaxfuse_lint.runtime.explain import Explanation, kernel_list, render_text, user_file

MODULE = '''import jax.numpy as jnp


def helper(v):
    return jnp.sin(v) * 2


def step(x):
    """Advance the state.

    A docstring of several lines: it runs nothing.
    """
    y = helper(x) + 1
    return jnp.sum(y, axis=0)
'''


@pytest.fixture
def account(tmp_path):
    src = tmp_path / "model.py"
    src.write_text(MODULE)
    lib = "/usr/lib/python3.11/site-packages"
    f = str(src)
    caller = [f"{tmp_path}/test_model.py:7", f"{lib}/_pytest/python.py:159", f"{lib}/pluggy/_callers.py:103",
              "<frozen runpy>:88", f"{lib}/click/core.py:1078"]
    stacks = {
        "K1": [[f"{f}:5", f"{f}:13", *caller]],
        "K2": [[f"{f}:14", *caller], [f"{lib}/jax/_src/numpy/reductions.py:220", f"{f}:14", *caller]],
    }
    stacks.update({f"K{i}": [[f"{f}:13", *caller]] for i in range(3, 31)})
    kernels = [KernelAccount(name=name, kind="fusion:kLoop", computation="main", shape="f32[8]", loop_depth=0,
                             launches=1, lines=sorted({k for st in sts for k in st}), own_lines=[sts[0][0]],
                             stacks=sts)
               for name, sts in stacks.items()]
    lines = {}
    for k in kernels:
        for key in k.lines:
            file, _, row = key.rpartition(":")
            acc = lines.setdefault(key, LineAccount(file=file, line=int(row), function="f", text="code"))
            acc.kernels.append(k.name)
    return src, Attribution(module="m", kernels=kernels, lines=list(lines.values()), temp_source="kernel outputs")


def explanation(src, attribution):
    return Explanation(target=f"{src}::step", file=str(src), func="step", first_line=8, last_line=14,
                       attribution=attribution, args=["f32[8]"])


def test_only_the_users_own_callees_are_listed(account):
    src, attribution = account
    e = explanation(src, attribution)
    assert [(a.file, a.line) for a in e.other_lines()] == [(str(src), 5)]  # helper: not the test, not pytest
    text = render_text(e).replace(str(src.parent), "DIR")  # tmp_path's own name holds "pytest"
    for word in ("site-packages", "pytest", "pluggy", "runpy", "click", "test_model.py"):
        assert word not in text
    assert "lines: L13; in helpers: L5" in text


def test_no_docstring_rows_and_100_columns(account):
    src, attribution = account
    text = render_text(explanation(src, attribution)).replace(str(src.parent), "DIR")
    assert "Advance the state" not in text and "runs nothing" not in text
    assert "    8  " in text and "   13  " in text  # the def line and the body stay
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "K3-K30" in text or "+" in text  # 29 kernels on one line are abbreviated


def test_kernel_lists_are_ranges_cut_to_a_width():
    ids = {f"k{i}": f"K{i}" for i in range(1, 40)}
    assert kernel_list(["k1", "k2", "k3", "k7"], ids) == "K1-K3 K7"
    cut = kernel_list([f"k{i}" for i in range(1, 40, 2)], ids)
    assert len(cut) <= 18 and cut.endswith(tuple(f"+{n}" for n in range(1, 40)))


def test_user_files():
    import pytest as p

    assert not user_file(p.__file__) and not user_file("<frozen runpy>") and not user_file(json.__file__)
    assert user_file("/home/me/project/model.py") and user_file("<ipython-input-3-abc>")


def test_a_helper_recorded_inside_an_entry_is_explained_from_that_entrys_account(account, tmp_path, monkeypatch):
    src, attribution = account
    monkeypatch.chdir(tmp_path)
    profile = {"format": "jaxfuse-lint-profile", "version": 1,
               "entries": [{"file": "model.py", "qualname": "step", "line": 8,
                            "compilations": [{"where": "test_model.py::test_step", "costs": attribution.to_json()}]}]}
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    from jaxfuse_lint.cli.main import cli

    result = CliRunner().invoke(cli, ["explain", "--profile", "profile.json", "model.py::helper"])
    assert result.exit_code == 0, result.output
    assert "model.py::helper" in result.output and "was traced inside `step`" in result.output
    missing = CliRunner().invoke(cli, ["explain", "--profile", "profile.json", "model.py::nothing"])
    assert missing.exit_code == 2 and "no function `nothing`" in missing.output
    profile["entries"][0]["compilations"][0]["costs"] = None
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    result = CliRunner().invoke(cli, ["explain", "--profile", "profile.json", "model.py::step"])
    assert result.exit_code == 2 and "was traced while recording, but the profile keeps no per-line account" \
        in result.output
    assert "was it traced" not in result.output
