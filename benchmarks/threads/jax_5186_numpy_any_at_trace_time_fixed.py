# Thread: https://github.com/jax-ml/jax/issues/5186
# Diagnosis (@jakevdp, JAX maintainer): "If you want an operation like this to happen at compile-time, the recommended approach is to use a `numpy` operation rather than a `jax.numpy` operation. Thus this version will compile successfully in both 0.1.x and 0.2.x"
# Trap: the maintainer's recommended version: control flow on a NumPy value computed at trace time; nothing should be reported.
import numpy as np
import jax.numpy as jnp  # noqa: F401  (the thread's imports)
from jax import jit


@jit
def f():
  x = np.arange(10)
  if np.any(x == 0):
    pass


f()
