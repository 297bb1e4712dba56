# Thread: https://github.com/jax-ml/jax/pull/11770
# Diagnosis (@sharadmv, JAX maintainer, on @jakevdp's suggestion): "If you do something like this: `jax.debug.print(f"{x}", x=x)` i.e use an f-string, you'll print out a traced `x` inside of the JIT instead of the actual value."
# Problem: the f-string is formatted while tracing, so `jax.debug.print` stages a fixed string showing the tracer, not the runtime value.
# (The pattern from the PR's description, in a small jitted update.)
import jax
import jax.numpy as jnp


@jax.jit
def update(x, lr):
    g = 2.0 * x
    jax.debug.print(f"grad = {g}", g=g)  # expect?: JF401
    return x - lr * g


update(jnp.ones(3), 0.1)
