# Category: framework bodies, traced by default: a flax linen Module's `__call__`/`@nn.compact`/`setup`, an
# nnx or equinox Module's `__call__`, haiku Modules and `hk.transform`ed functions; their flags
# (`training`, `deterministic`) stay Python values.
# Thread: https://github.com/google/flax/issues/743 (printing from a module under jit) and
# https://github.com/google/flax/issues/3171 (a `training: bool` flag of `__call__` passed as a Python value).
import equinox as eqx
import flax.linen as nn
import haiku as hk
import jax.numpy as jnp


class MLP(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x, training: bool):
        print(x.shape)  # a static shape
        print(x)  # expect: JF401
        if training:  # a Python flag
            x = nn.Dropout(0.5, deterministic=False)(x)
        if jnp.max(x) > 1.0:  # expect: JF402
            x = x / 2
        return nn.Dense(self.features)(x)


class Block(eqx.Module):
    def __call__(self, x, *, key=None):
        # Preview since the premise ledger (issue 40): nothing here shows `x` is an array, so that it is a
        # tracer is the framework's convention, an assumed premise (the cost of that change on this corpus).
        print(x)  # expect?: JF401
        return x


def forward(images, is_training):
    print(images)  # expect: JF401
    return hk.Linear(10)(images)


net = hk.transform(forward)


class Helper:
    def __call__(self, x):
        print(x)  # not a framework Module: not traced
        return x
