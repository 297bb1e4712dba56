# Thread: https://github.com/jax-ml/jax/issues/3220
# Diagnosis (@hawkinsp, JAX maintainer, in the issue he filed): "For the following program, JAX produces a large inline constant in the XLA program. XLA/GPU in particular does not handle very large constants embedded in programs well." -- and @mattjj: "just noticed you wrote `np.arange` not `jnp.arange`, so actually omnistaging won't help in this case either."
# Problem: a NumPy array built inside the traced lambda enters the XLA program as a 10000-element constant.
# (Adapted minimally: `jax.xla_computation(...)(7).as_hlo_text()` is today's `jax.jit(...).lower(7).as_text()`.)
import jax, jax.numpy as jnp, numpy as np

print(jax.jit(lambda x: x + np.arange(10000)).lower(7).as_text())  # expect: JF201
