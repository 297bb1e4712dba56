# Thread: https://github.com/jax-ml/jax/issues/4409
# Diagnosis (@mattjj, JAX maintainer): "anything you want evaluated at trace-time should use the original numpy (as in `import numpy as np` and `depth = np.log2(num_clusters) + 1)`)."
# Trap: the maintainer's fix applied to the thread's lines: the depth is computed with NumPy from the static shape, so `random.split` gets a Python-computable count; nothing should be reported.
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import random


class SamplerState(NamedTuple):
    mu: jnp.ndarray


@jax.jit
def split_clusters(sampler_state, key):
    num_clusters = sampler_state.mu.shape[0]  # 2^(depth-1)
    depth = np.log2(num_clusters) + 1
    depth = depth.astype(jnp.int_)
    num_splittings = 2 ** (depth - 1) - 1
    keys = random.split(key, num_splittings)
    return keys


split_clusters(SamplerState(mu=jnp.zeros((8, 2))), random.PRNGKey(0))
