# Thread: https://github.com/energnn/energnn/pull/75
# Diagnosis (@imenjendoubi, energnn developer, PR description, merged): "Previously they were rebuilt inside each step, which forced JAX/NNX to retrace and recompile repeatedly." (the fix builds the `nnx.jit` wrappers once in `Trainer.__init__`; "the cached wrapper is traced exactly once across multiple training steps")
# Problem: the trainer defines the forward/VJP function, the optimizer update and the evaluation forward as inner functions and wraps each with `nnx.jit` inside every training or evaluation step.
# Written for this corpus after src/energnn/trainer/trainer.py before that PR (same structure, reduced).
import jax
import jax.numpy as jnp
from flax import nnx


def _update_params(optimizer, model, gradient):

    def update_params(optimizer, model, gradient):
        optimizer.update(model, gradient)

    nnx.jit(update_params)(optimizer, model, gradient)  # expect: JF302
    return {}


class Trainer:

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def training_step(self, context, target):
        infos = {}

        def apply(params, rest, context):
            def f_forward(p, r):
                model = nnx.merge(graphdef, p, r)
                decision = model(context)
                _, _, r_updated = nnx.split(model, nnx.Param, ...)
                return decision, r_updated

            (decision, rest_updated), vjp_fn = jax.vjp(f_forward, params, rest)
            return decision, rest_updated, vjp_fn

        graphdef, params, rest = nnx.split(self.model, nnx.Param, ...)
        decision, rest_updated, vjp_fn = nnx.jit(apply)(params, rest, context)  # expect: JF302
        nnx.update(self.model, rest_updated)
        cotangent = decision - target
        rest_cotangent = jax.tree.map(jnp.zeros_like, rest_updated)
        (grads_params, _) = vjp_fn((cotangent, rest_cotangent))
        infos["4_update"] = _update_params(self.optimizer, self.model, grads_params)
        return infos

    def eval_step(self, context):

        def f(model, context):
            decision = model(context)
            _, _, r_updated = nnx.split(model, nnx.Param, ...)
            return decision, r_updated

        decision, rest_updated = nnx.jit(f)(model=self.model, context=context)  # expect: JF302
        return decision

    def train(self, batches, n_epochs):
        for _ in range(n_epochs):
            for context, target in batches:
                self.training_step(context, target)
