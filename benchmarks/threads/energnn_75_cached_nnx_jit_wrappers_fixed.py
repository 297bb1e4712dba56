# Thread: https://github.com/energnn/energnn/pull/75
# Trap: the PR's fix: the `nnx.jit` wrappers are built once in `Trainer.__init__` from static methods and a module-level function, and each step calls the cached wrapper ("the cached wrapper is traced exactly once across multiple training steps"). Nothing should be reported.
# Written for this corpus after src/energnn/trainer/trainer.py at that PR (same structure, reduced).
import jax
import jax.numpy as jnp
from flax import nnx


def _update_params_fn(optimizer, model, gradient):
    optimizer.update(model, gradient)


class Trainer:

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self._jit_apply = nnx.jit(self._apply_forward_vjp)
        self._jit_eval_forward = nnx.jit(self._eval_forward)
        self._jit_update_params = nnx.jit(_update_params_fn)

    @staticmethod
    def _apply_forward_vjp(graphdef, params, rest, context):
        def f_forward(p, r):
            model = nnx.merge(graphdef, p, r)
            decision = model(context)
            _, _, r_updated = nnx.split(model, nnx.Param, ...)
            return decision, r_updated

        (decision, rest_updated), vjp_fn = jax.vjp(f_forward, params, rest)
        return decision, rest_updated, vjp_fn

    @staticmethod
    def _eval_forward(model, context):
        decision = model(context)
        _, _, r_updated = nnx.split(model, nnx.Param, ...)
        return decision, r_updated

    def training_step(self, context, target):
        graphdef, params, rest = nnx.split(self.model, nnx.Param, ...)
        decision, rest_updated, vjp_fn = self._jit_apply(graphdef, params, rest, context)
        nnx.update(self.model, rest_updated)
        rest_cotangent = jax.tree.map(jnp.zeros_like, rest_updated)
        (grads_params, _) = vjp_fn((decision - target, rest_cotangent))
        self._jit_update_params(self.optimizer, self.model, grads_params)
        return {"4_update": {}}

    def eval_step(self, context):
        decision, rest_updated = self._jit_eval_forward(model=self.model, context=context)
        return decision

    def train(self, batches, n_epochs):
        for _ in range(n_epochs):
            for context, target in batches:
                self.training_step(context, target)
