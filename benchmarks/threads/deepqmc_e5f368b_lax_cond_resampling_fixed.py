# Thread: https://github.com/deepqmc/deepqmc/commit/e5f368b (maintainer fix commit; no issue thread)
# Trap: the maintainer's fix: resampling moves into a method and the choice is made with `jax.lax.cond(state['step'] > self.frequency, self.resample_walkers, lambda rng, state: state, rng_re, state)`. Nothing should be reported.
# Written for this corpus after src/deepqmc/jax/sampling.py at that commit (same structure, reduced).
import jax
import jax.numpy as jnp


def multinomial_resampling(rng, weights):
    n = weights.shape[-1]
    return jax.random.choice(rng, n, (n,), p=weights / weights.sum())


class ResampledSampler:
    WALKER_STATE = ['r', 'psi']

    def __init__(self, frequency=5):
        self.frequency = frequency

    def resample_walkers(self, rng_re, state):
        idx = multinomial_resampling(rng_re, jnp.exp(state['log_weight']))
        return {
            **{k: (v[idx] if k in self.WALKER_STATE else v) for k, v in state.items()},
            'step': jnp.array(0),
            'log_weight': jnp.zeros_like(state['log_weight']),
        }

    def sample(self, rng, state):
        rng_re, rng_smpl = jax.random.split(rng)
        state = dict(state, r=state['r'] + jax.random.normal(rng_smpl, state['r'].shape),
                     step=state['step'] + 1)
        weight = jnp.exp(state['log_weight'])
        stats = {'sampling/effective sample size': jnp.sum(weight) ** 2 / jnp.sum(weight**2)}
        state = jax.lax.cond(
            state['step'] > self.frequency,
            self.resample_walkers,
            lambda rng, state: state,
            rng_re,
            state,
        )
        return state, state['r'], stats


sampler = ResampledSampler()
state = {'r': jnp.zeros((16, 3)), 'psi': jnp.ones(16),
         'log_weight': jnp.zeros(16), 'step': jnp.array(0)}
jax.jit(sampler.sample)(jax.random.PRNGKey(0), state)
