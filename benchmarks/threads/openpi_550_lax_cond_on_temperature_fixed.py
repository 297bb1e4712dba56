# Thread: https://github.com/Physical-Intelligence/openpi/pull/550
# Trap: the merged fix: the carry threads an RNG key, and the branch on the traced temperature is `jax.lax.cond(temperature > 0.0, <categorical sample>, <argmax>, operand=None)`. Nothing should be reported.
# Written for this corpus after src/openpi/models/pi0_fast.py with that PR (same structure, reduced: the language model is a single linear map).
import jax
import jax.numpy as jnp


class Pi0FAST:

    def __init__(self, w):
        self.w = w

    def sample_actions(self, rng, prefix_logits, *, max_decoding_steps=16, temperature=0.0):
        last_logit = prefix_logits[:, -1:]
        output_tokens = jnp.zeros((last_logit.shape[0], max_decoding_steps))

        def step(carry):
            rng, last_logit, output_tokens, _, step = carry
            rng, rng_step = jax.random.split(rng)
            token = jax.lax.cond(
                temperature > 0.0,
                lambda _: jax.random.categorical(rng_step, last_logit / temperature, axis=-1),
                lambda _: jnp.argmax(last_logit, axis=-1),
                operand=None,
            )
            output_tokens = output_tokens.at[:, step].set(token[:, 0])
            all_eos = jnp.all(token == 1)
            last_logit = jax.nn.one_hot(token, self.w.shape[0]) @ self.w
            return rng, last_logit, output_tokens, all_eos, step + 1

        def cond(carry):
            _, _, _, all_eos, step = carry
            return (~all_eos) & (step < max_decoding_steps)

        _, _, output_tokens, _, _ = jax.lax.while_loop(cond, step, (rng, last_logit, output_tokens, False, 0))
        return output_tokens


model = Pi0FAST(jnp.eye(8))
jax.jit(model.sample_actions)(jax.random.key(0), jnp.ones((2, 3, 8)), temperature=0.7)
