# Thread: https://github.com/jax-ml/jax/issues/1476
# Diagnosis (@gnecula, JAX maintainer): "Like `jit`, `vmap` also traces the function in order to find the operations that need to be vectorized.  The print statement will show the abstract values that JAX is using to trace the function, before vmap."
# Problem: `print(sample)` inside the vmapped ELBO of the advi.py example prints `Traced<ShapedArray(float32[2])>with<BatchTrace...>`, not the values.
# (Adapted minimally: the two Gaussian helpers are those of jax's examples/advi.py; the print is the user's, placed where they describe it.)
from functools import partial

import jax.numpy as np
from jax import random, vmap
from jax.scipy.stats import norm


def diag_gaussian_sample(rng, mean, log_std):
    return mean + np.exp(log_std) * random.normal(rng, mean.shape)


def diag_gaussian_logpdf(x, mean, log_std):
    return np.sum(vmap(norm.logpdf)(x, mean, np.exp(log_std)))


def elbo(logprob, rng, mean, log_std):
    sample = diag_gaussian_sample(rng, mean, log_std)
    print(sample)  # expect: JF401
    return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)


def batch_elbo(logprob, rng, params, num_samples):
    rngs = random.split(rng, num_samples)
    vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
    return np.mean(vectorized_elbo(rngs, *params))


def logprob(z):
    return -np.sum(z ** 2)


params = (np.zeros(2), np.zeros(2))
batch_elbo(logprob, random.PRNGKey(0), params, 10)
