# Thread: https://github.com/jax-ml/jax/issues/905
# Diagnosis (@mattjj, JAX maintainer, opening the issue after users hit it): "When `x` is an abstract float, these things can all raise similar errors: `if x > 0` ... `0 <= x < 5` ... `0 <= x and x < 5`" ("it works to write `0 <= x & x < 5` because we can override `&` but not `and`")
# Problem: Python `if`, chained comparisons and `and` on a traced float need a concrete bool; under jit each one fails with "Abstract value passed to `bool`".
import jax.numpy as np
from jax import jit


@jit
def clip_negative(x):
    if x > 0:  # expect: JF402
        return x
    return 0. * x


@jit
def in_window(x):
    return np.where(0 <= x < 5, x, 0.)  # expect: JF402


@jit
def in_window_and(x):
    return np.where(0 <= x and x < 5, x, 0.)  # expect: JF402


clip_negative(1.)
in_window(1.)
in_window_and(1.)
