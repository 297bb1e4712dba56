# Thread: https://github.com/pyro-ppl/numpyro/pull/2171
# Diagnosis (@simeoncampos, PR author; merged by the numpyro maintainers): "`fori_collect(..., progbar=False)` recreates `loop_fn` as a fresh closure on each call. JAX JIT caching depends on function identity, so recreating the closure defeats cache reuse and triggers full XLA recompilation on every `MCMC.run()`."
# Problem: with the progress bar off, `fori_collect` defines `loop_fn` inside the function and jits it (through numpyro's `maybe_jit`) on every call, so every MCMC run compiles the sampling loop again.
# Written for this corpus after numpyro/util.py before that PR (same structure, reduced; the collection update is simplified).
from functools import partial

import jax
import jax.numpy as jnp
from jax import jit
from jax.lax import fori_loop

_DISABLE_CONTROL_FLOW_PRIM = False


def maybe_jit(fn, *args, **kwargs):
    if _DISABLE_CONTROL_FLOW_PRIM:
        return fn
    else:
        return jit(fn, *args, **kwargs)


def fori_collect(lower, upper, body_fun, init_val, progbar=True, thinning=1):
    collection_size = (upper - lower) // thinning
    start_idx = lower + (upper - lower) % thinning

    @partial(maybe_jit, donate_argnums=2)
    def _body_fn(i, val, collection, start_idx, thinning):
        val = body_fun(val)
        idx = (i - start_idx) // thinning
        collection = jnp.where(idx >= 0, collection.at[idx].set(val), collection)
        return val, collection, start_idx, thinning

    collection = jnp.zeros((collection_size,) + jnp.shape(init_val))

    if not progbar:

        def loop_fn(collection):
            return fori_loop(
                0,
                upper,
                lambda i, vals: _body_fn(i, *vals),
                (init_val, collection, start_idx, thinning),
            )

        last_val, collection, _, _ = maybe_jit(loop_fn, donate_argnums=0)(collection)  # expect: JF302
    return collection


for _ in range(3):  # each MCMC.run() calls fori_collect again
    fori_collect(0, 100, lambda x: x * 0.5 + 1.0, jnp.zeros(()), progbar=False)
