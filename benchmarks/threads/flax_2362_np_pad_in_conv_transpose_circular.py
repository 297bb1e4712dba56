# Thread: https://github.com/google/flax/issues/2362 (fixed by https://github.com/google/flax/pull/2364)
# Diagnosis (@cgarciae, flax maintainer, PR #2364): "Removes use of `np.pad` in favor of `jnp.pad` in `ConvTranspose` for circular padding."
# Problem: the circular-padding branch of `ConvTranspose` pads its traced output with NumPy's `np.pad`; under `vmap` (or jit) that raises TracerArrayConversionError.
# (The layer's circular branch, reduced to one spatial axis; the user's vmap over `layer.apply` as posted.)
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


class CircularConvTranspose(nn.Module):
  features: int
  kernel_size: int

  @nn.compact
  def __call__(self, inputs):
    kernel = self.param('kernel', nn.initializers.lecun_normal(),
                        (self.kernel_size, inputs.shape[-1], self.features))
    y = lax.conv_transpose(inputs, kernel, (1,), 'VALID',
                           dimension_numbers=('NWC', 'WIO', 'NWC'))
    period = inputs.shape[1]
    size_diff = -(y.shape[1] - period) % (2 * period)
    total_pad = ((size_diff + 1) // 2, size_diff // 2)
    y = np.pad(y, [(0, 0), total_pad, (0, 0)])  # expect: JF406
    y = y.reshape(y.shape[0], -1, period, y.shape[-1]).sum(axis=1)
    return y


layer = CircularConvTranspose(features=5, kernel_size=3)
sample_input = jnp.ones((1, 32, 2))
out, variables = layer.init_with_output(jax.random.PRNGKey(0), sample_input)

batch_input = jnp.ones((8, 4, 32, 2))
batch_apply = jax.vmap(layer.apply, in_axes=(None, 0))
batch_out = batch_apply(variables, batch_input)
