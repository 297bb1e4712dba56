# Thread: https://github.com/google/flax/commit/331bdc2c444e6dfdcce391e43b2d686e1bfdf8fd (fix commit following https://github.com/google/flax/pull/648; no issue thread)
# Trap: the fix from the commit: split points computed with NumPy from static shapes are concrete integers, which jnp.split accepts under jit. Nothing should be reported.
import jax
import jax.numpy as jnp
import flax.linen as nn
import numpy as np


class FusedGates(nn.Module):
  features: int

  @nn.compact
  def __call__(self, h):
    names = ['i', 'f', 'g', 'o']
    kernels = [self.param(f'k{n}', nn.initializers.lecun_normal(), (h.shape[-1], self.features)) for n in names]
    biases = [self.param(f'b{n}', nn.initializers.zeros, (self.features,)) for n in names]
    y = jnp.dot(h, jnp.concatenate(kernels, axis=-1)) + jnp.concatenate(biases, axis=-1)
    split_indices = np.cumsum([b.shape[0] for b in biases[:-1]])
    ys = jnp.split(y, split_indices, axis=-1)
    return dict(zip(names, ys))


gates = FusedGates(features=8)
h = jnp.ones((2, 8))
variables = gates.init(jax.random.PRNGKey(0), h)
jax.jit(gates.apply)(variables, h)
