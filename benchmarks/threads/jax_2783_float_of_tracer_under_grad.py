# Thread: https://github.com/jax-ml/jax/issues/2783
# Diagnosis (@mattjj, JAX maintainer): "Actually I think no, see #2602 where we just changed this. It would make float act like a silent stop_gradient. ... we can't do the analogous thing for `float` because it is sensitive to small perturbations of its input."
# Problem: `float(x)` of the differentiated argument raises "JAX Tracer object cannot be interpreted as a float" under grad.
# (Adapted minimally: the thread's `api.grad` is today's `jax.grad`.)
import jax


def func(x):
   return x if float(x) >= 0. else -x  # expect: JF402


print(jax.grad(func)(3.))
