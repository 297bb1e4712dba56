# Thread: https://github.com/jax-ml/jax/pull/24511
# Diagnosis (@mattjj, JAX maintainer, PR description): the repro fails at `if x > 0:` with "Attempted boolean conversion of traced array with shape bool[] ... This concrete value was not available in Python because it depends on the value of the argument x" ("Consider using the `static_argnums` parameter for `jax.remat`")
# Problem: a `jax.remat`-decorated function branches with a Python `if` on its (traced) argument.
import jax
import jax.numpy as jnp


@jax.remat
def f(x):
  if x > 0:  # expect: JF402
    return x
  else:
    return jnp.sin(x)


f(3.)
