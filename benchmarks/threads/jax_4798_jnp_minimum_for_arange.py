# Thread: https://github.com/jax-ml/jax/issues/4798
# Diagnosis (@hawkinsp, JAX maintainer): "Yes, this is expected. Please read: https://github.com/google/jax/blob/master/design_notes/omnistaging.md specifically https://github.com/google/jax/blob/master/design_notes/omnistaging.md#using-jaxnump[y-for-shape-computations]"
# Problem: `jnp.minimum` of a static shape and a static argument is a tracer under jit, and `jnp.arange(n_actual)` needs a concrete value.
import jax.numpy as jnp
import jax
from functools import partial


@partial(jax.jit, static_argnums=(0,))
def foo(n, x):
    n_aval = jnp.shape(x)[0]
    n_actual = jnp.minimum(n_aval, n)  # expect: JF405
    print(type(n), type(n_aval), type(n_actual))
    return jnp.arange(n_actual)


n = 5
x = jnp.arange(10)
foo(n,x)
