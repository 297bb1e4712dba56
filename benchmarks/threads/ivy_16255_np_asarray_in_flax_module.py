# Thread: https://github.com/unifyai/ivy/pull/16255
# Diagnosis (@Sam-Armstrong, ivy developer, PR author): a flax module's `x = np.asarray(x)` throws "`TracerArrayConversionError`" under tracing; "when we change `x = np.asarray(x)` to `x = jnp.asarray(x)` it works fine."
# Problem: a flax linen Module converts its (traced) input with NumPy in __call__; traced by jit it raises TracerArrayConversionError.
# Written for this corpus after the PR's minimal example (same module layout; ivy's compiler replaced by jax.jit).
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np


class Linear(nn.Module):
    out_size: int

    def setup(self):
        self.dense = nn.Dense(self.out_size)

    def __call__(self, x):
        x = np.asarray(x)  # expect: JF406
        return self.dense(x)


class Net(nn.Module):
    out_size: int
    hidden_size: int = 4

    def setup(self):
        self.l0 = Linear(self.hidden_size)
        self.l1 = Linear(self.out_size)

    def __call__(self, x):
        x = jnp.expand_dims(x, 0)
        x = jnp.tanh(self.l0(x))
        return jnp.tanh(self.l1(x))[0]


net = Net(out_size=1)
inputs = jnp.array([[0.1, 0.2]])
variables = net.init(jax.random.PRNGKey(0), inputs)
jax.jit(net.apply)(variables, inputs)
