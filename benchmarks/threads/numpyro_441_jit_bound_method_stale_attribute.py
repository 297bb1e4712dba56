# Thread: https://github.com/pyro-ppl/numpyro/issues/441
# Diagnosis (@fehiepsi, numpyro maintainer): "This issue seems to come from how JAX jit works" (his reproduction: after rebinding the instance attribute, the jitted bound method still "return[s] `1` instead of `2`").
# Problem: MCMC reused a jitted bound method; an instance attribute changed between calls is read from the cached trace, so the new value is ignored (stale result).
# Written for this corpus after fehiepsi's reproduction in the thread (same idiom).
from jax import jit


class Sampler:
    scale = 1

    def sample(self):
        return self.scale  # expect?: JF404


sampler = Sampler()
print(jit(sampler.sample)())

sampler.scale = 2
print(jit(sampler.sample)())  # still 1
