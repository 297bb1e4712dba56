# Thread: https://github.com/jax-ml/jax/issues/1567
# Diagnosis (@mattjj, JAX maintainer): "The issue is that the `step` method violates functional purity: it has a side-effect (of updating `self.v` and `self.p`). You can only use `jit` on pure functions."
# Problem: a jitted method (self static) updates self.v and self.p; the updates happen at trace time and leave tracers on the object.
from functools import partial

import jax.numpy as np
from jax import jit


class World:
    def __init__(self, p, v):
        self.p = p
        self.v = v

    @partial(jit, static_argnums=(0,))
    def step(self, dt):
        a = - 9.8
        self.v += a * dt  # expect: JF403
        self.p += self.v *dt  # expect: JF403


world = World(np.array([0, 0]), np.array([1, 1]))

for i in range(1000):
    world.step(0.01)
print(world.p)
