# Thread: https://github.com/dynamiqs/dynamiqs/commit/7e9872326076ec63feaa4fe4a4de950938125674 (developer fix commit; no issue thread)
# Diagnosis (Rémi Rousseau, dynamiqs developer): "Uses jax.lax.cond for jit compatibility"
# Problem: `eigenstates` chooses between `eigh` and `eig` with a Python `if isherm(x):`, and `isherm` returns a jax boolean; under jit that test is a tracer.
# (The helpers as in dynamiqs/utils/utils.py before the fix; called from a jitted function.)
import jax
import jax.numpy as jnp


def dag(x):
    return x.mT.conj()


def isherm(x, rtol=1e-5, atol=1e-8):
    x = jnp.asarray(x)
    return jnp.allclose(x, dag(x), rtol=rtol, atol=atol)


def eigenstates(x, lower_first=True):
    x = jnp.asarray(x)
    if x.shape[-1] != x.shape[-2]:
        raise ValueError('Argument `x` must be a square matrix.')

    if isherm(x):  # expect: JF402
        P, D = jax.lax.linalg.eigh(x, sort_eigenvalues=True)
        if not lower_first:
            P = jnp.flip(P, axis=-1)
            D = jnp.flip(D, axis=-1)
    else:
        D, P = jax.lax.linalg.eig(x, compute_left_eigenvectors=False)
        idx = jnp.argsort(D, axis=-1)
        if not lower_first:
            idx = idx[..., ::-1]
        D = jnp.take_along_axis(D, idx, axis=-1)
        P = jnp.take_along_axis(P, idx[..., None, :], axis=-1)
    return D, P


@jax.jit
def ground_state(H):
    D, P = eigenstates(H)
    return P[..., :, 0]


a = jnp.diag(jnp.sqrt(jnp.arange(1.0, 5.0)), k=1)
H = dag(a) @ dag(a) @ a @ a
psi = ground_state(H)
