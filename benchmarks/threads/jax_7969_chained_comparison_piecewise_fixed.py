# Thread: https://github.com/jax-ml/jax/issues/7969
# Diagnosis (@jakevdp, JAX maintainer): "Instead you should write `(0<x)&(x<1)`"
# Trap: the maintainer's corrected code: the conditions are elementwise array operations, no Python bool of a tracer; nothing should be reported.
import jax


def f(x):
    return jax.numpy.piecewise(x, [x<0,(0<x)&(x<1)], [-x, x])


f_jit=jax.jit(f)

f(0.5) # 0.5
f_jit(0.5) # DeviceArray(0.5, dtype=float32)
