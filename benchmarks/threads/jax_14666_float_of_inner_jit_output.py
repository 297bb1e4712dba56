# Thread: https://github.com/jax-ml/jax/issues/14666
# Diagnosis (@jakevdp, JAX maintainer, in the issue he filed): "fN = jit_f(N)  # this is a non-static traced value" / "return float(fN)  # fails because fN is not static"
# Problem: the output of a jitted call is a tracer even when its input was a static argument, so `float()` of it raises ConcretizationTypeError.
import jax
import jax.numpy as jnp
from functools import partial


def f(N):
  return N

jit_f = jax.jit(f, static_argnums=0)


@partial(jax.jit, static_argnums=0)
def g2(N):
  fN = jit_f(N)  # this is a non-static traced value
  return float(fN)  # expect: JF402
print(g2(1))
# ConcretizationTypeError
