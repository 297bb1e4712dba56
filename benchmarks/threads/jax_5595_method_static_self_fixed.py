# Thread: https://github.com/jax-ml/jax/issues/5595
# Diagnosis (@froystig, JAX maintainer): "In the first case, the expression `self.f` binds `f`'s first argument (to `self`), and evaluates to a function of only one argument (`x`), which `jax.jit` handles without issue. ... You might also consider the following approach: [partial(jit, static_argnums=0)]"
# Trap: the two forms the maintainer says work (jitting the bound method in __init__, and a method jitted with `self` static that does not touch `self`); nothing should be reported.
from functools import partial

import jax
from jax import jit


class A0:
    def __init__(self):
        self.f = jax.jit(self.f)
        pass

    # @jit
    def f(self, x):
        return x


class A1:
    @partial(jit, static_argnums=0)
    def f(self, x):
        return x


a = A0()
print(a.f(5))
print(A1().f(5))
