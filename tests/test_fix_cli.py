"""`jaxfuse-lint --fix` end to end: the acceptance corpus, writes, --diff, noqa, applicability."""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from tests.test_codemods_numerics import assert_same, changed_functions, load_module, run

ROOT = Path(__file__).resolve().parent.parent
ACCEPTANCE = ROOT.parent / "shared" / "acceptance"
CORE = "JF101,JF201,JF203,JF301"

# Inputs for every function of the acceptance corpus that a core fix may change.
ACCEPTANCE_SPECS = {
    "a01_fusion_notebook.py": {
        "f_sum_jax": ["f32[64,2]"], "f_filter_with_temp": ["f32[8,8,8]"], "f_numpy": ["f32[16,2]"],
        "f_cse_loop_expl": ["f32[16,2]"],
    },
    "a02_jit_docs.py": {
        "g_inner_jitted_partial": ["f32[3]", "py:3"], "g_inner_jitted_lambda": ["f32[3]", "py:3"],
        "g_inner_jitted_normal": ["f32[3]", "py:3"],
    },
}


def invoke(*args: str):
    result = CliRunner().invoke(cli, [*args, "--no-cache"], catch_exceptions=False)
    return result


def diagnostics(path: Path, select: str) -> list[dict]:
    result = invoke("check", str(path), "--select", select, "--output-format", "json", "--exit-zero")
    return json.loads(result.stdout)


@pytest.fixture
def corpus(tmp_path):
    if not ACCEPTANCE.is_dir():
        pytest.skip("the shared acceptance corpus is not available")
    target = tmp_path / "acceptance"
    target.mkdir()
    for f in ACCEPTANCE.glob("a*.py"):
        shutil.copyfile(f, target / f.name)  # not its mode: the shared corpus may be stored read-only
    return target


def test_fix_rewrites_every_safe_core_finding_of_the_acceptance_corpus(corpus, tmp_path):
    original = tmp_path / "original"
    shutil.copytree(corpus, original)
    before = diagnostics(corpus, CORE)
    safe = [d for d in before if d["fix"] and d["fix"]["applicability"] == "safe"]
    # The three jitted loops of a02 (JF301). f_sum_jax's fix is unsafe (x's dtype is not declared: a weakly
    # typed x would give a weakly typed sum), and so is f_numpy's (`** 2.3` in float32); the captured grids of
    # f_filter_with_temp and f_cse_loop_expl (JF203) are in the preview tier, with no fix: their size is not
    # known statically, and the default (h100) table shows the harm only from 4,096 elements.
    assert len(safe) >= 3
    assert [d["code"] for d in safe if d["filename"].endswith("a02_jit_docs.py")] == ["JF301"] * 3

    result = invoke(str(corpus), "--fix", "--select", CORE)
    assert f"Fixed {len(safe)} diagnostic" in result.stdout, result.output

    after = diagnostics(corpus, CORE)
    assert not [d for d in after if d["fix"] and d["fix"]["applicability"] == "safe"]
    assert len(after) == len(before) - len(safe)

    # The fixed modules import and compute what the originals compute.
    for name, specs in ACCEPTANCE_SPECS.items():
        src, fixed = original / name, corpus / name
        changed = {n for n in changed_functions(src, fixed)}
        assert changed <= set(specs), f"no specs for the changed {sorted(changed - set(specs))} of {name}"
        mod_b, mod_a = load_module(src), load_module(fixed)
        for func in changed:
            assert_same(run(getattr(mod_b, func), specs[func]), run(getattr(mod_a, func), specs[func]),
                        f"{name}::{func}")
    assert (corpus / "a03_negatives.py").read_bytes() == (original / "a03_negatives.py").read_bytes()

    # A second --fix is a no-op.
    snapshot = {f.name: f.read_bytes() for f in corpus.iterdir()}
    again = invoke(str(corpus), "--fix", "--select", CORE)
    assert "Fixed 0 diagnostics" in again.stdout
    assert {f.name: f.read_bytes() for f in corpus.iterdir()} == snapshot


# A form the default calibration tables report (the notebook's f_sum_jax: a `jnp.stack` broadcast back),
# with its dtype declared (float32) so that the fix is safe.
SOURCE = (
    "import jax\n"
    "import jax.numpy as jnp\n"
    "from jaxtyping import Array, Float32\n"
    "\n"
    "\n"
    "@jax.jit\n"
    "def f(x: Float32[Array, 'n'], y: Float32[Array, 'n'], z: Float32[Array, 'n']):\n"
    "    v = jnp.stack([x, y, z], axis=-1)\n"
    "    return v * jnp.sum(v * v, axis=-1, keepdims=True)\n"
)
REDUCTION = "v * jnp.sum(v * v, axis=-1, keepdims=True)"
UNROLLED = (
    "    v_sum = (\n"
    "        v[..., 0] * v[..., 0]\n"
    "        + v[..., 1] * v[..., 1]\n"
    "        + v[..., 2] * v[..., 2]\n"
    "    )[..., None]\n"
)
FIXED = SOURCE.replace(f"    return {REDUCTION}\n", UNROLLED + "    return v * v_sum\n")


def test_diff_prints_the_fix_and_writes_nothing(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    mtime = path.stat().st_mtime_ns
    result = invoke(str(path), "--diff", "--select", "JF101")
    assert result.exit_code == 1
    assert f"-    return {REDUCTION}" in result.stdout
    assert "+        v[..., 0] * v[..., 0]" in result.stdout and "+    return v * v_sum" in result.stdout
    assert path.read_text() == SOURCE and path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_fix_writes_atomically_and_keeps_the_file_mode(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    os.chmod(path, 0o754)
    invoke(str(path), "--fix", "--select", "JF101")
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o754
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]  # no temporary file left behind


def test_fix_keeps_crlf_newlines(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(SOURCE.replace("\n", "\r\n").encode())
    invoke(str(path), "--fix", "--select", "JF101")
    data = path.read_bytes()
    assert data == FIXED.replace("\n", "\r\n").encode()
    assert b"\n" not in data.replace(b"\r\n", b"")


def test_fix_keeps_a_latin1_coding_cookie(tmp_path):
    path = tmp_path / "m.py"
    text = "# -*- coding: latin-1 -*-\n" + SOURCE.replace("@jax.jit", "# café, naïve\n@jax.jit")
    path.write_bytes(text.encode("latin-1"))
    invoke(str(path), "--fix", "--select", "JF101")
    data = path.read_bytes()
    assert "café, naïve".encode("latin-1") in data
    assert data.decode("latin-1") == text.replace(f"    return {REDUCTION}\n", UNROLLED + "    return v * v_sum\n")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


def test_unparsable_files_are_left_alone(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import jax\ndef f(x:\n    return jnp.sum(x, axis=-1)\n")
    good = tmp_path / "good.py"
    good.write_text(SOURCE)
    before = broken.read_bytes()
    result = invoke(str(tmp_path), "--fix", "--select", "JF101")
    assert broken.read_bytes() == before
    assert good.read_text() == FIXED
    assert "JF000" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py", "good.py"]


def test_noqa_suppresses_the_fix(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE.replace(f"    return {REDUCTION}\n", f"    w = {REDUCTION}  # noqa: JF101\n"
                                   f"    u = w + {REDUCTION}  # noqa\n"
                                   f"    return u + {REDUCTION}\n"))
    invoke(str(path), "--fix", "--select", "JF101")
    text = path.read_text()
    assert f"    w = {REDUCTION}  # noqa: JF101\n" in text
    assert f"    u = w + {REDUCTION}  # noqa\n" in text
    assert UNROLLED + "    return u + v * v_sum\n" in text


# A reduction captured by a loop body, at a size the default tables report (JF203); not cheap to
# recompute, so its fix is unsafe.
UNSAFE = '''import jax
import jax.numpy as jnp
from jaxtyping import Array, Float32


@jax.jit
def f(x: Float32[Array, "8 4096"]):
    energy = jnp.sum(x * x, axis=0)

    def step(i, c):
        return c + energy

    return jax.lax.fori_loop(0, 3, step, x)
'''


def test_unsafe_fixes_need_the_flag(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(UNSAFE)
    result = invoke(str(path), "--fix", "--select", "JF203")
    assert path.read_text() == UNSAFE
    assert "Fixed 0 diagnostics" in result.stdout
    result = invoke(str(path), "--fix", "--unsafe-fixes", "--show-fixes", "--select", "JF203")
    assert "    def step(i, c):\n        energy = jnp.sum(" in path.read_text()
    assert "JF203" in result.stdout and "Fixed 1 diagnostic" in result.stdout


def test_check_reports_fix_availability(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(SOURCE + "\n\n" + UNSAFE.split("\n\n\n", 1)[1].replace("def f(", "def g("))
    result = invoke("check", str(path), "--output-format", "json", "--exit-zero", "--select", "JF101,JF203")
    found = {d["code"]: d["fix"]["applicability"] for d in json.loads(result.stdout) if d["fix"]}
    assert found == {"JF101": "safe", "JF203": "unsafe"}
