# Thread: https://github.com/jax-ml/jax/pull/5492
# Diagnosis (@mattjj, JAX maintainer): "raising an error as soon as a trace finishes where one of its corresponding tracers was stashed in global context by a user side-effect ... This should help us (and eventually users) catch one of the main sources of confusing bugs with JAX"
# Problem: a jitted function appends its argument to a module-level list: the append runs once, at trace time, and stores a tracer.
import jax
from jax import jit

lst = []


@jit
def f(x):
    lst.append(x)  # expect: JF403
    return x


with jax.checking_leaks():
    f(3.)  # raises exception!
