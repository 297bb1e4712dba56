"""The dtype condition each codemod states, checked on small sources (issue 15): a fix is safe
only when the model proves it; otherwise it is unsafe (or there is none)."""
from __future__ import annotations

import textwrap

import pytest

from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from tests.fixture_harness import rule_settings


def applicability(src: str, code: str) -> list:
    # The fix's conditions, on the rule's raw pattern (a calibrated rule's table decides elsewhere).
    result = check_source(textwrap.dedent(src), "m.py", rule_settings(code))
    assert not result.errors
    return [d.fix.applicability if d.fix else None for d in result.diagnostics if d.code == code]


JF203 = '''
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    rho = {init}
    k2 = jnp.zeros(rho.shape, {dtype}) + 1.0

    def step(i, rho):
        return rho * jnp.exp(-k2)

    return jax.lax.fori_loop(0, 3, step, rho)
'''


@pytest.mark.parametrize("init,dtype,expected", [
    ("x.astype(jnp.float32)", "jnp.float32", Applicability.SAFE),
    ("x.astype(jnp.float32)", "rho.dtype", Applicability.SAFE),     # strong init: the carry keeps its dtype
    ("jnp.arange(3) * 0.5", "rho.dtype", Applicability.UNSAFE),     # weak init: lax may promote the carry
    ("x * 2", "rho.dtype", Applicability.UNSAFE),                   # unknown dtype
])
def test_jf203_reading_a_carry_dtype_needs_a_strong_init(init, dtype, expected):
    assert applicability(JF203.format(init=init, dtype=dtype), "JF203") == [expected]


JF405 = '''
import jax
import jax.numpy as jnp


@jax.jit
def f(x, y, flag):
    n = jnp.prod(jnp.array(x.shape))
{body}
'''


@pytest.mark.parametrize("body,expected", [
    ("    return x.reshape(n)", Applicability.SAFE),
    ("    return x.reshape(n) / n", Applicability.SAFE),  # the reshape always runs: the original never worked
    ("    if flag:\n        return x.reshape(n)\n    return y * n", Applicability.UNSAFE),  # int8 y * n: int32 vs int8
])
def test_jf405_arithmetic_uses_make_the_fix_unsafe(body, expected):
    assert applicability(JF405.format(body=body), "JF405") == [expected]


JF102 = '''
import jax
import jax.numpy as jnp


@jax.jit
def f(x, d{default}):
    kx = jnp.fft.fftfreq(x.shape[0], {d})
    ky = jnp.fft.fftfreq(x.shape[1], {d})
    gx, gy = jnp.meshgrid(kx, ky, indexing="ij")
    return x * (gx + gy)
'''


@pytest.mark.parametrize("d,expected,cast", [
    ("2", Applicability.SAFE, False),      # int spacing: the quotient is already a strong float
    ("0.5", Applicability.SAFE, True),     # float spacing: weakly typed quotient, cast back to strong
    ("d", Applicability.UNSAFE, True),     # a parameter: could be an array of any dtype
])
def test_jf102_spacing_must_be_a_python_number(d, expected, cast):
    src = JF102.format(d=d, default="=1.0")
    assert applicability(src, "JF102") == [expected]
    out = fix_source(textwrap.dedent(src), "m.py", rule_settings("JF102"), unsafe=True).source
    assert (".astype(float)" in out) == cast


def test_jf102_fixed_grid_keeps_dtype_and_weak_type():
    jax = pytest.importorskip("jax")
    import numpy as np

    src = textwrap.dedent(JF102.format(d="0.5", default="=1.0"))
    out = fix_source(src, "m.py", rule_settings("JF102")).source
    x = jax.numpy.ones((5, 4), jax.numpy.float16)
    results = []
    for text in (src, out):
        ns: dict = {}
        exec(compile(text, "m.py", "exec"), ns)
        r = ns["f"](x, 0.5)
        results.append((r.dtype, r.weak_type, np.asarray(r)))
    # fftfreq is a strong float32: x (float16) * grid is float32; a weakly typed grid would give float16
    assert results[0][:2] == results[1][:2] == (np.dtype("float32"), False)
    np.testing.assert_array_equal(results[0][2], results[1][2])
