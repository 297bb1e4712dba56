# Thread: https://github.com/netket/netket/pull/1401
# Diagnosis (@PhilipVinc, netket maintainer): "random state for hilbert is not jittable. It was previously not tested by our tests."
# Problem: the number of grid points per dimension is computed with `jnp.ceil` from the static particle count; inside the jitted sampler that is a tracer, and `int()` of it fails.
# (The Hilbert space reduced to a small frozen class; the random-state function jitted with the space static, as the samplers use it.)
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class Particle:
    n_particles: int
    extent: tuple

    @property
    def size(self):
        return self.n_particles * len(self.extent)


@partial(jax.jit, static_argnums=(0, 2))
def random_state(hilb, key, batches):
    sdim = len(hilb.extent)
    width = min(hilb.extent) / (4.0 * hilb.n_particles)
    noise = width * jax.random.normal(key, shape=(batches, hilb.size))
    n = int(jnp.ceil(hilb.n_particles ** (1 / sdim)))  # expect: JF405
    xs = jnp.linspace(0, min(hilb.extent), n)
    uniform = jnp.array(jnp.meshgrid(*(sdim * [xs]))).reshape(-1, sdim)
    uniform = jnp.tile(uniform[: hilb.n_particles].reshape(-1), (batches, 1))
    return (uniform + noise) % np.array(min(hilb.extent))


hilb = Particle(n_particles=10, extent=(10 / (0.3 * 2.9673),))
states = random_state(hilb, jax.random.PRNGKey(0), 4)
