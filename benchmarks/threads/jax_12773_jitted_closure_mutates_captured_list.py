# Thread: https://github.com/jax-ml/jax/issues/12773
# Diagnosis (@mattjj, JAX maintainer): "I suspect the attributes of a closed-over instance are being mutated, and using mutating side-effects voids the `jax.jit` warranty. ... Like, is this a model of the issue?"
# Problem: a jitted closure accumulates into a list of the enclosing factory: the update happens at trace time only and stores a tracer (the maintainer's model of the user's Colab).
# (The calls after `incrementer = foo([0.])` are added to run the model.)
import jax


def foo(tot):
  @jax.jit
  def increment(x):
    tot[0] += x  # expect: JF403
    return tot[0]
  return increment


incrementer = foo([0.])
incrementer(1.)
incrementer(1.)
