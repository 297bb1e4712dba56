# Thread: https://github.com/pyro-ppl/numpyro/issues/1836
# Diagnosis (@fehiepsi, numpyro maintainer): "It is better to move the definition to the model. Some distributions cache info during running, which might cause tracer leakage."
# Trap: the maintainer's advice: build the distribution inside the traced function. The cached attribute is then set on an object the trace itself creates, and nothing outlives the call. Nothing should be reported.
# (numpyro's `lazy_property` and `TruncatedNormal` reduced as in the companion case; the distribution now built in the jitted log-density.)
import functools
import math

import jax
import jax.numpy as jnp
from jax.scipy.stats import norm


class lazy_property(object):
    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class TruncatedNormal:
    def __init__(self, loc=0.0, scale=1.0, low=-math.inf, high=math.inf):
        self.loc, self.scale, self.low, self.high = loc, scale, low, high

    @lazy_property
    def _log_diff_tail_probs(self):
        cdf_low = norm.cdf(self.low, self.loc, self.scale)
        cdf_high = norm.cdf(self.high, self.loc, self.scale)
        return jnp.log(cdf_high - cdf_low)

    def log_prob(self, value):
        return norm.logpdf(value, self.loc, self.scale) - self._log_diff_tail_probs


@jax.jit
def log_density(sigma):
    prior = TruncatedNormal(loc=1.0, scale=0.5, low=0.0, high=2.0)
    return prior.log_prob(sigma)


log_density(0.8)
log_density(0.5)
