# Thread: https://github.com/jax-ml/jax/pull/16404
# Diagnosis (@jakevdp, JAX maintainer, PR description example): "jax.errors.TracerArrayConversionError: The numpy.ndarray conversion method __array__() was called on the JAX Tracer object"
# Problem: a function differentiated with `jax.grad` calls NumPy's `np.sin` on its traced argument; NumPy asks the tracer for a concrete array and the gradient cannot be taken.
import jax
import numpy as np


@jax.grad
def sum_sin(x):
  return np.sin(x).sum()  # expect: JF406


sum_sin(np.random.randn(10, 10))
