# Thread: https://github.com/jax-ml/jax/issues/2708
# Diagnosis (@shoyer, JAX collaborator): "If you substitute `jnp.logical_not` your example works"
# Trap: the maintainer's corrected condition uses jnp.logical_not; nothing should be reported.
from jax import numpy as jnp
from jax.lax import while_loop


def bf(x):
    return x + 1.0


def cf_ac(x):
    return jnp.logical_not(jnp.allclose(x, 10.0))


print(while_loop(cf_ac, bf, 0.0))
