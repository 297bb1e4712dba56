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


# -- JF302: a fresh jit per call compiles per call ----------------------------------------------------
class Compilations:
    """Counts XLA compilations (jax.monitoring's compile events) while the block runs."""

    events: list = []
    registered = False

    def __enter__(self):
        if not Compilations.registered:
            jax.monitoring.register_event_duration_secs_listener(
                lambda name, secs, **kw: Compilations.events.append(name))
            Compilations.registered = True
        self.start = len(self.events)
        return self

    @property
    def count(self) -> int:
        return self.events[self.start:].count("/jax/core/compile/backend_compile_duration")

    def __exit__(self, *exc):
        return False


def test_jf302_rebuilt_every_call_compiles_per_call():
    path = FIXTURES / "JF302" / "rebuilt_every_call.py"
    ns = run_file(path)
    points = np.ones((3, 2), np.float32)
    with Compilations() as c:
        ns["render"](points, [0.1, 0.2, 0.3, 0.4])
    assert c.count == 4
    frames = [np.full(3, float(i), np.float32) for i in range(4)]
    with Compilations() as c:
        ns["animate"](frames)
    assert c.count == 4
    A, bs = np.eye(2, dtype=np.float32) * 2, [np.full(2, float(i), np.float32) for i in range(5)]
    with Compilations() as c:
        ns["fit_all"](A, bs)
    assert c.count >= 5
    x = np.ones((1, 3), np.float32)
    with Compilations() as c:
        ns["Ensemble"](0.5).run(x, 3)
    assert c.count >= 3
    assert rows(path, "JF302") == [18, 37, 53, 66]


def test_jf302_traps_compile_once_per_program(monkeypatch):
    import sys
    import types
    from unittest import mock

    if "numpyro" not in sys.modules:  # not installed here: the file only needs the names
        stub = types.ModuleType("numpyro")
        stub.distributions, stub.infer = mock.MagicMock(), mock.MagicMock()
        for name, module in (("numpyro", stub), ("numpyro.distributions", stub.distributions),
                             ("numpyro.infer", stub.infer)):
            monkeypatch.setitem(sys.modules, name, module)
    path = FIXTURES / "JF302" / "compiled_once_traps.py"
    ns = run_file(path)
    x = np.ones((1, 2), np.float32)
    with Compilations() as c:
        ns["simulate_all"]([0.1, 0.2], x)
    assert c.count <= 2 * 2  # one pmap per simulation (and its output transfer), not one per step
    assert rows(path, "JF302") == []


def test_jf302_across_modules_the_render_loop_compiles_per_frame(monkeypatch):
    import importlib

    monkeypatch.syspath_prepend(str(FIXTURES / "cross_module" / "frequency"))
    render = importlib.import_module("render_pkg.render")
    start = jnp.ones(3)
    frames = [start + i for i in range(5)]
    with Compilations() as c:
        render.animate(frames)
    # `get_basis(3)` and `smooth` build a new jit per frame: two compilations per frame.
    assert c.count >= 2 * 5


# -- JF301: every one of identical blocks compiles per iteration ---------------------------------------
def test_jf301_identical_blocks_each_compile_per_iteration():
    path = FIXTURES / "JF301" / "identical_blocks.py"
    ns = run_file(path)
    xs = [np.float32(i) for i in range(3)]
    params = np.ones(2, np.float32)
    with Compilations() as c:
        ns["run"](xs, params)
    assert c.count >= 3 * 3
    with Compilations() as c:
        ns["run_twice"](xs)
    assert c.count >= 2 * 3
    assert rows(path, "JF301") == [16, 21, 26, 34, 37]


# -- JF401 through objects and wrappers: the prints show tracers --------------------------------------
def test_jf401_prints_reached_through_objects_show_tracers():
    path = FIXTURES / "JF401" / "routes_objects.py"
    ns = run_file(path)
    y = jnp.ones(2)
    calls = [lambda: ns["solver"].step(0.0, y), lambda: ns["integrate"](0.0, y),
             lambda: ns["Trainer"]().update(y), lambda: ns["force"](y), lambda: ns["total"](y)]
    for call in calls:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            call()
        lines = out.getvalue().splitlines()
        assert lines and all("Tracer" in line for line in lines), lines
    assert rows(path, "JF401") == [15, 33, 34, 35, 43, 64, 74, 87]


def test_jf401_under_disable_jit_prints_values():
    path = FIXTURES / "JF401" / "debug_mode.py"
    ns = run_file(path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ns["main"]()
    assert "Tracer" not in out.getvalue() and "[1. 1.]" in out.getvalue()
    assert rows(path, "JF401") == []
    flagged = FIXTURES / "JF401" / "debug_mode_flag.py"
    assert rows(flagged, "JF401") == [] and rows(flagged, "JF401", preview=True) == [12]
