# Thread: https://github.com/jax-ml/jax/issues/14058 (fixed by https://github.com/jax-ml/jax/pull/14059)
# Diagnosis (@jakevdp, JAX maintainer): "lax.cond leads to excessive compilation in JAX 0.4.1" (a regression in JAX, fixed in #14059 "Fix excessive recompiles in lax.cond")
# Trap: the user calls `lax.cond` eagerly in a loop with two module-level branch functions; the maintainer treats the per-iteration compiles as a JAX bug, since the same branch objects hit the cache. The code is fine; nothing should be reported.
# (The thread's minimal reproduction, as posted.)
import jax
from jax import lax

jax.config.update('jax_log_compiles', True)


def f(x):
  return x + 1


def g(x):
  return x + 2


for x in range(10):
  lax.cond(x, f, g, x)
