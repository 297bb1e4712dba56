# Thread: https://github.com/AI-Hypercomputer/maxdiffusion/commit/42c54ef3e133cc385f3ce259540de5bf841fa20d (developer fix commit "vocoder jit issue"; no issue thread)
# Diagnosis (Prisha Jain, maxdiffusion developer, in the fix): "Cache the JITted function on the pipeline so it doesn't recompile on the 2nd run"
# Problem: the pipeline's generate call jits a new `lambda m, x: m(x)` for the vocoder every time it runs, so every generation compiles the vocoder again.
# (The pipeline reduced to the vocoder stage; the vocoder a small nnx module; generation run twice as in the fix's note.)
import time

import jax
import jax.numpy as jnp
from flax import nnx


class Vocoder(nnx.Module):
  def __init__(self, n_mels, hop, rngs):
    self.proj = nnx.Linear(n_mels, hop, rngs=rngs)

  def __call__(self, mel):
    return jnp.tanh(self.proj(mel)).reshape(mel.shape[0], -1)


class LTX2Pipeline:
  def __init__(self):
    self.vocoder = Vocoder(80, 256, rngs=nnx.Rngs(0))

  def __call__(self, latents):
    generated_mel_spectrograms = jnp.einsum("btc,cm->btm", latents, jnp.ones((latents.shape[-1], 80)))
    vocoder_start_time = time.time()
    # Explicitly JIT compile the vocoder at the call site to guarantee it doesn't run eagerly
    jitted_vocoder = nnx.jit(lambda m, x: m(x))  # expect: JF302
    audio = jitted_vocoder(self.vocoder, generated_mel_spectrograms)
    jax.block_until_ready(audio)
    print(f"Vocoder Execution Time: {time.time() - vocoder_start_time:.4f} seconds")
    return audio


pipeline = LTX2Pipeline()
for prompt_seed in range(2):
  latents = jax.random.normal(jax.random.PRNGKey(prompt_seed), (1, 50, 16))
  audio = pipeline(latents)
