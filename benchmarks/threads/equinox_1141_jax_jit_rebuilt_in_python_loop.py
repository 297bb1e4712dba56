# Thread: https://github.com/patrick-kidger/equinox/issues/1141
# Diagnosis (@johannahaffner, equinox collaborator): "No, it will recompile if you put the `jit` inside the for-loop."
# Problem: the user asks whether wrapping the step function with `jax.jit` inside the Python training loop is as good as a jitted loop; the wrapper is rebuilt on every iteration.
# (Adapted minimally: the thread's code is a sketch, `def fun_name(): ...` and `for _ in range(..): ... = jax.jit(fun_name)`; the body and the loop bound are filled in.)
import jax
import jax.numpy as jnp


def fun_name(a, b):
    return jnp.matmul(a, b)


a = jnp.ones((4, 4))
b = jnp.ones((4, 4))
for _ in range(10):
    out = jax.jit(fun_name)(a, b)  # expect: JF301
