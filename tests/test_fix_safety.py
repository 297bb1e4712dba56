"""Adversarial fix-safety suite: a SAFE fix never changes errors, shapes, dtypes, weak types or
values (beyond rounding); an unsafe fix changes only what its rule documents.

Property-based (hypothesis), with a fixed example count and seed so CI runs the same cases every
time (about 35 s of CPU for the whole file); benchmarks/fix_safety_sweep.py runs the same
generators with many more examples, and with x64.
Regression examples found by the generators are kept below as explicit cases.
"""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.fix_safety import (  # noqa: E402
    Case, check_case, jf101_allowed, jf101_cases, jf102_allowed, jf102_cases, jf103_allowed, jf103_cases,
    jf201_allowed, jf201_cases, jf203_allowed, jf203_cases, jf301_allowed, jf301_cases, jf405_allowed, jf405_cases,
)


def ci(examples: int):
    """A fixed example count and a derandomized run: CI checks the same cases every time."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(case, allowed):
    checked = check_case(case, allowed)
    assert not checked.problems, f"{case.note}\n{case.source}\n" + "\n".join(checked.problems)


@seed(15)
@ci(100)
@given(jf101_cases())
def test_jf101_fixes_keep_results(case):
    _check(case, jf101_allowed)


@seed(15)
@ci(50)
@given(jf201_cases())
def test_jf201_fixes_keep_results(case):
    _check(case, jf201_allowed)


@seed(15)
@ci(25)
@given(jf102_cases())
def test_jf102_fixes_keep_results(case):
    _check(case, jf102_allowed)


@seed(15)
@ci(30)
@given(jf103_cases())
def test_jf103_fixes_keep_results(case):
    _check(case, jf103_allowed)


@seed(15)
@ci(30)
@given(jf405_cases())
def test_jf405_fixes_keep_results(case):
    _check(case, jf405_allowed)


@seed(15)
@ci(20)
@given(jf203_cases())
def test_jf203_fixes_keep_results(case):
    _check(case, jf203_allowed)


@seed(15)
@ci(20)
@given(jf301_cases())
def test_jf301_fixes_keep_results(case):
    _check(case, jf301_allowed)


# -- regression examples ---------------------------------------------------------------------------
def _case(body: str, args, kind: str, dtype: str, power: int = 1) -> Case:
    return Case("JF101", body, args, kind, power, kind, dtype)


ISSUE_HITS = '''@jax.jit
def f(x):
    v = jnp.stack([x[:, 0] > 0, x[:, 1] > 0], axis=-1)
    return jnp.sum(v, axis=-1)
'''

ISSUE_SMALL = '''@jax.jit
def f(x):
    v = jnp.stack([x[:, 0], x[:, 1]], axis=-1).astype(jnp.int8) * 100
    return jnp.sum(v, axis=-1)
'''


@pytest.mark.parametrize("body,dtype", [(ISSUE_HITS, "bool"), (ISSUE_SMALL, "int8")])
def test_issue_15_examples_are_fixed_safely_and_keep_counts(body, dtype):
    x = np.array([[1.0, 2.0], [-1.0, 3.0], [2.0, -2.0], [-1.0, -1.0]], dtype=np.float32)
    checked = check_case(_case(body, [x], "sum", dtype), jf101_allowed)
    assert checked.safe_fixed and not checked.problems, checked.problems
    assert "astype(int)" in check_case_source(body)


def check_case_source(body: str) -> str:
    from tests.fix_safety import HEADER, settings_for
    from jaxfuse_lint.engine.pipeline import fix_source

    return fix_source(HEADER + body, "case.py", settings_for("JF101")).source


def test_float16_sums_of_three_terms_are_computed_in_float32():
    """Found by the suite: float16 lanes summed one by one round after each step (jnp.sum computes in
    float32 and rounds once, 1 ulp apart on random data); the fix now adds in float32 and casts back."""
    body = '@jax.jit\ndef f(x: Float16[Array, "64 3"]):\n    return jnp.sum(x, axis=-1)\n'
    x = np.random.default_rng(0).normal(0, 4, size=(64, 3)).astype(np.float16)
    checked = check_case(_case(body, [x], "sum", "float16"), jf101_allowed)
    assert checked.safe_fixed and not checked.problems and checked.safe_diff <= {"rounding"}
    assert ".astype(jnp.float16)" in check_case_source(body)


def test_weakly_typed_operands_get_an_unsafe_fix():
    body = '@jax.jit\ndef f(x: Shaped[Array, "4 2"]):\n    return jnp.max(x, axis=-1)\n'
    weak = __import__("jax").numpy.arange(8).reshape(4, 2) * 0.5  # int * Python float: weakly typed
    checked = check_case(Case("JF101", body, [weak], "max weak", 1, "max", "float32"), jf101_allowed)
    assert not checked.safe_fixed and checked.unsafe_fixed and not checked.problems
    assert checked.unsafe_diff <= {"weak"}


def test_jf201_full_of_a_python_number_is_unsafe():
    """Found by the suite: `np.full(s, 3)` is a strongly typed int64 array (int32 in jit), `jnp.full(s, 3)`
    weakly typed, so `int8_x + full(s, 3)` was int32 before and int8 after a safe fix."""
    body = '@jax.jit\ndef f(x: Int8[Array, "3 1"]):\n    return x + np.full(x.shape, 3)\n'
    x = np.array([[100], [-100], [7]], dtype=np.int8)
    checked = check_case(Case("JF201", body, [x], "full", 1, "numpy", "int8"), jf201_allowed)
    assert checked.flagged and not checked.safe_fixed and checked.unsafe_fixed and not checked.problems
    assert "dtype" in checked.unsafe_diff


def test_jf102_float_spacing_keeps_the_grid_strongly_typed():
    """Found by the suite's design: `where(...) / (0.5 * n)` is weakly typed, fftfreq's result is not."""
    body = ('@jax.jit\ndef f(x: Float16[Array, "4 3"]):\n    kx = jnp.fft.fftfreq(x.shape[0], 0.5)\n'
            '    ky = jnp.fft.fftfreq(x.shape[1], 0.5)\n    gx, gy = jnp.meshgrid(kx, ky, indexing="ij")\n'
            '    return gx * x\n')
    x = np.ones((4, 3), np.float16)
    checked = check_case(Case("JF102", body, [x], "grid", 1, "grid", "float16"), jf102_allowed)
    assert checked.safe_fixed and not checked.problems


def test_the_harness_catches_a_wrong_safe_fix(monkeypatch):
    """The suite can fail: a codemod that drops the int cast makes a bool sum a logical or."""
    import jaxfuse_lint.codemods.jf101_unroll_reduction as jf101

    monkeypatch.setattr(jf101, "_cast_to", lambda cast, jnp: None)
    x = np.array([[1.0, 2.0], [-1.0, 3.0]], dtype=np.float32)
    checked = check_case(_case(ISSUE_HITS, [x], "sum", "bool"), jf101_allowed)
    assert checked.problems and "SAFE fix changed" in checked.problems[0] and "dtype" in checked.safe_diff
