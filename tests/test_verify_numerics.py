"""Dtype-aware comparison of the two versions' outputs, and the seeded inputs they run on."""
from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jaxfuse_lint.verify.numerics import compare_outputs, random_inputs, tolerance  # noqa: E402
from jaxfuse_lint.verify.shapes import parse_arg_spec  # noqa: E402


def test_tolerances_follow_the_dtype():
    assert tolerance(np.float32) == pytest.approx(np.sqrt(np.finfo(np.float32).eps))
    assert tolerance(np.float16) == pytest.approx(0.0313, rel=0.01)
    assert tolerance(jax.numpy.bfloat16) == pytest.approx(0.0884, rel=0.01)
    assert tolerance(np.float64) < 1e-7
    assert tolerance(np.int32) == 0.0 and tolerance(np.bool_) == 0.0


def test_reassociated_float32_sum_agrees():
    x = np.random.default_rng(1).standard_normal((1000, 2)).astype(np.float32) * 1e4
    a = x.sum(axis=1)
    b = x[:, 1] + x[:, 0]
    result = compare_outputs(a, b)
    assert result.agree, result.detail
    assert result.max_rel_error < 1e-6


def test_a_wrong_axis_is_a_changed_result():
    x = np.random.default_rng(2).standard_normal((8, 2)).astype(np.float32)
    result = compare_outputs(x[:, 0], x[:, 1])
    assert not result.agree
    assert "tolerance" in result.detail and "worst at index" in result.detail


def test_float16_is_compared_more_loosely_than_float32():
    base = np.linspace(1, 2, 64)
    nudged = base * (1 + 5e-3)
    assert compare_outputs(base.astype(np.float16), nudged.astype(np.float16)).agree
    assert not compare_outputs(base.astype(np.float32), nudged.astype(np.float32)).agree


def test_error_is_relative_to_the_largest_value_not_each_element():
    before = np.array([1000.0, 1e-6], np.float32)
    after = np.array([1000.0, 2e-6], np.float32)  # doubled, but negligible next to 1000
    assert compare_outputs(before, after).agree


def test_integers_must_match_exactly_and_types_must_not_change():
    assert compare_outputs(np.arange(4), np.arange(4)).agree
    assert not compare_outputs(np.arange(4), np.arange(4) + np.array([0, 0, 0, 1])).agree
    changed = compare_outputs(np.zeros(3, np.float32), np.zeros(4, np.float32))
    assert not changed.agree and "changed type" in changed.detail
    assert not compare_outputs(np.zeros(3, np.float32), np.zeros(3, np.float64)).agree


def test_nan_placement_and_infinities():
    a = np.array([1.0, np.nan, np.inf], np.float32)
    assert compare_outputs(a, a.copy()).agree
    assert not compare_outputs(a, np.array([1.0, 2.0, np.inf], np.float32)).agree
    assert not compare_outputs(a, np.array([1.0, np.nan, -np.inf], np.float32)).agree


def test_pytree_structure_must_match():
    x = np.ones(3, np.float32)
    assert compare_outputs({"a": x, "b": (x, x)}, {"a": x, "b": (x, x)}).outputs == 3
    assert not compare_outputs((x, x), [x, x]).agree


def test_complex_outputs():
    z = (np.arange(4) + 1j * np.arange(4)).astype(np.complex64)
    assert compare_outputs(z, z * (1 + 1e-6)).agree
    assert not compare_outputs(z, z.conj()).agree


def test_random_inputs_are_seeded_and_typed():
    specs = [parse_arg_spec(s) for s in ("f32[4,2]", "c64[3]", "i32[5]", "bool[6]", "bf16[2]")]
    first = random_inputs(specs, seed=7)
    again = random_inputs(specs, seed=7)
    other = random_inputs(specs, seed=8)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(first[0]), np.asarray(other[0]))
    assert [str(a.dtype) for a in first] == ["float32", "complex64", "int32", "bool", "bfloat16"]
    assert np.all(np.asarray(first[2]) >= 0)  # ints are small and non-negative: safe as indices
    assert np.abs(np.asarray(first[1]).imag).sum() > 0
