# Thread: https://github.com/google/flax/issues/3946
# Diagnosis (@cgarciae, flax maintainer, stating the indexing in https://github.com/google/flax/pull/2457): nn.checkpoint "subtracts `-1` from each `static_argnum` ... because `self` (the Module) is never passed to the lifted transformation."
# Problem: nn.remat's static_argnums count `self`, so static_argnums=(1,) names `x`, not the `train` flag; `train` stays traced and `not train` raises a ConcretizationTypeError at init.
# Written for this corpus after the reproducer (same idiom).
import jax
import jax.numpy as jnp
import flax.linen as nn


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        x = nn.BatchNorm(use_running_average=not train)(x)  # expect: JF402
        x = nn.relu(nn.Dense(256)(x))
        return nn.Dense(1)(x)


RematBlock = nn.remat(Block, static_argnums=(1,))

model = RematBlock()
variables = model.init(jax.random.PRNGKey(0), jnp.ones((4, 16)), True)
