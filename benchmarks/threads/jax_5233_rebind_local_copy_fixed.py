# Thread: https://github.com/jax-ml/jax/issues/5233
# Diagnosis (@gnecula, JAX maintainer): "You only create a side-effect if you change non-local state for the function. In this case you are creating a new variable `x_copy` and then changing what it points to. There is no side effect here."
# Trap: rebinding a local name inside a jitted function is not a side effect; nothing should be reported.
import jax.numpy as jnp
from jax import jit


@jit
def func(x):
    x_copy = x
    x_copy = x_copy ** 2
    # do things with x_copy
    return x_copy


func(jnp.arange(3.0))
