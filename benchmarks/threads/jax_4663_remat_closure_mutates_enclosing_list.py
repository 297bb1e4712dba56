# Thread: https://github.com/jax-ml/jax/pull/4663
# Diagnosis (@mattjj, JAX maintainer, PR description, after a repro by @tomhennigan based on one by @mfigurnov): the change makes this "escaped tracer" raise a clear UnexpectedTracerError instead of a bare "KeyError: a" (the repro's `seq[0] += 1`, "this is line 7 btw", is the write that escapes).
# Problem: a rematerialized inner function mutates a list owned by the enclosing jitted function; the value written during the first remat trace leaks into the second, and tracing fails.
import jax
import jax.numpy as jnp


def f():
  seq = [jnp.zeros([])]

  def g():
    seq[0] += 1  # expect: JF403
    return seq[0]

  jax.remat(g)()
  jax.remat(g)()


jax.jit(f)()
