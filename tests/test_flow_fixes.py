"""Fixes that follow the model's propagated sizes (JF101) and chains of bindings (JF203).

Numerics: the fixed fixtures compute what the originals compute, also on inputs with NaN
and with size-1 leading axes (inputs the original rejects are skipped). Proofs: the
promised drop in kernels / temporaries, compiled on CPU (jax 0.10.2):

  JF203 kmesh_chain, rho f32[32,32,32]:       6 -> 5 kernels, 131201 B -> 129 B temp
  JF203 kmesh_with_where, rho f32[32,32,32]:  6 -> 5 kernels, 131201 B -> 129 B temp
  JF101 joined, f32[65536,2] + f32[65536,1]:  2 -> 1 kernels
  JF101 transposed, x f32[3,65536]:           3 -> 1 kernels, 786432 B -> 0 temp
  JF101 spectrum_power, u f32[64,64,2]:       4 -> 3 kernels
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.test_codemods_numerics import assert_same, load_module, make_arg
from tests.test_codemods_proofs import fixed, kernels, load, probe, temp_bytes

jax = pytest.importorskip("jax")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = [("JF101", "fix_propagated_sizes.py", False), ("JF203", "fix_chain.py", False),
         ("JF203", "fix_chain.py", True)]


def _variants(specs: list[str], rng):
    """The spec's inputs with NaN in them, and with a size-1 leading axis."""
    base = [make_arg(s, rng) for s in specs]
    with_nan = []
    for a in base:
        a = np.array(a)
        if a.dtype.kind in "fc" and a.size:
            a.reshape(-1)[:: max(1, a.size // 3)] = np.nan
        with_nan.append(a)
    ones = []
    for s in specs:
        dtype, _, rest = s.partition("[")
        dims = [d for d in rest.rstrip("]").split(",") if d.strip()]
        if dims:
            dims[0] = "1"
        ones.append(make_arg(f"{dtype}[{','.join(dims)}]", rng))
    return {"nan": with_nan, "size-1": ones}


@pytest.mark.parametrize("code,name,unsafe", CASES, ids=[f"{c}/{n}{'-unsafe' if u else ''}" for c, n, u in CASES])
def test_fixed_functions_agree_on_nan_and_size_one_inputs(code, name, unsafe, tmp_path):
    from jaxfuse_lint.engine.pipeline import fix_source
    from tests.fixture_harness import rule_settings

    src = FIXTURES / code / name
    outcome = fix_source(src.read_bytes(), str(src), rule_settings(code), unsafe=unsafe)
    assert outcome.changed
    fixed_path = tmp_path / name
    fixed_path.write_text(outcome.source)
    before, after = load_module(src), load_module(fixed_path)
    rng = np.random.default_rng(1)
    checked = 0
    for fname, specs in before.VERIFY.items():
        for label, args in _variants(specs, rng).items():
            try:
                expected = jax.tree.map(np.asarray, jax.jit(getattr(before, fname))(*args))
            except Exception:
                continue  # an input the original rejects
            got = jax.tree.map(np.asarray, jax.jit(getattr(after, fname))(*args))
            assert_same(expected, got, f"{name}::{fname} ({label})")
            checked += 1
    assert checked >= len(before.VERIFY)


def _compile(source: str, name: str, *args):
    return jax.jit(load(source)[name]).lower(*args).compile()


def test_jf203_chain_moves_the_kmesh_into_the_loop_and_drops_the_temporary():
    src = (FIXTURES / "JF203" / "fix_chain.py").read_text()
    after = fixed(src, "JF203", raw=True)  # a fix fixture: the raw pattern (as tests/fixture_harness.py runs it)
    assert ("    def step(i, rho):\n        ix, iy, iz = jnp.indices(rho.shape)\n"
            "        k2 = ix**2 + iy**2 + iz**2\n") in after
    rho = probe(32, 32, 32)
    for name in ("kmesh_chain", "kmesh_with_where"):
        cb, ca = _compile(src, name, rho), _compile(after, name, rho)
        assert (kernels(cb), kernels(ca)) == (6, 5), name
        assert temp_bytes(cb) > 32 ** 3 * 4 and temp_bytes(ca) < 1024, name


def test_jf101_fixes_with_propagated_sizes_fuse():
    src = (FIXTURES / "JF101" / "fix_propagated_sizes.py").read_text()
    # unsafe: the operands' dtypes are unknown; raw: a fix fixture (the pattern, as the fixture harness runs it)
    after = fixed(src, "JF101", unsafe=True, raw=True)
    a, b = probe(65536, 2), probe(65536, 1, seed=1)
    assert (kernels(_compile(src, "joined", a, b)), kernels(_compile(after, "joined", a, b))) == (2, 1)
    x = probe(3, 65536)
    cb, ca = _compile(src, "transposed", x), _compile(after, "transposed", x)
    assert (kernels(cb), kernels(ca)) == (3, 1)
    assert temp_bytes(cb) == 3 * 65536 * 4 and temp_bytes(ca) == 0
    u = probe(64, 64, 2)
    assert (kernels(_compile(src, "spectrum_power", u)), kernels(_compile(after, "spectrum_power", u))) == (4, 3)


CAPTURED = '''
import jax
import jax.numpy as jnp

K = jnp.linspace(0.0, 1.0, 65536)


@jax.jit
def captured(x):
    return x * K


@jax.jit
def passed(x, k):
    return x * k
'''


def test_jf207_a_captured_jax_array_is_a_folded_constant():
    """The figure on JF207's page: 256 KiB of folded constants captured, none passed."""
    from jaxfuse_lint.engine.pipeline import check_source
    from tests.fixture_harness import rule_settings
    from tests.test_codemods_proofs import folded_constant_bytes

    codes = [d.code for d in check_source(CAPTURED, "captured.py", rule_settings("JF207")).diagnostics]
    assert codes == ["JF207"]
    ns = load(CAPTURED)
    x = probe(65536)
    assert folded_constant_bytes(jax.jit(ns["captured"]).lower(x).compile()) == 65536 * 4
    assert folded_constant_bytes(jax.jit(ns["passed"]).lower(x, ns["K"]).compile()) == 0
