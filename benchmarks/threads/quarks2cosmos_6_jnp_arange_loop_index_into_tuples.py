# Thread: https://github.com/EiffL/Quarks2CosmosDataChallenge/pull/6
# Diagnosis (@IonMich, PR author, "fix potential TracerIntegerConversionError in Decoder": "replacing JAX array with numpy array, so that it is explicitely not something to be traced"; merged by @EiffL, the project's maintainer: "LGTM! ... Many thanks for the fix")
# Problem: the VAE decoder loops `for i in jnp.arange(5)[::-1]` and uses `i` to index Python tuples of block settings; under `jit` the elements of a `jnp` array are traced, so the tuple indexing needs `__index__` of a tracer.
# Written for this corpus after quarks2cosmos/models/vae.py before that PR (same structure, reduced; the jitted apply shows how it runs).
import haiku as hk
import jax
import jax.numpy as jnp


class Decoder(hk.Module):

  def __init__(self, channels_per_group=(32, 64, 128, 128, 32), name=None):
    super().__init__(name=name)
    self.channels_per_group = channels_per_group

  def __call__(self, inputs):
    net = hk.Linear(3 * 3 * 32)(inputs)
    net = net.reshape([-1, 3, 3, 32])
    strides = (1, 2, 2, 2, 2)
    for i in jnp.arange(5)[::-1]:  # expect: JF405
      net = hk.Conv2DTranspose(output_channels=self.channels_per_group[i],
                               kernel_shape=3,
                               stride=strides[i],
                               name="up_block_group_%d" % (i))(net)
    return net[..., 0]


decoder = hk.without_apply_rng(hk.transform(lambda z: Decoder()(z)))
z = jnp.zeros((1, 16))
params = decoder.init(jax.random.PRNGKey(0), z)
jax.jit(decoder.apply)(params, z)
