# Thread: https://github.com/jax-ml/jax/issues/2708
# Diagnosis (@shoyer, JAX collaborator): "The problem here is not `jnp.allclose()`, it's your use of the builtin Python operator `not`, which always casts its inputs into Python booleans using `bool`, as appears in the error message."
# Problem: a lax.while_loop condition returns `not jnp.allclose(...)` of the traced carry: "Abstract value passed to `bool`".
from jax import numpy as jnp
from jax.lax import while_loop


def bf(x):
    return x + 1.0


def cf_ac(x):
    return not jnp.allclose(x, 10.0)  # expect: JF402


def cf_explicit(x):
    return jnp.abs(x - 10.0) > 1e-4


print(while_loop(cf_explicit, bf, 0.0))
print(while_loop(cf_ac, bf, 0.0))
