# Thread: https://github.com/GalacticDynamics/coordinax/pull/561
# Diagnosis (@nstarman, coordinax maintainer): "Defer the zero-normal check so it survives jit (a plain `bool` on a traced value raises TracerBoolConversionError)."
# Problem: the `Reflect` and `Scale` constructors validate their inputs with `if bool(jnp.allclose(...))` / `if bool(jnp.any(jnp.isclose(...)))`; building the transform from traced values inside jit fails.
# (The two constructors as in coordinax/transforms before the fix, on plain arrays; built inside a jitted function.)
import jax
import jax.numpy as jnp

_MSG_ZERO_NORMAL = "Reflect.from_normal requires a non-zero normal."
_MSG_SINGULAR = "Scale.from_factors requires non-zero factors."


class Reflect:
    def __init__(self, H):
        object.__setattr__(self, "H", jnp.asarray(H))

    @classmethod
    def from_normal(cls, normal, /):
        n = jnp.asarray(normal)
        if n.ndim != 1:
            raise ValueError(f"Reflect.from_normal requires a vector normal; got shape={n.shape!r}.")
        norm = jnp.linalg.norm(n)
        if bool(jnp.allclose(norm, 0)):  # expect: JF402
            raise ValueError(_MSG_ZERO_NORMAL)
        n_hat = n / norm
        H = jnp.eye(n.shape[0], dtype=n_hat.dtype) - 2 * jnp.outer(n_hat, n_hat)
        return cls(H)


class Scale:
    def __init__(self, M):
        object.__setattr__(self, "M", jnp.asarray(M))

    @classmethod
    def from_factors(cls, factors, /):
        s = jnp.asarray(factors)
        if s.ndim != 1:
            raise ValueError(f"Scale.from_factors requires a vector; got shape={s.shape!r}.")
        if bool(jnp.any(jnp.isclose(s, 0))):  # expect: JF402
            raise ValueError(_MSG_SINGULAR)
        return cls(jnp.diag(s))


@jax.jit
def mirror_and_stretch(normal, factors, x):
    R = Reflect.from_normal(normal)
    S = Scale.from_factors(factors)
    return S.M @ (R.H @ x)


mirror_and_stretch(jnp.array([0.0, 0.0, 1.0]), jnp.array([1.0, 2.0, 3.0]), jnp.ones(3))
