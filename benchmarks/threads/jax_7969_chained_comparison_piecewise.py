# Thread: https://github.com/jax-ml/jax/issues/7969
# Diagnosis (@jakevdp, JAX maintainer): "the issue is that comparison operator chaining (i.e. `0<x<1`) is not supported for JAX arrays, similar to the case for Numpy. Instead you should write `(0<x)&(x<1)`"
# Problem: the chained comparison `0<x<1` is Python's `(0<x) and (x<1)`, a bool() of a traced value: the jitted function fails.
import jax


def f(x):
    return jax.numpy.piecewise(x, [x<0,0<x<1], [-x, x])  # expect: JF402


f_jit=jax.jit(f)

f(0.5) # 0.5
f_jit(0.5) # Error
