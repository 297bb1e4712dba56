# Thread: https://github.com/deepqmc/deepqmc/commit/e5f368b (maintainer fix commit; no issue thread)
# Diagnosis (Zeno Schätzle, deepqmc maintainer, commit message): "revert to cond to make sampling jitable" (the Python `if state['step'] > self.frequency:` becomes `jax.lax.cond(state['step'] > self.frequency, self.resample_walkers, ...)`)
# Problem: the resampling sampler decides whether to resample the walkers with a Python `if` on the traced step counter kept in its state, so the jitted sampling step cannot be traced.
# Written for this corpus after src/deepqmc/jax/sampling.py before that commit (same structure, reduced; the jitted step shows how it runs).
import jax
import jax.numpy as jnp


def multinomial_resampling(rng, weights):
    n = weights.shape[-1]
    return jax.random.choice(rng, n, (n,), p=weights / weights.sum())


class ResampledSampler:
    WALKER_STATE = ['r', 'psi']

    def __init__(self, frequency=5):
        self.frequency = frequency

    def sample(self, rng, state):
        rng_re, rng_smpl = jax.random.split(rng)
        state = dict(state, r=state['r'] + jax.random.normal(rng_smpl, state['r'].shape),
                     step=state['step'] + 1)
        weight = jnp.exp(state['log_weight'])
        stats = {'sampling/effective sample size': jnp.sum(weight) ** 2 / jnp.sum(weight**2)}
        if state['step'] > self.frequency:  # expect: JF402
            idx = multinomial_resampling(rng_re, weight)
            state = {
                **{k: v[idx] for k, v in state.items() if k in self.WALKER_STATE},
                'log_weight': jnp.zeros_like(weight),
                'step': jnp.array(0),
            }
        return state, state['r'], stats


sampler = ResampledSampler()
state = {'r': jnp.zeros((16, 3)), 'psi': jnp.ones(16),
         'log_weight': jnp.zeros(16), 'step': jnp.array(0)}
jax.jit(sampler.sample)(jax.random.PRNGKey(0), state)
