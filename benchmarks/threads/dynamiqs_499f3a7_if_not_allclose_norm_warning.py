# Thread: https://github.com/dynamiqs/dynamiqs/commit/499f3a7b1ec5452f0b6d39ed0438067969d27d6d (maintainer fix commit; no issue thread)
# Diagnosis (Ronan Gautier, dynamiqs maintainer): "Fix jit-compatibility of state normalization warning" (the `if not jnp.allclose(...)` test replaced by `jax.lax.cond` around the warning)
# Problem: the solver warns about an unnormalised initial state behind a Python `if not jnp.allclose(norm, 1.0, ...)`; inside a jitted solve the norm is a tracer.
# (The check as in dynamiqs/_checks.py before the fix, on plain arrays; called from a jitted solve.)
import warnings

import jax
import jax.numpy as jnp


def _warn_non_normalised(x, argname):
    atol = 1e-2 if x.dtype == jnp.complex64 else 1e-6
    norm = jnp.linalg.norm(x)
    if not jnp.allclose(norm, 1.0, rtol=0.0, atol=atol):  # expect: JF402
        warnings.warn(
            f'Argument {argname} is not normalized (expected norm 1.0 but norm is'
            f' {norm}).',
            stacklevel=2,
        )


@jax.jit
def sesolve_final(H, psi0, dt):
    _warn_non_normalised(psi0, 'psi0')
    U = jax.scipy.linalg.expm(-1j * dt * H)
    return U @ psi0


H = jnp.array([[0.0, 1.0], [1.0, 0.0]], dtype=jnp.complex64)
psi = sesolve_final(H, jnp.array([[1.0], [0.0]], dtype=jnp.complex64), 0.1)
