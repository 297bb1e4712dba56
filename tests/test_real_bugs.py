"""The true-positive categories of issue 35 happen in JAX: each fixture's positives are run with the
installed jax (the bug shows) and, where the rule has a fix, the fixed file runs and gives the
values the code meant."""
from __future__ import annotations

import contextlib
import io
import os
import runpy
from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def run_file(path: Path) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):
        return runpy.run_path(str(path), run_name="fixture")


def rows(path: Path, code: str, preview: bool = False) -> list[int]:
    settings = replace(Settings(), select=(code,), preview=preview)
    return [d.location.row for d in check_source(path.read_bytes(), str(path), settings).diagnostics]


# -- JF406: NumPy on a tracer raises while tracing; the jnp namesake computes the value ---------------
JF406_CALLS = {
    "energy": lambda ns, x: ns["energy"](x),
    "as_host_array": lambda ns, x: ns["as_host_array"](x, x),
    "clipped": lambda ns, x: ns["clipped"](x, 2),
    "relu_steps": lambda ns, x: ns["relu_steps"](x),
    "norms": lambda ns, x: ns["norms"](jnp.stack([x, x])),
    "Scheme.step": lambda ns, x: ns["Scheme"]().step(x),
    "traced_exp": lambda ns, x: ns["traced_exp"](x),
}


@pytest.mark.parametrize("name", sorted(JF406_CALLS))
def test_jf406_positives_raise_and_the_fix_computes_what_numpy_meant(name):
    x = jnp.array([-1.5, 0.25, 2.0])
    before = run_file(FIXTURES / "JF406" / "positives.py")
    with pytest.raises(jax.errors.TracerArrayConversionError):
        JF406_CALLS[name](before, x)
    after = run_file(FIXTURES / "JF406" / "positives.unsafe.py")
    got = np.asarray(JF406_CALLS[name](after, x))
    # The NumPy meaning: the same function run eagerly on a host array (jit disabled).
    with jax.disable_jit():
        want = np.asarray(JF406_CALLS[name](after, np.asarray(x)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_jf406_negatives_run_under_jit():
    ns = run_file(FIXTURES / "JF406" / "negatives.py")
    ns["run"](jnp.ones((2, 3)))


# -- JF404: values frozen into a program, whatever their origin ---------------------------------------
def test_jf404_values_rebound_from_the_programs_own_outputs_stay_frozen():
    path = FIXTURES / "JF404" / "rebound_from_outputs.py"
    ns = run_file(path)
    np.testing.assert_allclose(ns["field"], 128.0)  # the first `eps2_x` (4.0) three times
    np.testing.assert_allclose(ns["solve"](jnp.full(4, 2.0), 3), 128.0)  # 134217728.0 if not frozen
    np.testing.assert_allclose(ns["main"](jnp.ones(4)), 1.0)  # 64.0 if not frozen
    assert rows(path, "JF404") == [21, 21, 41, 54]


def test_jf404_object_attributes_stay_frozen_and_the_gradient_is_lost():
    path = FIXTURES / "JF404" / "object_attributes.py"
    ns = run_file(path)
    bar = ns["Bar"](1.0)
    assert float(bar.energy(2.0)) == 2.0
    bar.E = 3.0
    assert float(bar.energy(2.0)) == 2.0  # 6.0 expected by the code
    fresh = ns["Bar"](1.0)
    fresh.energy(1.0)

    def loss(E):
        fresh.E = E
        return fresh.energy(1.0)

    assert float(jax.grad(loss)(2.0)) == 0.0  # 1.0 expected by the code
    assert float(ns["Plate"]().run(1.0)) == 1.0  # 5.0 after `set_load(5.0)`
    spring = ns["Spring"](1.0)
    spring.force(1.0)
    spring.k = 3.0
    assert float(spring.force(1.0)) == -1.0  # -3.0 expected
    assert rows(path, "JF404") == [22, 48, 62]


def test_jf404_fresh_jits_and_values_set_once_are_not_frozen():
    ns = run_file(FIXTURES / "JF404" / "fresh_jit_per_call.py")
    for (a, b), phase in zip(ns["frames"], (0.0, 0.5, 1.0)):
        want = np.ones((3, 2)) @ ns["rotation"](phase)
        np.testing.assert_allclose(a, want, rtol=1e-6)
        np.testing.assert_allclose(b, want, rtol=1e-6)
    traps = run_file(FIXTURES / "JF404" / "set_once_traps.py")
    assert traps["main"]().shape == (16,)
    for name in ("fresh_jit_per_call", "set_once_traps", "object_attributes_traps"):
        assert rows(FIXTURES / "JF404" / f"{name}.py", "JF404") == []
