# Thread: https://github.com/pyro-ppl/numpyro/pull/1859 (commit e2c3f136 "make sure that low and high are concrete values")
# Diagnosis (@fehiepsi, numpyro maintainer): "make sure that low and high are concrete values"
# Problem: `enumerate_support` reads the Python bounds of the distribution through `jnp.reshape(...)[0]`; under a trace (jitted enumeration) those are tracers, and `jnp.arange(low, high + 1)` needs concrete bounds.
# (The distribution reduced to the method and its checks; enumeration run inside a jitted log-density.)
import jax
import jax.numpy as jnp
import numpy as np


class DiscreteUniform:
    def __init__(self, low=0, high=1):
        self.low = low
        self.high = high
        self.batch_shape = np.shape(low)

    def log_prob(self, value):
        return -jnp.log(self.high + 1 - self.low) * jnp.ones_like(value)

    def enumerate_support(self, expand=True):
        if np.any(np.amax(self.low) != self.low):
            raise NotImplementedError("Inhomogeneous `low` not supported by `enumerate_support`.")
        if np.any(np.amax(self.high) != self.high):
            raise NotImplementedError("Inhomogeneous `high` not supported by `enumerate_support`.")
        low = jnp.reshape(self.low, -1)[0]  # expect: JF405
        high = jnp.reshape(self.high, -1)[0]  # expect: JF405
        values = jnp.arange(low, high + 1).reshape((-1,) + (1,) * len(self.batch_shape))
        if expand:
            values = jnp.broadcast_to(values, values.shape[:1] + self.batch_shape)
        return values


@jax.jit
def marginal_log_density(weights):
    d = DiscreteUniform(1, 4)
    support = d.enumerate_support()
    return jax.nn.logsumexp(d.log_prob(support) + weights[: support.shape[0]])


marginal_log_density(jnp.zeros(4))
