# Thread: https://github.com/google-deepmind/optax/pull/721 (commit 47404ab6 "make if condition jittable", made during review; merged by the optax maintainers)
# Diagnosis (@fabian-sp, author of optax.contrib.momo, commit message): "make if condition jittable" (the Python `if count == jnp.zeros(...)` becomes `bt = cond(count == 0, lambda: 0., lambda: beta)`; the test's `@jax.jit` on the step is switched back on)
# Problem: MoMo's `update_fn` branches with a Python `if` on the optimizer state's step counter; inside a jitted training step the counter is traced and the comparison has no concrete truth value.
# Written for this corpus after optax/contrib/momo.py before that commit (same structure, reduced).
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.tree_util as tu
import optax


class MomoState(NamedTuple):
  exp_avg: optax.Updates
  barf: float
  gamma: float
  count: jax.Array


def tree_vdot(a, b):
  return sum(jnp.vdot(x, y) for x, y in zip(tu.tree_leaves(a), tu.tree_leaves(b)))


def momo(learning_rate=1.0, beta=0.9, lb=0.0, delta=1e-10):

  def init_fn(params):
    exp_avg = tu.tree_map(lambda p: jnp.zeros(p.shape), params)
    return MomoState(exp_avg, 0, 0, jnp.zeros([], jnp.int32))

  def update_fn(updates, state, params, loss=None):
    count = state.count
    if count == jnp.zeros([], jnp.int32):  # expect: JF402
      barf = loss
      exp_avg = tu.tree_map(lambda g: g, updates)
      gamma = tree_vdot(updates, params)
    else:
      barf = beta * state.barf + (1 - beta) * loss
      exp_avg = tu.tree_map(lambda ea, g: beta * ea + (1 - beta) * g,
                            state.exp_avg, updates)
      gamma = beta * state.gamma + (1 - beta) * tree_vdot(updates, params)
    exp_avg_norm = tree_vdot(exp_avg, exp_avg)
    iprod = tree_vdot(exp_avg, params)
    t1 = jnp.maximum(barf - lb - gamma + iprod, 0) / (exp_avg_norm + delta)
    tau = jnp.minimum(learning_rate, t1)
    p_update = tu.tree_map(lambda ea: -tau * ea, exp_avg)
    return p_update, MomoState(exp_avg, barf, gamma, count + 1)

  return optax.GradientTransformationExtraArgs(init_fn, update_fn)


opt = momo()


@jax.jit
def step(params, state):
  loss, updates = jax.value_and_grad(lambda p: jnp.sum(p ** 2))(params)
  updates, state = opt.update(updates, state, params, loss)
  return optax.apply_updates(params, updates), state


params = jnp.ones(3)
step(params, opt.init(params))
