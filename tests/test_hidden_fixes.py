"""Fixes only `--unsafe-fixes` applies are never silent: every fix mode and `verify` count them
and say why each is unsafe (what would make it safe); a fix's title is one short line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent

# The only finding's fix is unsafe: `x`'s dtype is not declared (a bool or narrow int `x` would
# make `jnp.sum` count in int32 where `+` does not).
ONLY_UNSAFE = '''import jax
import jax.numpy as jnp


def weights(n):
    return jnp.stack((jnp.arange(0, n), jnp.arange(0, n)), axis=-1)


@jax.jit
def weighted_offset(x):
    w = weights(len(x))
    return x * 2 + jnp.sum(w * x, axis=1, keepdims=True)
'''

# A safe fix elsewhere in the file (a short loop unrolled), the unsafe one inside weighted_offset.
WITH_SAFE_ELSEWHERE = ONLY_UNSAFE + '''

@jax.jit
def four_steps(x):
    def add_x(i, x):
        return x * x + 1

    return jax.lax.fori_loop(0, 4, add_x, x)
'''


def invoke(*args: str):
    return CliRunner().invoke(cli, [*args, "--no-cache"], catch_exceptions=False)


@pytest.fixture
def only_unsafe(tmp_path):
    path = tmp_path / "f.py"
    path.write_text(ONLY_UNSAFE)
    return path


@pytest.mark.parametrize("mode", [["--diff"], ["--fix"], ["--fix-only"]])
def test_fix_modes_count_the_hidden_fixes_and_say_why_each_is_unsafe(only_unsafe, mode):
    result = invoke("check", str(only_unsafe), *mode)
    assert only_unsafe.read_text() == ONLY_UNSAFE  # nothing safe to do
    # After a --diff patch on stderr; after --fix's report on stdout.
    err = result.stderr if mode == ["--diff"] else result.stdout
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option" in err
    assert "JF101 Unroll `sum` over axis 1 (size 2) into 2 explicit terms" in err
    # What would make it safe: the declaration the fix's detail names.
    flat = " ".join(err.split())
    assert "the dtype of `w * x` is unknown" in flat and "(declare it:" in flat
    assert max(len(line) for line in err.splitlines() if line.startswith("    ")) <= 100


def test_no_hint_when_unsafe_fixes_are_on_or_there_are_none(only_unsafe, tmp_path):
    result = invoke("check", str(only_unsafe), "--diff", "--unsafe-fixes")
    assert "hidden fix" not in result.stderr and "+    return x * 2 +" in result.stdout
    clean = tmp_path / "clean.py"
    clean.write_text("import jax.numpy as jnp\n\n\ndef f(x):\n    return jnp.sin(x)\n")
    assert "hidden fix" not in invoke("check", str(clean), "--fix").output


def test_quiet_fix_prints_no_hint(only_unsafe):
    assert "hidden" not in invoke("check", str(only_unsafe), "--fix", "-q").output


def test_fix_titles_are_one_short_line_and_the_reasoning_is_the_detail():
    result = invoke("check", str(ROOT / "fixtures"), "--output-format", "json", "--exit-zero")
    fixes = [d["fix"] for d in json.loads(result.stdout) if d["fix"]]
    assert len(fixes) > 50
    for fix in fixes:
        assert "\n" not in fix["message"] and len(fix["message"]) <= 90, fix["message"]
    unsafe = [f for f in fixes if f["applicability"] == "unsafe"]
    # The reasons are the detail: every unsafe fix says why it is unsafe.
    silent = [f["message"] for f in unsafe if "unsafe: " not in f.get("detail", "")]
    assert not silent, silent
    assert any("declare it" in f.get("detail", "") for f in unsafe)


def test_full_output_shows_the_title_then_the_reason(only_unsafe):
    out = invoke("check", str(only_unsafe), "--output-format", "full").stdout
    lines = out.splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith("  unsafe fix: "))
    assert lines[i] == "  unsafe fix: Unroll `sum` over axis 1 (size 2) into 2 explicit terms"
    assert lines[i + 1].startswith("    unsafe: the dtype of `w * x` is unknown")


def test_split_of_a_codemod_message():
    from jaxfuse_lint.core.diagnostics import split_fix_message

    assert split_fix_message("Do it; because `a; b` matters; and more") == ("Do it", "because `a; b` matters; and more")
    assert split_fix_message("Use `x; y` here") == ("Use `x; y` here", "")


def test_verify_says_an_unsafe_fix_is_inside_the_function(tmp_path):
    pytest.importorskip("jax")
    from jaxfuse_lint.runtime.verify_fixed import verify_fixed_file

    path = tmp_path / "f.py"
    path.write_text(ONLY_UNSAFE)
    result = verify_fixed_file(ONLY_UNSAFE, str(path), "weighted_offset", ["f32[8,2]"])
    assert result.verdict == "unchanged"
    assert result.summary() == (f"no safe fix applies to {path}; `--unsafe-fixes` would apply 1 "
                                "(inside `weighted_offset`)")
    assert any(n.startswith("JF101 Unroll `sum`") and "declare it" in n for n in result.notes)
    assert not any("no fix is inside" in n for n in result.notes)


def test_verify_with_a_safe_fix_elsewhere_names_the_unsafe_one_inside(tmp_path):
    pytest.importorskip("jax")
    from jaxfuse_lint.runtime.verify_fixed import verify_fixed_file

    path = tmp_path / "f.py"
    path.write_text(WITH_SAFE_ELSEWHERE)
    result = verify_fixed_file(WITH_SAFE_ELSEWHERE, str(path), "weighted_offset", ["f32[8,2]"])
    assert [f["code"] for f in result.fixes] == ["JF103"]
    assert "no safe fix is inside `weighted_offset` itself (1 elsewhere in the file)" in result.notes
    assert "`--unsafe-fixes` would apply 1 more fix (inside `weighted_offset`)" in result.notes
    assert not any(n.startswith("no fix is inside") for n in result.notes)


def test_github_annotations_name_the_command_that_applies_the_fix(only_unsafe, tmp_path):
    out = invoke("check", str(only_unsafe), "--output-format", "github", "--exit-zero").stdout
    assert "unsafe fix available: Unroll `sum`" in out and "(jaxfuse-lint --fix --unsafe-fixes; review it)" in out
    assert "(jaxfuse-lint --fix)" not in out
    safe = tmp_path / "g.py"
    safe.write_text(WITH_SAFE_ELSEWHERE)
    out = invoke("check", str(safe), "--output-format", "github", "--exit-zero", "--select", "JF103").stdout
    assert "%0Afix available: Unroll the 4-step loop (`unroll=True`) (jaxfuse-lint --fix)" in out
