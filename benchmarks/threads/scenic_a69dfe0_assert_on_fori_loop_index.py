# Thread: https://github.com/google-research/scenic/commit/a69dfe0 (maintainer fix commit; no issue thread)
# Diagnosis (@MostafaDehghani, scenic maintainer, commit message): "Remove the check in the grad accum since it leads to `jax._src.errors.ConcretizationTypeError: Abstract tracer value encountered where concrete value is expected`"
# Problem: the gradient-accumulation helper asserts on the microbatch index, but the index is the traced counter of `lax.fori_loop`; the `assert` needs a concrete bool and fails when the loop body is traced.
# Written for this corpus after scenic/train_lib/train_utils.py (accumulate_gradients) before that commit (same structure, reduced).
import jax
import jax.numpy as jnp


def accumulate_gradients(compute_gradient_fn, params, batch, dropout_rng,
                         accum_steps):
  batch_size = next(iter(batch.values())).shape[0]
  microbatch_size = batch_size // accum_steps

  def get_microbatch(batch, idx):
    assert microbatch_size * idx < batch_size  # expect: JF402
    return jax.tree_util.tree_map(
        lambda x: x.reshape((-1, microbatch_size) + x.shape[1:])[idx], batch)

  def per_microbatch_compute_gradient_fn(loop_cnt, loop_state):
    dropout_rng, grad_accum, train_loss_acc = loop_state
    dropout_rng, sub_dropout_rng = jax.random.split(dropout_rng)
    mbatch = get_microbatch(batch, loop_cnt)
    train_loss, grad = compute_gradient_fn(params, mbatch, sub_dropout_rng)
    grad = jax.tree_util.tree_map(jnp.add, grad_accum, grad)
    return dropout_rng, grad, train_loss_acc + train_loss

  dropout_rng, sub_dropout_rng = jax.random.split(dropout_rng)
  init_mbatch = get_microbatch(batch, 0)
  init_train_loss, grad_init = compute_gradient_fn(params, init_mbatch,
                                                   sub_dropout_rng)
  loop_init = (dropout_rng, grad_init, init_train_loss)
  _, grad_acc, train_loss = jax.lax.fori_loop(
      1, accum_steps, per_microbatch_compute_gradient_fn, loop_init)
  grad_acc = jax.tree_util.tree_map(lambda x: x / accum_steps, grad_acc)
  return grad_acc, train_loss / accum_steps
