# Thread: https://github.com/google/flax/issues/3946
# Trap: counting `self` as argument 0 (self, x, train), static_argnums=(2,) makes `train` static under nn.remat, so `not train` is a Python bool (indexing per @cgarciae in https://github.com/google/flax/pull/2457). Nothing should be reported.
import jax
import jax.numpy as jnp
import flax.linen as nn


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        x = nn.BatchNorm(use_running_average=not train)(x)
        x = nn.relu(nn.Dense(256)(x))
        return nn.Dense(1)(x)


RematBlock = nn.remat(Block, static_argnums=(2,))

model = RematBlock()
variables = model.init(jax.random.PRNGKey(0), jnp.ones((4, 16)), True)
