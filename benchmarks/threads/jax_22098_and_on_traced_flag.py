# Thread: https://github.com/jax-ml/jax/pull/22098
# Diagnosis (@mattjj, JAX maintainer, the PR's example): "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[]."
# Problem: a jitted function tests `True and flag` where `flag` is a traced argument; Python's `and`/`if` needs a concrete bool and tracing fails.
import jax


@jax.jit
def f(qiaoqiao):
  if True and qiaoqiao:  # expect: JF402
    return 1
  return 0


f(True)
