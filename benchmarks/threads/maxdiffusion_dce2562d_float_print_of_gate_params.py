# Thread: https://github.com/AI-Hypercomputer/maxdiffusion/commit/dce2562d (developer fix commit; no issue thread)
# Diagnosis (Prisha Jain, maxdiffusion developer, commit message): "fix: use jax.debug.print to prevent concretization tracing errors" (the two `print(f"... {float(jnp.mean(...))}")` lines become `jax.debug.print(...)`)
# Problem: a diagnostics `print` inside the attention module's `__call__` formats `float(jnp.mean(kernel))` of the gate parameters; under `nnx.jit` the parameters are tracers, so `float()` raises a concretization error (and a plain print would show tracers anyway).
# Written for this corpus after src/maxdiffusion/models/ltx2/attention_ltx2.py before that commit (same structure, reduced).
import jax
import jax.numpy as jnp
from flax import nnx


class LTX2Attention(nnx.Module):

  def __init__(self, dim, heads, dim_head, *, rngs):
    self.heads = heads
    self.dim_head = dim_head
    self.to_v = nnx.Linear(dim, heads * dim_head, rngs=rngs)
    self.to_gate_logits = nnx.Linear(dim, heads, rngs=rngs)
    self.to_out = nnx.Linear(heads * dim_head, dim, rngs=rngs)

  def __call__(self, hidden_states):
    attn_output = self.to_v(hidden_states)
    if getattr(self, "to_gate_logits", None) is not None:
      gate_kernel = self.to_gate_logits.kernel
      gate_bias = self.to_gate_logits.bias
      if hasattr(gate_kernel, "value"):
        gate_kernel = gate_kernel.value
      if hasattr(gate_bias, "value"):
        gate_bias = gate_bias.value

      print(f"[Gating Diagnostics] to_gate_logits kernel - mean: {float(jnp.mean(gate_kernel)):.8f}, std: {float(jnp.std(gate_kernel)):.8f}", flush=True)  # expect: JF401, JF402
      print(f"[Gating Diagnostics] to_gate_logits bias - mean: {float(jnp.mean(gate_bias)):.8f}, std: {float(jnp.std(gate_bias)):.8f}", flush=True)  # expect: JF401, JF402

      gate_logits = self.to_gate_logits(hidden_states)
      b, s, _ = attn_output.shape
      attn_output = attn_output.reshape(b, s, self.heads, self.dim_head)
      gates = 2.0 * jax.nn.sigmoid(gate_logits)
      attn_output = attn_output * jnp.expand_dims(gates, axis=-1)
      attn_output = attn_output.reshape(b, s, -1)
    return self.to_out(attn_output)


@nnx.jit
def denoise_step(model, hidden_states):
  return model(hidden_states)


model = LTX2Attention(16, 2, 8, rngs=nnx.Rngs(0))
denoise_step(model, jnp.ones((1, 4, 16)))
