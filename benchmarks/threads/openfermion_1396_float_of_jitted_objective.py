# Thread: https://github.com/quantumlib/OpenFermion/pull/1396
# Diagnosis (@mhucka, OpenFermion maintainer, PR description): "The function is decorated with `@jax.jit` ... Calling `float()` on a `Tracer` object causes a `jax.errors.ConcretizationTypeError` because the actual value is not known when building the JAX computation graph."
# Problem: the jitted THC objective casts its traced result to a Python float before returning it; under jit that cast fails.
# Written for this corpus after src/openfermion/resource_estimates/pbc/thc/factorizations/thc_jax.py before that PR (reduced: one contraction instead of the k-point batches).
import jax
import jax.numpy as jnp


@jax.jit
def compute_objective_batched(chis, zetas, chols, norm_factors, num_kpts, penalty_param=0.0):
    eri_thc = jnp.einsum(
        "Jpm,Jqm,Jmn,Jrn,Jsn->Jpqrs",
        chis[0].conj(), chis[1], zetas, chis[2].conj(), chis[3],
        optimize=True,
    )
    eri_ref = jnp.einsum("Jnpq,Jnrs->Jpqrs", chols[0], chols[1], optimize=True)
    deri = (eri_thc - eri_ref) / num_kpts
    norm_left = norm_factors[0] * norm_factors[1]
    norm_right = norm_factors[2] * norm_factors[3]
    mpq_normalized = (
        jnp.einsum("JP,JPQ,JQ->JPQ", norm_left, zetas, norm_right, optimize=True) / num_kpts
    )
    lambda_z = jnp.sum(jnp.einsum("jpq->j", 0.5 * jnp.abs(mpq_normalized)) ** 2.0)
    res = 0.5 * jnp.sum(jnp.abs(deri) ** 2) + penalty_param * lambda_z
    return float(res)  # expect: JF402


nb, no, nt, nc = 2, 3, 4, 5
chi = jnp.ones((nb, no, nt))
zeta = jnp.ones((nb, nt, nt))
chol = jnp.ones((nb, nc, no, no))
norm = jnp.ones((nb, nt))
compute_objective_batched((chi, chi, chi, chi), zeta, (chol, chol), (norm, norm, norm, norm), 2)
