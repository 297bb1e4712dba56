# Thread: https://github.com/jax-ml/jax/issues/1600
# Diagnosis (@mattjj, JAX maintainer, opening the issue): "we create a new one each time we evaluate `pmap(f)` to produce a new pmapped version of `f`. ... patterns like `for i in range(100): x = pmap(update)(x)` are handy, but they're currently a foot-gun with respect to compilation caching."
# Problem: `pmap(update)` is rebuilt on every iteration of the training loop; each new wrapper missed the compilation cache and recompiled.
from jax import pmap
from jax.lib import xla_bridge as xb
import jax.numpy as np


def update(x):
  return x * 0.99


x = np.ones(xb.device_count())
for i in range(100):
  x = pmap(update)(x)  # expect: JF301
