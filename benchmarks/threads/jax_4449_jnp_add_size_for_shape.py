# Thread: https://github.com/jax-ml/jax/issues/4449
# Diagnosis (@mattjj, JAX maintainer): "Can you check out [this doc on omnistaging] and let me know if it answers your questions? (See in particular [this section]...)" -- the linked section is the omnistaging doc's "using jax.numpy for shape computations".
# Problem: `jnp.add(arr.size, 1)` on a static size returns a tracer under jit, so `jnp.ones((count,))` fails with "Shapes must be 1D sequences of concrete values of integer type".
import jax
import jax.numpy as jnp


@jax.jit
def custom_ones(arr):
  count = jnp.add(arr.size, 1)  # expect: JF405
  return jnp.ones((count,))


a = jnp.ones((3,))
custom_ones(a)
