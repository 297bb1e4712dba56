# Thread: https://github.com/jax-ml/jax/issues/10596
# Diagnosis (@hawkinsp, JAX maintainer): "Fundamentally: if you capture a constant value in a `jit`, you are telling JAX \"the compiler may see this value, must bake it into the program, and may perform optimizations using its value\". If you do not want that behavior, the fix is what you discovered: pass the value as a parameter instead!"
# Problem: the jitted function reads a module-level device array; it is baked into the program as a constant and XLA constant-folds the FFT: >10 s to compile on GPU.
import time
import jax
import numpy as np
import jax.numpy as jnp

pulse = jax.device_put(np.random.rand(8000))


def f():
    sigTx = jnp.fft.fft(pulse)  # expect: JF207
    return sigTx


t0 = time.time()
a = jax.jit(f, backend='gpu')()
t1 = time.time()
print('time cost on gpu:',t1-t0)


t0 = time.time()
a = jax.jit(f, backend='cpu')()
t1 = time.time()
print('time cost on cpu:',t1-t0)
