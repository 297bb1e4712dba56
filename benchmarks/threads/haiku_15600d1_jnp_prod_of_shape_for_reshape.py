# Thread: https://github.com/google-deepmind/dm-haiku/commit/15600d1 (maintainer fix commit; no issue thread)
# Diagnosis (Haiku team, dm-haiku maintainers, commit message): "Use original numpy, not jax.numpy, for shape calculations and dummy inputs." (`jnp.prod(x.shape[:num_dims])` becomes `np.prod(...)`)
# Problem: `merge_leading_dims` computes the new leading dimension with `jnp.prod` of static shape entries and passes it to `reshape`; under a transformation the product is a traced array where a Python int is needed.
# Written for this corpus after haiku/_src/basic.py before that commit (same structure, reduced; the jitted caller shows how it runs).
import jax
import jax.numpy as jnp


def ndim_at_least(x, num_dims):
  if not isinstance(x, jnp.ndarray):
    x = jnp.asarray(x)
  return x.ndim >= num_dims


def merge_leading_dims(x, num_dims):
  """Merge leading dimensions."""
  if not ndim_at_least(x, num_dims):
    return x
  new_shape = (jnp.prod(x.shape[:num_dims]),) + x.shape[num_dims:]  # expect: JF405
  return jnp.reshape(x, new_shape)


@jax.jit
def flatten_time_and_batch(x):
  return merge_leading_dims(x, 2)


flatten_time_and_batch(jnp.ones((4, 3, 5)))
