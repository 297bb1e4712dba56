# Thread: https://github.com/dynamiqs/dynamiqs/commit/a492bb27a5b449aa1e39824fbab30df93963baf3 (maintainer fix commit; no issue thread)
# Diagnosis (@pierreguilmin, dynamiqs maintainer): "Make vector_to_operator JIT compatible" / "it would be nice to always infer n, but the current implementation is not jit compatible"
# Problem: the operator size is inferred as `int(jnp.sqrt(x.shape[-2]))`; the shape is static, but under jit `jnp.sqrt` returns a tracer and `int()` of it fails.
# (The function as in dynamiqs/utils/vectorization.py before the fix; called from a jitted evolution step.)
import jax
import jax.numpy as jnp


def operator_to_vector(x):
    bshape = x.shape[:-2]
    return x.mT.reshape(*bshape, -1, 1)


def vector_to_operator(x):
    x = jnp.asarray(x)
    bshape = x.shape[:-2]
    n = int(jnp.sqrt(x.shape[-2]))  # expect: JF405
    return x.reshape(*bshape, n, n).mT


@jax.jit
def lindblad_step(rho_vec, L, dt):
    rho = vector_to_operator(rho_vec)
    drho = L @ rho @ L.conj().mT - 0.5 * (L.conj().mT @ L @ rho + rho @ L.conj().mT @ L)
    return operator_to_vector(rho + dt * drho)


rho0 = jnp.eye(4, dtype=jnp.complex64) / 4
L = jnp.diag(jnp.arange(4.0)).astype(jnp.complex64)
rho_vec = lindblad_step(operator_to_vector(rho0), L, 0.01)
