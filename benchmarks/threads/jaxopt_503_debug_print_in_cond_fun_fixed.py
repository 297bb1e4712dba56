# Thread: https://github.com/google/jaxopt/pull/503
# Trap: the merged version, in the form @mblondel (jaxopt maintainer) proposed in review: `name = self.__class__.__name__; jax.debug.print("Solver: %s, Error: {error}" % name, error=state.error)`; the traced error is printed at run time. Nothing should be reported.
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
      name = self.__class__.__name__
      jax.debug.print("Solver: %s, Error: {error}" % name, error=state.error)
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
