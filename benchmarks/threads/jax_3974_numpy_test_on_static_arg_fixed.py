# Thread: https://github.com/jax-ml/jax/issues/3974
# Diagnosis (@hawkinsp, JAX maintainer): "We're encouraging the convention `import jax.numpy as jnp` / `import numpy as np` and if you want something not to be included in the trace, you can just use classic NumPy (`np`)."
# Trap: the version the user confirmed works after the maintainer's advice: the test on the static argument uses classic NumPy, so it is a Python bool at trace time; nothing should be reported.
import jax
import jax.numpy as jnp
import numpy as np


def foo(n):
    if np.array(n) > 1:
        return jnp.ones(1)
    return jnp.zeros(1)


jax.jit(foo, static_argnums=(0,))(1)
jax.jit(foo, static_argnums=(0,))(2)
