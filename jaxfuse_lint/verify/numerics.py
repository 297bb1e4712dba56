"""Run both versions on the same seeded random inputs and compare, dtype-aware.

A rewrite that fuses better may reassociate a sum or trade `np.float64`
arithmetic for `float32`, so bit-equality is the wrong test; a rewrite that
indexes the wrong axis is off by O(1). The tolerance sits between the two:
relative `sqrt(eps)` of the output's dtype (3.5e-4 for float32, 0.031 for
float16, 0.088 for bfloat16, 1.5e-8 for float64), measured against the largest
magnitude of the original output, so near-zero elements produced by
cancellation do not count as disagreements. Integer and boolean outputs must
be equal. NaN must appear in the same places; infinities must be equal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from jaxfuse_lint.verify.shapes import ArgSpec, _jnp_dtype


def random_inputs(specs: Sequence[ArgSpec], seed: int, device: Any = None) -> list[Any]:
    """Arrays for `specs`, the same for a given seed: normal floats, small non-negative ints."""
    import jax
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = []
    for spec in specs:
        dtype = _jnp_dtype(spec.dtype)
        if dtype.kind == "c":
            value = rng.standard_normal(spec.shape) + 1j * rng.standard_normal(spec.shape)
        elif dtype.kind == "f" or spec.dtype == "bfloat16":  # numpy sees bfloat16 as kind "V"
            value = rng.standard_normal(spec.shape)
        elif dtype.kind in "iu":
            # Small and non-negative: such ints are often indices, sizes or counts.
            value = rng.integers(0, 16, size=spec.shape)
        elif dtype.kind == "b":
            value = rng.random(spec.shape) < 0.5
        else:
            raise ValueError(f"no random inputs for dtype {spec.dtype}")
        arrays.append(jax.device_put(np.asarray(value).astype(dtype), device))
    return arrays


def tolerance(dtype: Any) -> float:
    """Relative tolerance for an output dtype: sqrt(eps) for inexact types, 0 otherwise."""
    import numpy as np

    dtype = np.dtype(dtype)
    if dtype.name == "bfloat16":
        import ml_dtypes  # numpy's finfo does not know bfloat16

        return math.sqrt(float(ml_dtypes.finfo(dtype).eps))
    if dtype.kind in "fc":
        return math.sqrt(float(np.finfo(dtype).eps))
    return 0.0


@dataclass
class NumericsResult:
    agree: bool
    outputs: int  # number of array leaves compared
    max_abs_error: float
    max_rel_error: float  # abs error / largest |original| of that output
    detail: str  # one line: what was compared, or the first disagreement

    def to_json(self) -> dict[str, Any]:
        return {
            "agree": self.agree,
            "outputs": self.outputs,
            "max_abs_error": self.max_abs_error,
            "max_rel_error": self.max_rel_error,
            "detail": self.detail,
        }


def compare_outputs(before: Any, after: Any) -> NumericsResult:
    """Compare two pytrees of arrays leaf by leaf."""
    import jax
    import numpy as np

    leaves_b, tree_b = jax.tree_util.tree_flatten(before)
    leaves_a, tree_a = jax.tree_util.tree_flatten(after)
    if tree_b != tree_a:
        return NumericsResult(False, 0, math.inf, math.inf, f"output structure differs: {tree_b} vs {tree_a}")
    max_abs = 0.0
    max_rel = 0.0
    tolerances = set()
    for i, (lb, la) in enumerate(zip(leaves_b, leaves_a)):
        b, a = np.asarray(lb), np.asarray(la)
        where = f"output {i}" if len(leaves_b) > 1 else "output"
        if b.shape != a.shape or b.dtype != a.dtype:
            return NumericsResult(
                False, len(leaves_b), math.inf, math.inf,
                f"{where} changed type: {b.dtype}{list(b.shape)} vs {a.dtype}{list(a.shape)}",
            )
        rtol = tolerance(b.dtype)
        tolerances.add(f"{b.dtype} rtol {rtol:.2g}" if rtol else f"{b.dtype} exact")
        if b.size == 0:
            continue
        if rtol == 0.0:
            mismatches = int(np.count_nonzero(b != a))
            if mismatches:
                return NumericsResult(
                    False, len(leaves_b), math.inf, math.inf,
                    f"{where}: {mismatches} of {b.size} elements differ ({b.dtype} must match exactly)",
                )
            continue
        b64 = b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
        a64 = a.astype(b64.dtype)
        nan_b, nan_a = np.isnan(b64), np.isnan(a64)
        if not np.array_equal(nan_b, nan_a):
            return NumericsResult(
                False, len(leaves_b), math.inf, math.inf,
                f"{where}: NaN in {int(nan_b.sum())} places before, {int(nan_a.sum())} after",
            )
        finite = np.isfinite(b64) & np.isfinite(a64)
        if not np.array_equal(b64[~finite & ~nan_b], a64[~finite & ~nan_a]):
            return NumericsResult(False, len(leaves_b), math.inf, math.inf, f"{where}: infinities differ")
        if not finite.any():
            continue
        diff = np.subtract(b64, a64, out=np.zeros_like(b64), where=finite)
        err = np.abs(diff)
        scale = float(np.max(np.abs(b64[finite])))
        abs_err = float(np.max(err))
        rel_err = abs_err / scale if scale > 0 else (0.0 if abs_err == 0 else math.inf)
        max_abs, max_rel = max(max_abs, abs_err), max(max_rel, rel_err)
        if rel_err > rtol:
            worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
            return NumericsResult(
                False, len(leaves_b), max_abs, max_rel,
                f"{where}: max error {abs_err:.3g} is {rel_err:.3g} of the largest value {scale:.3g} "
                f"(tolerance {rtol:.2g} for {b.dtype}), worst at index {list(worst)}",
            )
    return NumericsResult(
        True, len(leaves_b), max_abs, max_rel,
        f"{len(leaves_b)} output{'s' if len(leaves_b) != 1 else ''} agree "
        f"(max error {max_rel:.2g} of the largest value; {', '.join(sorted(tolerances)) or 'no arrays'})",
    )
