# Thread: https://github.com/jax-ml/jax/issues/10596
# Diagnosis (@hawkinsp, JAX maintainer): "If you do not want that behavior, the fix is what you discovered: pass the value as a parameter instead! That is exactly the distinction between parameters and captured values."
# Trap: the user's version that the maintainer endorses: the array is an argument of the jitted function, nothing is captured; nothing should be reported.
import time
import jax
import numpy as np
import jax.numpy as jnp

pulse = jax.device_put(np.random.rand(10000))


def f(pulse):
    return jnp.fft.fft(pulse)


t0 = time.time()
a = jax.jit(f, backend='gpu')(pulse)
t1 = time.time()
print('time cost on gpu:',t1-t0)


t0 = time.time()
a = jax.jit(f, backend='cpu')(pulse)
t1 = time.time()
print('time cost on cpu:',t1-t0)
