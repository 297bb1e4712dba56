# Thread: https://github.com/jax-ml/jax/issues/10360
# Diagnosis (@mattjj, JAX maintainer): "Yes, it's expected behavior that `jnp.where` evaluates both branches. Actually the jitted function does too. ... To involve JAX in the version without `jit`, try this:"
# Trap: the maintainer's suggested code: an un-jitted function printing a concrete comparison, and a jitted jnp.where; nothing should be reported.
import jax
import jax.numpy as jnp


def f(x):
    print(jnp.abs(x) < 1.)
    return jnp.where(jnp.abs(x) < 1., 1. / (x - 1.), 0.)


f(jnp.array(1.))


@jax.jit
def f_jit(x):
    return jnp.where(jnp.abs(x) < 1., 1. / (x - 1.), 0.)


f_jit(1.)
