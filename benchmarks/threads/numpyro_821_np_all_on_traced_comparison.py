# Thread: https://github.com/pyro-ppl/numpyro/pull/821 (review thread on numpyro/contrib/tfp/distributions.py)
# Diagnosis (@fehiepsi, numpyro maintainer): "although `concentration` is not a tracer, `concentration < 0` will be a tracer"
# Problem: a guard checks that a closed-over jax array is not a tracer, but the comparison computed from it under jit is one, so NumPy's np.all on it raises TracerArrayConversionError.
# Written for this corpus after the reproduction in the review thread (same idiom).
import jax
import jax.numpy as jnp
import numpy as np
from numpyro.util import not_jax_tracer

concentration = jnp.arange(10.0)


def shift(x):
    if not_jax_tracer(concentration):
        if np.all(concentration < 0):  # expect: JF406  # expect?: JF402
            print("negative concentration")
    return x + concentration


jax.jit(shift)(1.0)
