# Thread: https://github.com/pyro-ppl/numpyro/issues/2
# Diagnosis (@neerajprad, numpyro maintainer): "currently the `jitted` function within `step` is being compiled each time `step` is called."
# Problem: an SVI class's `step` method defines its update function in its own body and decorates it with `@jit`; the training loop calls `step` every iteration, so the ELBO update is traced and compiled again each time.
# Written for this corpus after numpyro's early minipyro SVI (numpyro/svi.py, commit 34c60065): same structure, not a copy.
import jax.numpy as jnp
from jax import grad, jit
from jax.example_libraries import optimizers


class SVI:
    def __init__(self, model, guide, opt_init, opt_update, loss):
        self.model = model
        self.guide = guide
        self.opt_init = opt_init
        self.opt_update = opt_update
        self.loss = loss

    def init_state(self, params):
        return self.opt_init(params)

    def step(self, i, data, opt_state):
        @jit  # expect: JF302
        def jitted(i, opt_state, data):
            params = optimizers.get_params(opt_state)
            value = self.loss(params, self.model, self.guide, data)
            grads = grad(self.loss)(params, self.model, self.guide, data)
            return value, self.opt_update(i, grads, opt_state)

        return jitted(i, opt_state, data)


def elbo(params, model, guide, data):
    return jnp.sum((data - params["loc"]) ** 2) + params["log_scale"] ** 2


def train(data, num_steps=1000):
    opt_init, opt_update = optimizers.adam(0.02)
    svi = SVI(None, None, opt_init, opt_update, elbo)
    opt_state = svi.init_state({"loc": 0.0, "log_scale": 0.0})
    for i in range(num_steps):
        loss, opt_state = svi.step(i, data, opt_state)
        if i % 100 == 0:
            print("step {} loss = {}".format(i, loss))
    return opt_state


train(jnp.ones(100) * 3.0)
