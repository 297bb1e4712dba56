# Thread: https://github.com/jax-ml/jax/issues/9288 (fixed by https://github.com/jax-ml/jax/pull/9312)
# Diagnosis (@jakevdp, JAX maintainer, approving PR #9312, whose text reads "it is not able to cache things like partial(f), lambda x: f(x) when calling `jax.jit` inside the loop"): "Looks great! I love the examples you got together."
# Problem: `jax.jit` of a lambda (or a functools.partial) inside a while loop is a new function object each iteration, so it traces and compiles on every iteration.
# (The user's lambda loop from the issue, plus the partial loop that the approved PR added to the JIT tutorial.)
from functools import partial

import jax


def unjitted_loop_body(prev_i):
  print("i am being jitted")
  return prev_i + 1


def g_inner_jitted_poorly(x, n):
  i = 0
  while i < n:
    # Don't do this!
    i = jax.jit(lambda x: unjitted_loop_body(x))(i)  # expect: JF301
  return x + i


def g_inner_jitted_partial(x, n):
  i = 0
  while i < n:
    # Don't do this! each time the partial returns
    # a function with different hash
    i = jax.jit(partial(unjitted_loop_body))(i)  # expect: JF301
  return x + i


g_inner_jitted_poorly(10, 3)
g_inner_jitted_partial(10, 20).block_until_ready()
