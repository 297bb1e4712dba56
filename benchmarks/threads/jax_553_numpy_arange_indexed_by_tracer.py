# Thread: https://github.com/jax-ml/jax/issues/553
# Diagnosis (@mattjj, JAX maintainer): "The issue is that `np.arange(x.shape[0])` creates a plain-old ndarray, and then indexing an ndarray with one of our tracers (like `x` will be here) means that the ndarray is asked what to do with this weird type it's never seen before."
# Problem: under jit, a NumPy array built from a static length is indexed with a traced integer array; NumPy cannot index with a tracer, so tracing fails.
# (Adapted minimally: in 2019 `jax.numpy.arange` returned a plain NumPy ndarray; the module spells that ndarray with NumPy's own `arange`.)
import numpy as onp
import jax.numpy as np
from jax import jit


def fun(x):
    r = onp.arange(x.shape[0])[x]  # expect: JF406
    return r


jit(fun)(np.array([0, 1, 2], dtype=np.int32))
