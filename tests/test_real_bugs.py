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
