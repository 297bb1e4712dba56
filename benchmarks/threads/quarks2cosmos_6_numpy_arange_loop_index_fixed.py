# Thread: https://github.com/EiffL/Quarks2CosmosDataChallenge/pull/6
# Trap: the merged fix: the decoder loops over a NumPy range (`np.arange(5)[::-1]`), "explicitely not something to be traced", so `i` is a concrete integer for the tuple lookups. Nothing should be reported.
# Written for this corpus after quarks2cosmos/models/vae.py with that PR (same structure, reduced; the jitted apply shows how it runs).
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np


class Decoder(hk.Module):

  def __init__(self, channels_per_group=(32, 64, 128, 128, 32), name=None):
    super().__init__(name=name)
    self.channels_per_group = channels_per_group

  def __call__(self, inputs):
    net = hk.Linear(3 * 3 * 32)(inputs)
    net = net.reshape([-1, 3, 3, 32])
    strides = (1, 2, 2, 2, 2)
    for i in np.arange(5)[::-1]:
      net = hk.Conv2DTranspose(output_channels=self.channels_per_group[i],
                               kernel_shape=3,
                               stride=strides[i],
                               name="up_block_group_%d" % (i))(net)
    return net[..., 0]


decoder = hk.without_apply_rng(hk.transform(lambda z: Decoder()(z)))
z = jnp.zeros((1, 16))
params = decoder.init(jax.random.PRNGKey(0), z)
jax.jit(decoder.apply)(params, z)
