# Thread: https://github.com/pyro-ppl/numpyro/pull/1985 (commit cc871edfb3418f5d62aa799f084a8b6514d262cf)
# Diagnosis (@fehiepsi, numpyro maintainer, PR title and fix): "Fix tracer leak in hmc" (the fix stops rebinding the factory's `vv_update` with `nonlocal` inside the traced step and uses a local `vv_update_fn` instead)
# Problem: the jitted HMC step rebinds the enclosing factory's `vv_update` (via `nonlocal`) to an integrator built from the traced model arguments; the closure, and the tracers it holds, outlive the trace.
# Written for this corpus after numpyro/infer/hmc.py before that commit (same structure, reduced).
import jax
import jax.numpy as jnp
from jax.lax import fori_loop


def velocity_verlet(potential_fn, kinetic_fn):
    def init_fn(z, r):
        return z, r

    def update_fn(step_size, inverse_mass_matrix, state):
        z, r = state
        r = r - 0.5 * step_size * jax.grad(potential_fn)(z)
        z = z + step_size * inverse_mass_matrix * r
        r = r - 0.5 * step_size * jax.grad(potential_fn)(z)
        return z, r

    return init_fn, update_fn


def hmc(potential_fn=None, potential_fn_gen=None, kinetic_fn=None):
    vv_update = None

    def init_kernel(init_params, model_args=()):
        nonlocal vv_update
        pe_fn = potential_fn_gen(*model_args) if potential_fn_gen else potential_fn
        _, vv_update = velocity_verlet(pe_fn, kinetic_fn)
        return init_params

    def _hmc_next(step_size, inverse_mass_matrix, vv_state, model_args, num_steps):
        if potential_fn_gen:
            nonlocal vv_update
            pe_fn = potential_fn_gen(*model_args)
            _, vv_update = velocity_verlet(pe_fn, kinetic_fn)  # expect: JF403
        return fori_loop(
            0,
            num_steps,
            lambda i, val: vv_update(step_size, inverse_mass_matrix, val),
            vv_state,
        )

    def sample_kernel(state, model_args=()):
        z, r = state
        return _hmc_next(0.1, jnp.ones_like(z), (z, r), model_args, 10)

    return init_kernel, sample_kernel


def potential_fn_gen(data):
    return lambda z: 0.5 * jnp.sum((z - data) ** 2)


kinetic = lambda inverse_mass_matrix, r: 0.5 * jnp.sum(inverse_mass_matrix * r ** 2)
init_kernel, sample_kernel = hmc(potential_fn_gen=potential_fn_gen, kinetic_fn=kinetic)
data = jnp.ones(3)
state = (init_kernel(jnp.zeros(3), model_args=(data,)), jnp.zeros(3))
step = jax.jit(sample_kernel)
for _ in range(5):
    state = step(state, (data,))
