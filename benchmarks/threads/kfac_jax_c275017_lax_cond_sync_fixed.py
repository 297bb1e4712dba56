# Thread: https://github.com/google-deepmind/kfac-jax/commit/c275017f3457d0ce4e91cd3ac22a9d9a48c98661 (maintainer fix commit; no issue thread)
# Diagnosis (Alex Botev, kfac-jax maintainer): "Fixing a concretization jax error introduced in previous commit." (the `if sync:` replaced by `jax.lax.cond(sync, ...)`)
# Trap: the maintainer's fix branches on the traced `sync` flag with `jax.lax.cond` (the sync bound by `functools.partial`), so nothing needs a Python bool. Nothing should be reported.
# (The optimizer reduced to the curvature-update path; `utils.staged` replaced by jit with a static `self`; the estimator reduced to an EMA of a Gram matrix.)
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class State(NamedTuple):
  estimator_state: jax.Array
  step_counter: jax.Array


class Estimator:

  def update_curvature_matrix_estimate(self, state, ema_old, ema_new, batch):
    return ema_old * state + ema_new * batch.T @ batch / batch.shape[0]

  def sync(self, state, pmap_axis_name):
    return state  # a pmean over `pmap_axis_name` in the library


class Optimizer:

  def __init__(self, inverse_update_period=5, curvature_ema=0.95):
    self.estimator = Estimator()
    self._inverse_update_period = inverse_update_period
    self._curvature_ema = curvature_ema
    self.pmap_axis_name = "kfac_axis"

  def should_update_inverse_cache(self, state):
    if self._inverse_update_period == 1:
      return True
    return state.step_counter % self._inverse_update_period == 0

  def _maybe_update_estimator_state(self, state, should_update, update_func,
                                    **update_func_kwargs):
    estimator_state = lax.cond(
        should_update,
        functools.partial(update_func, **update_func_kwargs),
        lambda state_: state_,
        state.estimator_state,
    )
    return state._replace(estimator_state=estimator_state)

  def _update_estimator_curvature(self, estimator_state, batch, ema_old, ema_new,
                                  sync=True):
    state = self.estimator.update_curvature_matrix_estimate(
        estimator_state, ema_old, ema_new, batch)
    return jax.lax.cond(
        sync,
        functools.partial(self.estimator.sync,
                          pmap_axis_name=self.pmap_axis_name),
        lambda state_: state_,
        state,
    )

  @functools.partial(jax.jit, static_argnums=0)
  def _step(self, state, batch):
    state = self._maybe_update_estimator_state(
        state,
        True,
        self._update_estimator_curvature,
        batch=batch,
        ema_old=self._curvature_ema,
        ema_new=1.0,
        sync=self.should_update_inverse_cache(state),
    )
    return state._replace(step_counter=state.step_counter + 1)


opt = Optimizer()
state = State(jnp.zeros((3, 3)), jnp.array(0))
for _ in range(10):
  state = opt._step(state, jnp.ones((8, 3)))
