# Thread: https://github.com/google/flax/commit/28b5b425ee7f62fc3ca9088be045b6285e98d763 (Flax team fix commit "Dramatically speed up sampling compilation time"; no issue thread)
# Diagnosis (Flax team, flax maintainers, commit message): "We separate out the parameters from the model graph so that the parameters are passed as a parameter to the jitted function, rather than being kept static." (compile time "from roughly 120s to 6s")
# Problem: the Gemma example's Sampler jits its own bound method; the traced step reads the model (all its parameters) through `self`, so every weight is embedded in the program as a constant and compilation is very slow.
# Written for this corpus after examples/gemma/sampler.py before that commit (same structure, reduced).
import flax
import jax
import jax.numpy as jnp


@flax.struct.dataclass
class SamplingState:
  decoding_step: jnp.ndarray
  token_buffer: jnp.ndarray
  cache: dict
  done: jnp.ndarray
  total_sampling_steps: int
  temperature: float = flax.struct.field(pytree_node=False)


class Sampler:

  def __init__(self, transformer, cache_size=1024):
    self.transformer = transformer  # an nnx Module holding every parameter
    self.cache_size = cache_size
    self._compiled_sample_fn = jax.jit(self._sample_fn)

  def _sample_step(self, state: SamplingState) -> SamplingState:
    step = state.decoding_step
    last_token = state.token_buffer[:, step][:, None]
    logits, cache = self.transformer(last_token, state.cache)  # expect: JF207
    if state.temperature > 0:  # a static field
      logits = logits / state.temperature
    next_token = jnp.argmax(logits[:, -1], axis=-1)
    token_buffer = state.token_buffer.at[:, step + 1].set(next_token)
    return state.replace(decoding_step=step + 1, token_buffer=token_buffer,
                         cache=cache, done=state.done | (next_token == 1))

  def _sample_fn(self, initial_state: SamplingState) -> SamplingState:
    def cond_fn(state):
      return (state.decoding_step < state.total_sampling_steps) & jnp.any(~state.done)

    return jax.lax.while_loop(cond_fn, self._sample_step, initial_state)

  def __call__(self, initial_state: SamplingState) -> SamplingState:
    return self._compiled_sample_fn(initial_state)
