# Thread: https://github.com/jax-ml/jax/pull/13022
# Diagnosis (@mattjj, JAX maintainer, PR description): "if you know what data structure(s) a leaked tracer is in, it might help you understand what the side-effect was that caused the problem" (his example: the leaked BatchTracer "is referred to by <function> closed-over variable x", which is referred to by the list stored in `a.dct['hi']`)
# Problem: a vmapped function stores a closure over its traced argument in a dict held by a module-level object; the tracer escapes the transformation.
import jax

jax.config.update('jax_check_tracer_leaks', True)


class A:
  def __init__(self, dct):
    self.dct = dct


a = A({})


def sketch(x):
  a.dct['hi'] = [lambda: x]  # expect: JF403
  return x


jax.vmap(sketch)(jax.numpy.arange(3))
