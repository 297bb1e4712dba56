# Thread: https://github.com/jax-ml/jax/pull/12653
# Diagnosis (@jakevdp, JAX maintainer): "Fixes this error: ... jax.jit(jax.grad(f), static_argnames=['b'])(1.0, False) 0.0 ... jax.jit(jax.jacrev(f), static_argnames=['b'])(1.0, False) # ConcretizationTypeError" -- jacrev now propagates the signature, so `b` is static as intended.
# Trap: `b` is a static argument (static_argnames), so `a if b else 0.0` tests a Python bool; nothing should be reported.
import jax


def f(a, b):
  return a if b else 0.0


jax.jit(jax.grad(f), static_argnames=['b'])(1.0, False)
jax.jit(jax.jacrev(f), static_argnames=['b'])(1.0, False)
