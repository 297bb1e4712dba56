# Thread: https://github.com/aesara-devs/aesara/issues/629
# Diagnosis (@rlouf, aesara maintainer, while writing the JAX conversion of `Assert`): "The following function ... will raise a `ConcretizationTypeError`" (a Python `if` on the jitted function's argument)
# Problem: the jitted function branches with a Python `if` on its traced argument; under `jax.jit` the comparison has no concrete value.
import jax


def fn(x):
    if x < 0:  # expect: JF402
        return 1
    return x


f = jax.jit(fn)
f(-1)
