# Thread: https://github.com/jax-ml/jax/issues/6976
# Diagnosis (@jakevdp, JAX maintainer): "Good catch – I think this should be `jnp.cos` rather than `np.cos`"
# Problem: the FAQ example applies NumPy's np.cos to the traced argument of a jitted function: TracerArrayConversionError.
# (The print is the FAQ's deliberate display of the tracer, hence expect?.)
import jax
import numpy as np


def func(x):
  print(x)  # expect?: JF401
  return np.cos(x)  # expect: JF406


res = jax.jit(func)(0.)
