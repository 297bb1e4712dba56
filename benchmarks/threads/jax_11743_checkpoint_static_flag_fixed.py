# Thread: https://github.com/jax-ml/jax/pull/11743
# Trap: the `jax.checkpoint` docstring example added in this PR (wording reviewed by @froystig, JAX maintainer): "If ``fun`` involves Python control flow that depends on argument values, it may be necessary to use the ``static_argnums`` parameter", with `@partial(jax.checkpoint, static_argnums=(1,))` on `foo(x, is_training)` branching on `is_training`. The branch is on a static argument. Nothing should be reported.
# (Adapted minimally: the docstring's elided branch bodies are filled in.)
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.checkpoint, static_argnums=(1,))
def foo(x, is_training):
  if is_training:
    return jnp.sin(x) * 2.
  else:
    return jnp.sin(x)


jax.grad(foo)(1., True)
