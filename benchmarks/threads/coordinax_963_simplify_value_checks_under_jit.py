# Thread: https://github.com/GalacticDynamics/coordinax/issues/963
# Diagnosis (@nstarman, coordinax maintainer, issue description): "Every `simplify` value check puts a possibly-traced comparison in an `if`, so simplifying under `jax.jit` raises instead of declining to simplify" (TracerBoolConversionError); "All six sites have the same shape: ... `if approx and jnp.allclose(op.R, jnp.eye(...), **kw):`"
# Problem: each transform's `simplify` overload tests its (possibly traced) parameters with `jnp.allclose` inside a Python `if`; `jax.jit` over code that simplifies a transform built from traced values fails at that `if`.
# Written for this corpus after src/coordinax/transforms/_src/actions/{rotate,reflect,shear,scale,general_linear,lorentz}.py (same structure, reduced; the jitted repro is the issue's).
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import plum


class Identity(eqx.Module):
    pass


identity = Identity()


class Rotate(eqx.Module):
    R: jax.Array


class Reflect(eqx.Module):
    H: jax.Array


class Shear(eqx.Module):
    H: jax.Array


class Scale(eqx.Module):
    s: jax.Array


class Linear(eqx.Module):
    matrix: jax.Array


class LorentzBoost(eqx.Module):
    beta: jax.Array


@plum.dispatch
def simplify(op: Rotate, /, *, approx: bool = True, **kw: Any):
    if approx and jnp.allclose(op.R, jnp.eye(3), **kw):  # expect: JF402
        return identity
    return op


@plum.dispatch
def simplify(op: Reflect, /, *, approx: bool = True, **kw: Any):
    if approx and jnp.allclose(op.H, jnp.eye(op.H.shape[0], dtype=op.H.dtype), **kw):  # expect: JF402
        return identity
    return op


@plum.dispatch
def simplify(op: Shear, /, *, approx: bool = True, **kw: Any):
    if approx and jnp.allclose(op.H, jnp.eye(op.H.shape[0], dtype=op.H.dtype), **kw):  # expect: JF402
        return identity
    return op


@plum.dispatch
def simplify(op: Scale, /, *, approx: bool = True, **kw: Any):
    if approx and jnp.allclose(op.s, 1.0, **kw):  # expect: JF402
        return identity
    return op


@plum.dispatch
def simplify(op: Linear, /, *, approx: bool = True, **kw: Any):
    m = op.matrix
    if approx and jnp.allclose(m, jnp.eye(m.shape[0], dtype=m.dtype), **kw):  # expect: JF402
        return identity
    return op


@plum.dispatch
def simplify(op: LorentzBoost, /, *, approx: bool = True, **kw: Any):
    if approx and jnp.allclose(op.beta, jnp.zeros_like(op.beta), **kw):  # expect: JF402
        return identity
    return op


jax.jit(lambda R: simplify(Rotate(R)).R)(jnp.eye(3))
# TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[]
