# Thread: https://github.com/jax-ml/jax/pull/24516
# Diagnosis (@mattjj, JAX maintainer, PR description): the repro raises "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[]" at `if x > 0:`; `x` is not among the `static_argnums` of `jax.remat`, so it is traced.
# Problem: a function checkpointed with `jax.remat(..., static_argnums=(1,))` branches with a Python `if` on its first, non-static argument.
import jax
import jax.numpy as jnp
from functools import partial


@partial(jax.remat, static_argnums=(1,))
def f(x, _):
  if x > 0:  # expect: JF402
    return x
  else:
    return jnp.sin(x)


f(3., 1.)
