# Thread: https://github.com/jax-ml/jax/issues/7426
# Diagnosis (@froystig, JAX maintainer): "Some kind of error is expected since `bool_fn` branches on an abstract value (`flag`) rather than a concrete one (derived from a static argument)." His reduced repro marks `g(1.)` "case 1: expected error".
# Problem: a flag passed to `jax.jit(f)` without `static_argnums` is traced, and `f` branches on it with a conditional expression.
import jax


def f(x, s): return x if s else x + 1.  # expect: JF402
def g(x): return jax.jit(f)(x, False)


print(g(1.))             # case 1: expected error
