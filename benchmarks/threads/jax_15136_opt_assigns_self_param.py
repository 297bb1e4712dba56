# Thread: https://github.com/jax-ml/jax/issues/15136
# Diagnosis (@jakevdp, JAX maintainer): "Your code is failing because you are JIT-compiling an impure function ... Your options are either (1) don't jit-compile this function, or (2) don't modify `self` within this jit-compiled function."
# Problem: a jitted method with `self` static assigns the updated parameters to self.param: the write happens at trace time only.
# (The user's code was in a Colab; the method below is the one the maintainer quoted; the surrounding class is minimal.)
import functools

import jax.numpy as jnp
from jax import grad, jit


class NN:
    def __init__(self):
        self.param = [(jnp.ones((2, 2)), jnp.zeros(2))]
        self.lr = 0.1

    def loss(self, param, data, labels):
        (w, b), = param
        return jnp.mean((data @ w + b - labels) ** 2)


class Trainer:
    def __init__(self, nn, data, labels):
        self.nn = nn
        self.data = data
        self.labels = labels

    @functools.partial(jit, static_argnums=(0,))
    def opt(self):
        grads=grad(self.nn.loss)(self.nn.param,self.data,self.labels)
        self.param=[(w-self.nn.lr*dw,b-self.nn.lr*db) for (w,b),(dw,db) in zip(self.nn.param,grads)]  # expect: JF403
        return


trainer = Trainer(NN(), jnp.ones((4, 2)), jnp.zeros((4, 2)))
for _ in range(10):
    trainer.opt()
