# Thread: https://github.com/google/flax/commit/266052cb82ee2e687c34f5d183343c6614c71884 (maintainer fix commit; no issue thread)
# Diagnosis (@jheek, flax maintainer, commit message): "Don't recompile `pmap(pmean)` every time the batch statistics are synced"
# Problem: the ImageNet example built `jax.pmap` of a fresh lambda inside its batch-statistics sync helper, which the training loop calls every epoch and before each checkpoint: a new program is compiled on every call.
# Written for this corpus after examples/imagenet/train.py before that commit (same structure, not a copy).
import jax
from jax import lax


def sync_batch_stats(state):
  """Average the per-device batch statistics."""
  avg = jax.pmap(lambda x: lax.pmean(x, 'x'), 'x')  # expect: JF302
  new_model_state = state.model_state.copy(
      {'batch_stats': avg(state.model_state['batch_stats'])})
  return state.replace(model_state=new_model_state)


def train_and_evaluate(state, p_train_step, p_eval_step, train_iter, eval_iter,
                       num_steps, steps_per_epoch, steps_per_eval, save):
  for step in range(num_steps):
    state, _ = p_train_step(state, next(train_iter))
    if (step + 1) % steps_per_epoch == 0:
      state = sync_batch_stats(state)
      for _ in range(steps_per_eval):
        p_eval_step(state, next(eval_iter))
  state = sync_batch_stats(state)
  save(state)
  return state
