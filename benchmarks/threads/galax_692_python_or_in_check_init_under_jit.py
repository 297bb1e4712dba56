# Thread: https://github.com/GalacticDynamics/galax/pull/692
# Diagnosis (@adrn, galax maintainer, PR description): "Inside of a JITted function, we create a potential instance. We tried using the `LeeSutoNFWPotential` but get a `TracerBoolConversionError` - I think it's related to the Python `or` in the `__check_init__`, so I switched that out for a `jnp.logical_or`." (reviewed and merged with @nstarman)
# Problem: the potential's `__check_init__` combines two comparisons of its axis parameters with Python's `or`; when the potential is built inside a jitted function the parameters are traced and `or` needs a concrete truth value.
# Written for this corpus after src/galax/potential/_src/builtin/nfw.py before that PR (same structure, reduced: parameters are plain callables of time).
import equinox as eqx
import jax
import jax.numpy as jnp


class ConstantParameter(eqx.Module):
    value: jax.Array

    def __call__(self, t):
        return self.value


class LeeSutoTriaxialNFWPotential(eqx.Module):
    m: ConstantParameter
    r_s: ConstantParameter
    a1: ConstantParameter
    a2: ConstantParameter
    a3: ConstantParameter

    def __check_init__(self) -> None:
        t = jnp.asarray(0.0)
        _ = eqx.error_if(
            t,
            (self.a1(t) < self.a2(t)) or (self.a2(t) < self.a3(t)),  # expect: JF402
            "a1 >= a2 >= a3 is required",
        )

    def potential(self, xyz, t):
        r = jnp.linalg.norm(xyz / jnp.stack([self.a1(t), self.a2(t), self.a3(t)]))
        return -self.m(t) * jnp.log1p(r / self.r_s(t)) / r


@jax.jit
def potential_at(m, a1, a2, a3, xyz):
    pot = LeeSutoTriaxialNFWPotential(
        ConstantParameter(m), ConstantParameter(jnp.asarray(15.0)),
        ConstantParameter(a1), ConstantParameter(a2), ConstantParameter(a3))
    return pot.potential(xyz, 0.0)


potential_at(1e11, 1.0, 0.9, 0.8, jnp.array([1.0, 0.0, 0.0]))
