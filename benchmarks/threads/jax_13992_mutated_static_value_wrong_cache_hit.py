# Thread: https://github.com/jax-ml/jax/issues/13992
# Diagnosis (@jakevdp, JAX maintainer): "Mutating hashed objects is an antipattern, as object identity should always imply object equality"
# Problem: a hashable object passed as a static argument is mutated between calls; the jit cache then hands back a program compiled for the old value (the last call prints 101, not 1).
from functools import partial

from jax import jit


class StaticValue:
    def __init__(self, val):
        self.val = val

    def __hash__(self):
        return hash(self.val)

    def __eq__(self, other):
        return isinstance(other, StaticValue) and self.val == other.val


@partial(jit, static_argnums=0)
def add(v, y):
    return y + v.val  # expect: JF404


v = StaticValue(100)
print(add(v, 1))  # 101

v.val = 0
print(add(v, 1))  # 1: cache miss, the hash changed
print(add(v, 1))  # 101: cache hit on the wrong compiled function
