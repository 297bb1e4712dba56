# Thread: https://github.com/google/flax/pull/1258 (commit 05bd1855 "Fix places that were passing jnp.array where a shape was expected.")
# Diagnosis (@pschuh, JAX developer, merged by the flax maintainers): "Fix places that were passing jnp.array where a shape was expected."
# Trap: the maintainers' fix passes the slice sizes as a tuple of Python ints (`(1, 1, df)`); the start indices stay a jax array, which `lax.dynamic_slice` accepts traced. Nothing should be reported.
# (The example's position-embedding layer, reduced to the decode path; config fields inlined.)
import flax.linen as nn
import jax
import jax.numpy as jnp
from jax import lax


class AddPositionEmbs(nn.Module):
  max_len: int = 64
  decode: bool = True

  @nn.compact
  def __call__(self, inputs):
    pos_embedding = self.param(
        'pos_embedding', nn.initializers.normal(0.02),
        (1, self.max_len, inputs.shape[-1]))
    pe = pos_embedding[:, :inputs.shape[1], :]
    if self.decode:
      is_initialized = self.has_variable('cache', 'cache_index')
      cache_index = self.variable('cache', 'cache_index',
                                  lambda: jnp.array(0, dtype=jnp.uint32))
      if is_initialized:
        i = cache_index.value
        cache_index.value = i + 1
        _, _, df = pos_embedding.shape
        pe = lax.dynamic_slice(pos_embedding,
                               jnp.array((0, i, 0)),
                               (1, 1, df))
    return inputs + pe


model = AddPositionEmbs()
x = jnp.ones((2, 1, 16))
variables = model.init(jax.random.PRNGKey(0), x)


@jax.jit
def decode_step(variables, x):
  return model.apply(variables, x, mutable=['cache'])


out, cache = decode_step(variables, x)
