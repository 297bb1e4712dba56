# Thread: https://github.com/pyro-ppl/numpyro/issues/1651 (also https://github.com/pyro-ppl/numpyro/issues/1836, fixed in https://github.com/pyro-ppl/numpyro/pull/1843)
# Diagnosis (@fehiepsi, numpyro maintainer): "I think this is expected for lazy properties. Jax does not allow side effect, hence creating attribute of a global jax pytree object (like Distribution) will leak the trace."
# Problem: a truncated distribution stored in a dictionary outside the model caches its normalising constant with `setattr` the first time it is evaluated; under jit that value is a tracer and stays on the global object, so the next use outside the trace fails with a leaked tracer.
# (numpyro's `lazy_property` and `TruncatedNormal` reduced to what the thread exercises; the user's priors dictionary evaluated in a jitted log-density and again eagerly.)
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
        setattr(instance, self.wrapped.__name__, value)  # expect: JF403
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


priors = {"sigma": TruncatedNormal(loc=1.0, scale=0.5, low=0.0, high=2.0)}


@jax.jit
def log_density(sigma):
    return priors["sigma"].log_prob(sigma)


log_density(0.8)
priors["sigma"].log_prob(0.5)  # UnexpectedTracerError: the cached value is the tracer
