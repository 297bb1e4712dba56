# Thread: https://github.com/jax-ml/jax/issues/9288 (fixed by https://github.com/jax-ml/jax/pull/9312)
# Diagnosis (@jakevdp, JAX maintainer, approving PR #9312, whose tutorial text reads "this is OK, since JAX can find the cached, compiled function"): "Looks great! I love the examples you got together."
# Trap: the user's observation, confirmed in the tutorial the maintainer approved: jitting the same module-level function inside the loop hits the compilation cache ("i am being jitted" prints once); the maintainers call this OK.
import jax


def unjitted_loop_body(prev_i):
  print("i am being jitted")
  return prev_i + 1


def g_inner_jitted_poorly(x, n):
  i = 0
  while i < n:
    # Don't do this!
    i = jax.jit(unjitted_loop_body)(i)
  return x + i


g_inner_jitted_poorly(10, 3)
