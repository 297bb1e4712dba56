# Thread: https://github.com/jax-ml/jax/issues/196
# Diagnosis (@mattjj, JAX maintainer): "you can't print values inside a `jit`-compiled function yet, so in this case you should just remove `@jit`, and maybe move it to `opt_update` instead."
# Problem: a print of the parameters inside the jitted update shows `Traced<ShapedArray(float32[1,64])...>` once, at trace time, instead of the values.
# (Adapted minimally: the thread's `minmax` optimizers module is today's jax.example_libraries.optimizers.)
import jax.numpy as np
from jax import grad, jit
from jax.example_libraries import optimizers

opt_init, opt_update, get_params = optimizers.sgd(1e-3)


def loss(params, batch):
    inputs, targets = batch
    return np.mean((inputs @ params - targets) ** 2)


@jit
def update(i, opt_state, batch):
    params = get_params(opt_state)
    print('params', params)  # expect: JF401
    return opt_update(i, grad(loss)(params, batch), opt_state)


opt_state = opt_init(np.zeros((1, 64)))
batch = (np.ones((8, 1)), np.ones((8, 64)))
for i in range(3):
    opt_state = update(i, opt_state, batch)
