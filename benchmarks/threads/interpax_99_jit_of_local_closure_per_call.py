# Thread: https://github.com/f0uriest/interpax/pull/99 (commit c7c5d94, resolves issue #94)
# Diagnosis (@f0uriest, interpax maintainer, PR description): "Avoids jitting a locally defined function which was causing excessive recompilation (resolves #94)"
# Problem: `approx_df` closes over its static options in a local `fun` and wraps it with `jit` on every call, so each call compiles the derivative approximation again.
# Written for this corpus after interpax/_fd_derivs.py before that commit (same structure, reduced to two methods).
import jax
import jax.numpy as jnp
from jax import jit


def approx_df(
    x: jax.Array, f: jax.Array, method: str = "cubic", axis: int = -1, **kwargs
):
    """Approximates first derivatives using cubic spline interpolation."""

    # close over static args to deal with non-jittable kwargs
    def fun(x, f):
        return _approx_df(x, f, method, axis, **kwargs)

    return jit(fun)(x, f)  # expect: JF302


def _approx_df(x, f, method, axis, c=0):
    if method == "cubic":
        out = _cubic1(x, f, axis)
    elif method in ("nearest", "linear"):
        out = jnp.zeros_like(f)
    else:
        raise ValueError(f"got unknown method {method}")
    return out


def _cubic1(x, f, axis):
    dx = jnp.diff(x)
    df = jnp.diff(f, axis=axis)
    dxi = jnp.where(dx == 0, 0, 1 / dx)
    slope = df * dxi
    return jnp.concatenate([slope[:1], (slope[1:] + slope[:-1]) / 2, slope[-1:]])


x = jnp.linspace(0, 1, 20)
for _ in range(5):
    approx_df(x, jnp.sin(x))
