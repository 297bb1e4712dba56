# Thread: https://github.com/jax-ml/jax/issues/3133 (fixed by https://github.com/jax-ml/jax/pull/3160)
# Diagnosis (@jakevdp, JAX maintainer, answering the reporter's "The cause of the error is attempting to trace the `__getitem__` method of a raw numpy tensor"): "I think the only way to specialize this error would be to do some sort of call stack tracing in ``__array__``."
# Problem: indexing a raw NumPy array with the traced argument of a jitted lambda calls `__array__` on the tracer (TracerArrayConversionError), while the jnp version is fine.
import jax
import jax.numpy as jnp
import numpy as np

f = lambda i: jnp.zeros((3, 3))[i, :]
g = lambda i: np.zeros((3, 3))[i, :]  # expect: JF406

a = np.array([1, 2])

f(a)           # Okay
jax.jit(f)(a)  # Okay

g(a)           # Okay
jax.jit(g)(a)  # Fail
