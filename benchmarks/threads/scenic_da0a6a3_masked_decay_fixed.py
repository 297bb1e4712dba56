# Thread: https://github.com/google-research/scenic/commit/da0a6a3 (maintainer fix commit; no issue thread)
# Trap: the maintainers' fix: the clamp `min(decay_steps, step)` becomes an arithmetic mask `decay = step <= decay_steps` multiplied into the decay term, so no truth value of the traced step is needed. Nothing should be reported.
# Written for this corpus after scenic/train_lib_deprecated/lr_schedules.py at that commit (same structure, reduced).
import functools

import jax


def polynomial_lr_scheduler(step, decay_steps, end_factor, power):
  decay = step <= decay_steps
  decayed_learning_rate = (1 - end_factor) * (
      decay * (1 - step / decay_steps))**(power) + end_factor
  return decayed_learning_rate


def learning_rate_fn(step, base_learning_rate=0.1):
  return base_learning_rate * polynomial_lr_scheduler(
      step, decay_steps=1000, end_factor=0.01, power=2.0)


@functools.partial(jax.jit, donate_argnums=(0,))
def train_step(params, grads, step):
  lr = learning_rate_fn(step)
  return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
