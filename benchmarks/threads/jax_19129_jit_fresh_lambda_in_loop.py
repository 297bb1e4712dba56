# Thread: https://github.com/jax-ml/jax/pull/19129
# Diagnosis (@mattjj, JAX maintainer, PR description): "once the user knows that the cache misses are due to changing dtypes, or due to jit being passed a new callable object on every iteration of a loop, it's often clear what to do" (his EXAMPLE 3, "redefining function in a loop")
# Problem: `jax.jit` of a lambda written inside the loop body is a new callable every iteration, so each iteration traces and compiles again.
import jax
import jax.numpy as jnp
import numpy as np


@jax.jit
def f(x, y):
  return jnp.sin(x) + y['hi']


f(1, {'hi': np.arange(3)})
f(1, {'hi': np.arange(4)})  # a new shape: a legitimate retrace

for _ in range(2):
  jax.jit(lambda x: 2 * x)(3)  # expect: JF301
