# Thread: https://github.com/markusschmitt/vmc_jax/commit/b2a93bd (developer fix commit; no issue thread)
# Diagnosis (@tszoldra, jVMC developer, commit message): "fix repeated jit" (the per-call `pmap_for_my_devices(lambda x: ...)` in `_mc_init` becomes a pmapped method built once in `__init__`, with the network passed as a static argument)
# Problem: every `sample()` call initialises the Markov chains through `_mc_init`, which pmaps a fresh lambda closing over the network and its parameters, so the acceptance-probability function is traced and compiled again on each call.
# Written for this corpus after jVMC/sampler.py and jVMC/global_defs.py before that commit (same structure, reduced).
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

myPmapDevices = jax.devices()
pmap_for_my_devices = partial(jax.pmap, devices=myPmapDevices)


class MCSampler:

    def __init__(self, net, states, mu=2):
        self.net = net
        self.states = states
        self.mu = mu

    def sample(self, parameters):
        self._mc_init(parameters)
        return self.states, self.logAccProb

    def _mc_init(self, netParams):
        net = self.net
        self.logAccProb = pmap_for_my_devices(  # expect: JF302
            lambda x: jax.vmap(lambda y: self.mu * jnp.real(net(netParams, y)), in_axes=(0,))(x)
        )(self.states)
        shape = (jax.device_count(),) + (1,)
        self.numProposed = jnp.zeros(shape, dtype=np.int64)
        self.numAccepted = jnp.zeros(shape, dtype=np.int64)


sampler = MCSampler(lambda p, s: jnp.sum(p * s), jnp.ones((jax.device_count(), 4, 3)))
for step in range(10):
    sampler.sample(jnp.ones(3))
