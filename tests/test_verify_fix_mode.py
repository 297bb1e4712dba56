"""`verify PATH::FUNC`: jaxfuse-lint's own fixes, applied in memory, proved (or not) on CPU.

Each case runs the engine's fix on a proof file and verifies FUNC before and
after it. A case whose rule has no codemod yet is skipped with that reason
(it starts to count the moment the codemod exists); a case whose fix exists
must prove what the notebook claims. Exact figures: CPU, jax 0.10.2 (see
test_verify_proofs.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

jax = pytest.importorskip("jax")

from jaxfuse_lint.core.config import load_settings  # noqa: E402
from jaxfuse_lint.runtime.verify_fixed import verify_fixed_file  # noqa: E402
from tests.test_verify_proofs import MEASURED, figures  # noqa: E402

PROOFS = Path(__file__).resolve().parent.parent / "fixtures" / "proofs"


def verify_fix(file: str, func: str, args, static=None, code: str = "", **kw):
    path = PROOFS / file
    # The notebook's functions leave dtypes undeclared, so their JF101/JF201 fixes are unsafe:
    # proved as `verify --unsafe-fixes` applies them (else they were skipped, never run).
    kw.setdefault("unsafe", True)
    result = verify_fixed_file(
        path.read_text(), str(path), func, args, static,
        settings=load_settings(None, start=str(path)), **kw,
    )
    applied = [f for f in result.fixes if f["in_function"] and f["code"] == code]
    if not applied:
        if result.verdict == "unchanged" or not result.fixes:
            pytest.skip(f"the engine has no {code} fix for {file}::{func} yet")
        pytest.fail(f"{code} was not among the fixes applied in {func}: {result.fixes} ({result.error})")
    return result


def test_jf101_fix_with_known_width_is_proved():
    result = verify_fix("sum_reduction.py", "f_sum_jax_width_asserted", ["f32[131072,2]"], code="JF101")
    assert result.verdict == "proved", result.error or result.summary()
    assert result.numerics.agree
    if MEASURED:
        assert result.summary() == "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"


def test_jf101_fix_of_the_notebook_function_is_measured_truthfully():
    # x's width is not stated here. Indexing the product, `(kvm * x)[:, 0]`, would turn the
    # reduction into a loop fusion but leave the stacked mesh its own kernel (2 -> 2 on CPU,
    # see sum_reduction_fixed.py); indexing each factor fuses everything. verify must tell
    # the two apart rather than credit any JF101 fix.
    result = verify_fix("sum_reduction.py", "f_sum_jax", ["f32[131072,2]"], code="JF101")
    assert result.numerics.agree
    kinds_after = result.after.measurement.kernels.by_kind
    assert not any("ynn" in kind or kind == "reduce" for kind in kinds_after)
    if "(kvm * x)[:, 0]" in _fixed_text("sum_reduction.py"):
        assert result.verdict in ("unchanged", "proved"), result.error or result.summary()
        if MEASURED:
            assert result.verdict == "unchanged" and figures(result, "kernels") == (2, 2)
    else:
        assert result.verdict == "proved", result.error or result.summary()
        if MEASURED:
            assert result.summary() == "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"


def test_jf103_unrolling_a_four_step_loop_is_proved():
    result = verify_fix("short_loop.py", "f_for", ["f32[131072,2]"], code="JF103")
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "loop_kernels")[1] == 0
    if MEASURED:
        assert figures(result, "kernels") == (5, 1)
        assert figures(result, "launches") == (15, 1)


def test_jf201_numpy_constant_fix_removes_the_folded_constant():
    result = verify_fix("numpy_constant.py", "f_numpy", ["f32[131072,2]"], code="JF201")
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "folded_constant_bytes")[1] == 0
    if MEASURED:
        assert figures(result, "folded_constant_bytes") == (1048576, 0)
        assert result.summary() == "on CPU: 1.0 MiB → 0 B folded constants"


def test_jf203_loop_invariant_kmesh_fix_is_proved():
    result = verify_fix("kmesh_filter.py", "f_filter_with_temp", ["f32[64,64,64]"], code="JF203")
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "temp_bytes")[1] < figures(result, "temp_bytes")[0]
    if MEASURED:
        assert figures(result, "kernels") == (8, 7)
        assert figures(result, "temp_bytes") == (2162756, 1081412)


def test_jf301_hoisted_jit_compiles_once_per_call():
    result = verify_fix("inner_jit.py", "g_inner_jitted_lambda", ["f32[8]"], {"n": 5}, code="JF301", call=True)
    assert result.verdict == "proved", result.error or result.summary()
    assert figures(result, "compilations")[0] == 5
    assert figures(result, "compilations")[1] <= 1


def _fixed_text(file: str) -> str:
    from jaxfuse_lint.engine.pipeline import fix_source

    path = PROOFS / file
    return fix_source(path.read_text(), str(path), load_settings(None, start=str(path)), unsafe=True).source
