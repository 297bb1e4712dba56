# Thread: https://github.com/google/jaxopt/pull/503
# Diagnosis (@amir-saadat, PR author, reviewed and merged by @mblondel, jaxopt maintainer, who proposed the final `jax.debug.print("Solver: %s, Error: {error}" % name, error=state.error)`): "updated the print calls of the optimizers to `jax.debug.print(..)` so it can be jittable"
# Problem: with `verbose=True` the solver's loop condition prints `state.error` with Python's `print`; once the loop runs under `lax.while_loop` (jit enabled), the print runs once at trace time and shows a tracer instead of the error of each iteration.
# (Adapted minimally: jaxopt's `loop.while_loop(..., jit=True)` is written as the `jax.lax.while_loop` it runs; the solver is reduced to one gradient step.)
import jax
import jax.numpy as jnp
from typing import NamedTuple


class State(NamedTuple):
  iter_num: jnp.ndarray
  error: jnp.ndarray


class GradientDescent:

  def __init__(self, fun, stepsize=0.1, tol=1e-3, maxiter=100, verbose=False):
    self.fun = fun
    self.stepsize = stepsize
    self.tol = tol
    self.maxiter = maxiter
    self.verbose = verbose

  def update(self, params, state):
    grad = jax.grad(self.fun)(params)
    params = params - self.stepsize * grad
    return params, State(state.iter_num + 1, jnp.linalg.norm(grad))

  def _cond_fun(self, inputs):
    _, state = inputs
    if self.verbose:
      print(self.__class__.__name__ + " error:", state.error)  # expect: JF401
    return state.error > self.tol

  def _body_fun(self, inputs):
    params, state = inputs
    return self.update(params, state)

  def run(self, init_params):
    state = State(jnp.asarray(0), jnp.asarray(jnp.inf))
    return jax.lax.while_loop(self._cond_fun, self._body_fun,
                              (init_params, state))


solver = GradientDescent(fun=lambda p: p @ p, verbose=True)
jax.jit(solver.run)(jnp.ones(3))
