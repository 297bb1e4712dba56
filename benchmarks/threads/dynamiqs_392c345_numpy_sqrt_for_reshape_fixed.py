# Thread: https://github.com/dynamiqs/dynamiqs/commit/392c3456a656ee55fd926668bbbbe02973519869 (maintainer fix commit; no issue thread)
# Diagnosis (@pierreguilmin, dynamiqs maintainer): "Fix JIT of vector_to_operator, thanks @abocquet"
# Trap: the maintainer's later fix infers the size with `int(np.sqrt(x.shape[-2]))`, host arithmetic on the static shape, which works under jit. Nothing should be reported.
# (The function as in dynamiqs/utils/vectorization.py after the fix; called from a jitted evolution step.)
import jax
import jax.numpy as jnp
import numpy as np


def operator_to_vector(x):
    bshape = x.shape[:-2]
    return x.mT.reshape(*bshape, -1, 1)


def vector_to_operator(x):
    x = jnp.asarray(x)
    bshape = x.shape[:-2]
    n = int(np.sqrt(x.shape[-2]))
    return x.reshape(*bshape, n, n).mT


@jax.jit
def lindblad_step(rho_vec, L, dt):
    rho = vector_to_operator(rho_vec)
    drho = L @ rho @ L.conj().mT - 0.5 * (L.conj().mT @ L @ rho + rho @ L.conj().mT @ L)
    return operator_to_vector(rho + dt * drho)


rho0 = jnp.eye(4, dtype=jnp.complex64) / 4
L = jnp.diag(jnp.arange(4.0)).astype(jnp.complex64)
rho_vec = lindblad_step(operator_to_vector(rho0), L, 0.01)
