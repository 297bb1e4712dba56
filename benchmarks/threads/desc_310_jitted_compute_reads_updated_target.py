# Thread: https://github.com/PlasmaControl/DESC/pull/310
# Diagnosis (@f0uriest, DESC maintainer): "Because JAX compiles `self` as a static argument for jitted methods, updating the attributes of the objective (target, weight etc) are not correctly updated in the jitted code."
# Problem: an objective jits its bound `compute` method once in `_set_derivatives`; the optimization loop then changes `objective.target` between solves, but the compiled `compute` keeps the target it was traced with.
# (The objective reduced to a quadratic penalty on a parameter vector; the continuation loop over targets as a user writes it.)
import jax.numpy as jnp
from jax import jit


class AspectRatio:
    def __init__(self, target=2.0, weight=1.0):
        self.target = target
        self.weight = weight

    def compute(self, R_lmn):
        f = jnp.sum(R_lmn**2) / (1.0 + jnp.abs(R_lmn[0]))
        return (f - self.target) * self.weight  # expect: JF404

    def _set_derivatives(self, use_jit=True):
        if use_jit:
            self.compute = jit(self.compute)

    def build(self, use_jit=True):
        self._set_derivatives(use_jit=use_jit)


objective = AspectRatio(target=2.0)
objective.build(use_jit=True)
R_lmn = jnp.linspace(0.1, 1.0, 10)
for target in [2.0, 4.0, 6.0, 8.0]:
    objective.target = target
    residual = objective.compute(R_lmn)
