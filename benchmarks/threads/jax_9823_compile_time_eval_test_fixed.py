# Thread: https://github.com/jax-ml/jax/issues/9823
# Diagnosis (@mattjj, JAX maintainer): "Also putting the `z > 0` inside the context manager works, i.e. having a line like `positive = z > 0` and then testing `if positive`."
# Trap: the maintainer's working form of the ensure_compile_time_eval example: the comparison is computed at compile time, so `if positive` tests a concrete value; nothing should be reported.
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    with jax.ensure_compile_time_eval():
        y = jnp.sin(3.0)
        z = jnp.sin(y)
        positive = z > 0
    if positive:  # the value of z is availble and can be used in control flow
        return jnp.sin(x)
    else:
        return jnp.cos(x)


f(0)
