# Thread: https://github.com/google/jaxopt/pull/113
# Diagnosis (@fllinares, jaxopt developer): "executing the `run` method of `IterativeSolver`s without `jit` would cause `lax.while_loop` or `lax.scan` to be retraced in each subsequence call. This was due to `cond_fun` and `body_fun` being (re)defined inside the private method `_run`"
# Problem: `_run` defines `cond_fun`/`body_fun` afresh on every call and hands them to a loop helper that jits with them as static arguments, so every `solver.run` traces and compiles the loop again.
# (The solver reduced to gradient descent on a least-squares objective; verbose printing omitted; the loop helper as in jaxopt's loop.py.)
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp


def _while_loop_lax(cond_fun, body_fun, init_val, maxiter):
  def _cond_fun(_val):
    it, val = _val
    return jnp.logical_and(cond_fun(val), it <= maxiter - 1)

  def _body_fun(_val):
    it, val = _val
    return it + 1, body_fun(val)

  return jax.lax.while_loop(_cond_fun, _body_fun, (0, init_val))[1]


def while_loop(cond_fun, body_fun, init_val, maxiter):
  fun = jax.jit(_while_loop_lax, static_argnums=(0, 1, 3))
  return fun(cond_fun, body_fun, init_val, maxiter)


class OptStep(NamedTuple):
  params: Any
  state: Any


class State(NamedTuple):
  error: Any


class GradientDescent:
  def __init__(self, fun, stepsize=0.1, maxiter=100, tol=1e-3):
    self.fun = fun
    self.stepsize = stepsize
    self.maxiter = maxiter
    self.tol = tol

  def update(self, params, state, *args):
    grad = jax.grad(self.fun)(params, *args)
    return OptStep(params - self.stepsize * grad, State(jnp.linalg.norm(grad)))

  def run(self, init_params, *args):
    def cond_fun(pair):
      _, state = pair
      return state.error > self.tol

    def body_fun(pair):
      params, state = pair
      return self.update(params, state, *args)

    opt_step = self.update(init_params, State(jnp.inf), *args)
    return while_loop(cond_fun=cond_fun, body_fun=body_fun,  # expect: JF302
                      init_val=opt_step, maxiter=self.maxiter - 1)


def least_squares(w, X, y):
  return jnp.mean((X @ w - y) ** 2)


solver = GradientDescent(least_squares)
X = jax.random.normal(jax.random.PRNGKey(0), (50, 5))
for i in range(20):
  y = X @ jnp.full(5, float(i))
  params, state = solver.run(jnp.zeros(5), X, y)
