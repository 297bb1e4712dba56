# Thread: https://github.com/markusschmitt/vmc_jax/commit/fb800ec (maintainer fix commit; no issue thread)
# Diagnosis (@markusschmitt, jVMC maintainer, commit message and the comment it adds): "Reorganized JIT/VMAP stuff in NQS class to avoid repeated compiling." / "Need to keep handles of jit'd functions to avoid recompilation"
# Problem: every evaluation of the variational wave function builds `jit(vmap(self._eval, ...))` anew, so each call of `__call__` and `real_coefficients` jits a fresh vmapped function instead of reusing a compiled one.
# Written for this corpus after jVMC/vqs.py before that commit (same structure, reduced: a "net" is its parameter array, evaluated by `_eval`).
import jax.numpy as jnp
from jax import jit, vmap


class NQS:
    def __init__(self, logModNet, phaseNet=None):
        self.realNets = False
        if phaseNet is None:
            self.net = logModNet
        else:
            self.realNets = True
            self.net = [logModNet, phaseNet]

    def __call__(self, s):

        if self.realNets:
            logMod = jit(vmap(self._eval,in_axes=(None,0)))(self.net[0],s)  # expect: JF302
            phase = jit(vmap(self._eval,in_axes=(None,0)))(self.net[1],s)  # expect: JF302
            return logMod + 1.j * phase
        else:
            return jit(vmap(self._eval,in_axes=(None,0)))(self.net,s)  # expect: JF302

    def real_coefficients(self, s):

        if self.realNets:
            return jit(vmap(self._eval,in_axes=(None,0)))(self.net[0],s)  # expect: JF302
        else:
            return jit(vmap(self._eval_real,in_axes=(None,0)))(self.net,s)  # expect: JF302

    def _eval(self, net, s):
        return jnp.sum(net * s)

    def _eval_real(self, net, s):
        return jnp.real(self._eval(net, s))


psi = NQS(jnp.ones(4), jnp.zeros(4))
states = jnp.ones((16, 4))
for _ in range(10):
    psi(states)
    psi.real_coefficients(states)
