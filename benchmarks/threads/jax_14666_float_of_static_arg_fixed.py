# Thread: https://github.com/jax-ml/jax/issues/14666
# Diagnosis (@jakevdp, JAX maintainer, in the issue he filed): "fN = f(N)  # this is a static int" / "return float(fN)  # does not fail"
# Trap: with the un-jitted helper the value stays a static Python int (N is a static argument), so `float()` is fine; nothing should be reported.
import jax
import jax.numpy as jnp
from functools import partial


def f(N):
  return N


@partial(jax.jit, static_argnums=0)
def g1(N):
  fN = f(N)  # this is a static int
  return float(fN)  # does not fail
print(g1(1))
# 1.0
