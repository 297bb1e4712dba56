# Thread: https://github.com/jax-ml/jax/issues/4409
# Diagnosis (@mattjj, JAX maintainer): "The purpose of #3370 was to stop doing any constant folding in Python. ... As a result, anything you want evaluated at trace-time should use the original numpy (as in `import numpy as np` and `depth = np.log2(num_clusters) + 1)`)."
# Problem: `depth` is computed with jnp from a static shape, so under jit it is a tracer and `random.split(key, num_splittings)` fails.
# (The thread shows the lines of a larger algorithm; they are put in a jitted function here.)
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import random


class SamplerState(NamedTuple):
    mu: jnp.ndarray


@jax.jit
def split_clusters(sampler_state, key):
    num_clusters = sampler_state.mu.shape[0]  # 2^(depth-1)
    depth = jnp.log2(num_clusters) + 1  # expect: JF405
    depth = depth.astype(jnp.int_)
    print(depth, type(depth))
    num_splittings = 2 ** (depth - 1) - 1
    keys = random.split(key, num_splittings)
    return keys


split_clusters(SamplerState(mu=jnp.zeros((8, 2))), random.PRNGKey(0))
