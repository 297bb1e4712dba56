"""The notebook's claims, measured: run the verifier on fixtures/proofs/ and check its figures.

Exact figures were measured on CPU with jax/jaxlib 0.10.2 and no XLA_FLAGS
(`MEASURED`); kernel counts and byte sizes depend on the XLA version, so on
any other setup only the direction of each improvement is asserted.
Compilation counts do not depend on XLA and are always exact.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")

from jaxfuse_lint.verify import verify_pair  # noqa: E402

PROOFS = Path(__file__).resolve().parent.parent / "fixtures" / "proofs"
MEASURED = (
    jax.__version__ == "0.10.2" and jax.default_backend() == "cpu" and not os.environ.get("XLA_FLAGS")
)
exact = pytest.mark.skipif(not MEASURED, reason="figures measured on CPU with jax 0.10.2")


def source(name: str) -> str:
    return (PROOFS / name).read_text()


def verify_against(file: str, before: str, after: str, args, static=None, **kw):
    """Two functions of one proof file, as `verify FILE::before --against FILE::after` does."""
    return verify_pair(
        source(file), source(file), before, args, static, filename=str(PROOFS / file),
        after_func_name=after, **kw,
    )


def verify_fixed(file: str, func: str, args, static=None, **kw):
    """A proof file against its `_fixed.py` version (what the fixer produces)."""
    fixed = file.replace(".py", "_fixed.py")
    return verify_pair(source(file), source(fixed), func, args, static, filename=str(PROOFS / file), **kw)


def figures(result, key):
    m = result.metric(key)
    assert m is not None, f"no metric {key}"
    return m.before, m.after


# --- JF101: a reduction over a 2-wide axis -------------------------------------

@pytest.fixture(scope="module")
def sum_pair():
    return verify_against("sum_reduction.py", "f_sum_jax", "f_sum_explicit", ["f32[131072,2]"])


def test_sum_jax_vs_explicit_is_proved(sum_pair):
    assert sum_pair.verdict == "proved", sum_pair.error or sum_pair.summary()
    assert sum_pair.numerics.agree
    before, after = figures(sum_pair, "kernels")
    assert after < before
    t_before, t_after = figures(sum_pair, "temp_bytes")
    assert t_after < t_before


@exact
def test_sum_jax_vs_explicit_figures(sum_pair):
    assert figures(sum_pair, "kernels") == (2, 1)
    assert figures(sum_pair, "temp_bytes") == (1048576, 0)
    assert sum_pair.summary() == "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"
    # The reduction is its own (custom) fusion; after the rewrite one loop fusion does everything.
    assert sum_pair.before.measurement.kernels.by_kind == {"fusion:kCustom(__ynn_fusion)": 1, "fusion:kLoop": 1}
    assert sum_pair.after.measurement.kernels.by_kind == {"fusion:kLoop": 1}


def test_sum_jax_fixed_file_is_proved():
    result = verify_fixed("sum_reduction.py", "f_sum_jax", ["f32[131072,2]"])
    assert result.verdict == "proved", result.error or result.summary()
    if MEASURED:
        assert result.summary() == "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"


@exact
def test_indexing_the_product_instead_of_each_factor_gains_nothing_on_cpu():
    # Why the JF101 fix indexes each factor: `(kvm * x)[:, 0]` keeps the stacked mesh a separate kernel.
    result = verify_against(
        "sum_reduction_fixed.py", "f_sum_jax_product_indexed", "f_sum_jax", ["f32[131072,2]"]
    )
    assert result.verdict == "proved"
    assert figures(result, "kernels") == (2, 1)
    assert figures(result, "temp_bytes") == (1048576, 0)


def test_the_reverse_rewrite_is_a_regression_with_exit_code_1():
    result = verify_against("sum_reduction.py", "f_sum_explicit", "f_sum_jax", ["f32[4096,2]"])
    assert result.verdict == "regressed"
    assert result.exit_code == 1
    assert figures(result, "kernels")[1] > figures(result, "kernels")[0]


def test_a_rewrite_that_changes_results_is_caught():
    wrong = source("sum_reduction.py").replace("kvm[..., 1] * x[..., 1]", "kvm[..., 1] * x[..., 0]")
    result = verify_pair(
        source("sum_reduction.py"), wrong, "f_sum_jax", ["f32[4096,2]"],
        filename=str(PROOFS / "sum_reduction.py"), after_func_name="f_sum_explicit",
    )
    assert result.verdict == "changed results"
    assert result.exit_code == 1
    assert not result.numerics.agree
    assert result.summary().startswith("on CPU: results differ: output: max error")


# --- JF203: a loop-invariant k-mesh kept as a temporary -------------------------

@pytest.fixture(scope="module")
def filter_pair():
    return verify_against("kmesh_filter.py", "f_filter_with_temp", "f_filter_with_recalc", ["f32[64,64,64]"])


def test_filter_recomputing_the_kmesh_in_the_loop_is_proved(filter_pair):
    assert filter_pair.verdict == "proved", filter_pair.error or filter_pair.summary()
    assert filter_pair.numerics.agree
    assert figures(filter_pair, "temp_bytes")[1] < figures(filter_pair, "temp_bytes")[0]
    loops = filter_pair.before.measurement.kernels.loops
    assert [loop["trip_count"] for loop in loops] == [5]


@exact
def test_filter_figures(filter_pair):
    assert figures(filter_pair, "kernels") == (8, 7)
    assert figures(filter_pair, "temp_bytes") == (2162756, 1081412)  # the notebook's 2.16 MB -> 1.08 MB
    assert figures(filter_pair, "loop_kernels") == (5, 5)
    # ENTRY kernels + 5 x body + 6 x condition.
    assert figures(filter_pair, "launches") == (3 + 5 * 4 + 6, 2 + 5 * 4 + 6)
    assert filter_pair.summary() == (
        "on CPU: 8 → 7 kernels, 29 → 28 launches per run, 2.06 MiB → 1.03 MiB temporaries"
    )


def test_filter_fixed_file_is_proved():
    result = verify_fixed("kmesh_filter.py", "f_filter_with_temp", ["f32[64,64,64]"])
    assert result.verdict == "proved", result.error or result.summary()
    if MEASURED:
        assert figures(result, "kernels") == (8, 7)
        assert figures(result, "temp_bytes") == (2162756, 1081412)


def test_kmesh_from_indices_needs_one_kernel():
    result = verify_against(
        "kmesh_filter.py", "get_kmesh_naive", "get_kmesh", ["f32[64,64,64]"], {"norm2": True}
    )
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "kernels")[1] == 1
    if MEASURED:
        assert figures(result, "kernels") == (2, 1)


# --- JF201: a numpy array folded into the executable ----------------------------

@pytest.fixture(scope="module")
def numpy_pair():
    return verify_fixed("numpy_constant.py", "f_numpy", ["f32[131072,2]"])


def test_numpy_constant_is_no_longer_folded(numpy_pair):
    assert numpy_pair.verdict == "proved", numpy_pair.error or numpy_pair.summary()
    assert numpy_pair.numerics.agree  # float64 numpy arithmetic vs float32 jnp: within tolerance
    before, after = figures(numpy_pair, "folded_constant_bytes")
    assert before >= 131072 * 2 * 4 and after == 0
    assert figures(numpy_pair, "lowered_constant_bytes") == (131072 * 2 * 4, 0)
    assert numpy_pair.summary() == "on CPU: 1.0 MiB → 0 B folded constants"


def test_jax_names_the_line_that_captured_the_constant(numpy_pair):
    reports = numpy_pair.before.measurement.captured_constants
    assert len(reports) == 1
    assert "float32[131072,2]" in reports[0]
    assert f"{PROOFS / 'numpy_constant.py'}:14:" in reports[0]  # the np.arange line
    assert numpy_pair.after.measurement.captured_constants == []


def test_numpy_vs_jnp_against():
    result = verify_against("numpy_constant.py", "f_numpy", "f_jnp", ["f32[1024,2]"])
    assert result.verdict == "proved"
    assert figures(result, "folded_constant_bytes") == (8192, 0)


# --- JF301: jax.jit inside a while loop recompiles every iteration --------------

@pytest.mark.parametrize("n", [3, 5])
def test_inner_jit_compiles_n_times_per_call_and_hoisted_once(n):
    result = verify_against(
        "inner_jit.py", "g_inner_jitted_lambda", "g_hoisted_jit", ["f32[8]"], {"n": n}, call=True
    )
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "compilations") == (n, 1)
    assert result.summary() == f"on CPU: {n} → 1 compilations per call"
    assert result.numerics.agree
    # The driver cannot be jitted whole (a Python while on a traced value); that is reported, not fatal.
    assert "TracerBoolConversionError" in result.before.lowering_error
    misses = " ".join(result.before.compilations.cache_misses)
    assert f"{PROOFS / 'inner_jit.py'}:18" in misses and "re-defined repeatedly" in misses


def test_inner_jit_fixed_file_is_proved():
    result = verify_fixed("inner_jit.py", "g_inner_jitted_lambda", ["f32[8]"], {"n": 4}, call=True)
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "compilations") == (4, 1)


def test_without_call_a_driver_that_cannot_be_jitted_is_an_error():
    result = verify_fixed("inner_jit.py", "g_inner_jitted_lambda", ["f32[8]"], {"n": 4})
    assert result.verdict == "error" and result.exit_code == 2
    assert "inner_jit.py:17: tracing the before version under jax.jit raised TracerBoolConversionError" in result.error


# --- JF103: a short fori_loop ---------------------------------------------------

def test_unrolled_short_loop_is_proved():
    result = verify_against("short_loop.py", "f_for", "f_for_unrolled", ["f32[131072,2]"])
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "launches")[1] < figures(result, "launches")[0]
    assert figures(result, "loop_kernels")[1] == 0
    if MEASURED:
        assert figures(result, "kernels") == (5, 1)
        assert figures(result, "launches") == (2 + 4 * 2 + 5 * 1, 1)


def test_bytes_accessed_is_shown_but_does_not_decide():
    # XLA's cost model charges each read of x in the unrolled form; memory is read once either way.
    before = "import jax.numpy as jnp\n\ndef f(x):\n    return x * 2 + jnp.sum(x * x, axis=1, keepdims=True)\n"
    after = (
        "import jax.numpy as jnp\n\ndef f(x):\n    return x * 2 + (x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1])[:, None]\n"
    )
    result = verify_pair(before, after, "f", ["f32[4096,2]"], filename="pairs.py")
    accessed = result.metric("bytes_accessed")
    assert not accessed.deciding
    assert result.verdict in ("unchanged", "proved")
    if MEASURED:
        assert (accessed.before, accessed.after) == (65536, 98304)
        assert result.verdict == "unchanged"


def test_identical_versions_are_unchanged():
    result = verify_against("sum_reduction.py", "f_sum_explicit", "f_sum_explicit", ["f32[1024,2]"])
    assert result.verdict == "unchanged"
    assert result.exit_code == 0
    assert result.numerics.max_abs_error == 0.0
