# Thread: https://github.com/jax-ml/jax/issues/9023
# Diagnosis (@jakevdp, JAX maintainer): "The issue is when you declare an argument to a function static, it is only re-evaluated if its hash changes, and your class's hash does not change when `fn` is updated"
# Problem: a method jitted with `self` static calls `self.fn`; after `assign_fn` stores a new function on the object, the cached program still runs the old one.
from functools import partial

from jax import jit


class test:
    def __init__(self) -> None:
        pass

    @partial(jit, static_argnums=(0,))
    def wrapper(self, x):
        return self.fn(x)  # expect: JF404

    def assign_fn(self, fn):
        self.fn = fn


t = test()

fn = lambda x: x + 1
t.assign_fn(fn)
print(t.wrapper(1))  # 2, as expected

fn = lambda x: x + 2
t.assign_fn(fn)
print(t.wrapper(1))  # still 2, although it should be 3
print(t.fn(1))  # 3
