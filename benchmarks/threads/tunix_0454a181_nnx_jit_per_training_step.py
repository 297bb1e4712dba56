# Thread: https://github.com/google/tunix/commit/0454a181 (maintainer fix commit; no issue thread)
# Diagnosis (Mridul Sahu, tunix developer, commit message): "Remove nnx.jit from inside loop in distillation which could be causing re-compilations on each iteration."
# Problem: the distillation trainer's per-step input preparation wraps the strategy's bound method with `nnx.jit` on every call, so every training step builds a new jitted function for the teacher forward pass.
# Written for this corpus after tunix/distillation/distillation_trainer.py before that commit (same structure, reduced).
from flax import nnx


class DistillationTrainer:

  def __init__(self, student_model, teacher_model, strategy):
    self.model = student_model
    self.teacher_model = teacher_model
    self.strategy = strategy
    self.eval_mode = False

  def _prepare_inputs(self, input_data):
    inputs = {"input_tokens": input_data["input_tokens"],
              "input_mask": input_data["input_mask"]}
    if self.eval_mode:
      teacher_output = None
    else:
      teacher_output = nnx.jit(self.strategy.get_teacher_outputs)(  # expect: JF302
          self.teacher_model, inputs
      )
    return dict(input_data, teacher_output=teacher_output)

  def train(self, train_ds, train_step):
    for example in train_ds:
      example = self._prepare_inputs(example)
      train_step(self.model, example)
