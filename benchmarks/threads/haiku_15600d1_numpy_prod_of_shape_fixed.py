# Thread: https://github.com/google-deepmind/dm-haiku/commit/15600d1 (maintainer fix commit; no issue thread)
# Trap: the maintainers' fix: the product of static shape entries is computed with NumPy (`np.prod`), so `reshape` receives a concrete integer under any transformation. Nothing should be reported.
# Written for this corpus after haiku/_src/basic.py at that commit (same structure, reduced; the jitted caller shows how it runs).
import jax
import jax.numpy as jnp
import numpy as np


def ndim_at_least(x, num_dims):
  if not isinstance(x, jnp.ndarray):
    x = jnp.asarray(x)
  return x.ndim >= num_dims


def merge_leading_dims(x, num_dims):
  """Merge leading dimensions."""
  if not ndim_at_least(x, num_dims):
    return x
  new_shape = (np.prod(x.shape[:num_dims]),) + x.shape[num_dims:]
  return jnp.reshape(x, new_shape)


@jax.jit
def flatten_time_and_batch(x):
  return merge_leading_dims(x, 2)


flatten_time_and_batch(jnp.ones((4, 3, 5)))
