# Thread: https://github.com/Physical-Intelligence/openpi/pull/550
# Diagnosis (@arhanjain, PR author: "adding a sampling kwarg that is non-zero results in a JIT error" at `if temperature > 0.0:`, "TracerBoolConversionError ... while tracing the function step ... for while_body"; the fix, a `jax.lax.cond(temperature > 0.0, ...)`, was merged by @kvablack, openpi maintainer)
# Problem: the FAST decoder's `while_loop` body branches with a Python `if` on the sampling temperature, which the jitted `sample_actions` receives as a traced keyword argument.
# Written for this corpus after src/openpi/models/pi0_fast.py before that PR (same structure, reduced: the language model is a single linear map).
import jax
import jax.numpy as jnp


class Pi0FAST:

    def __init__(self, w):
        self.w = w

    def sample_actions(self, rng, prefix_logits, *, max_decoding_steps=16, temperature=0.0):
        last_logit = prefix_logits[:, -1:]
        output_tokens = jnp.zeros((last_logit.shape[0], max_decoding_steps))

        def step(carry):
            last_logit, output_tokens, _, step = carry
            if temperature > 0.0:  # expect: JF402
                last_logit = last_logit / temperature
                token = jax.random.categorical(rng, last_logit, axis=-1)
            else:
                token = jnp.argmax(last_logit, axis=-1)
            output_tokens = output_tokens.at[:, step].set(token[:, 0])
            all_eos = jnp.all(token == 1)
            last_logit = jax.nn.one_hot(token, self.w.shape[0]) @ self.w
            return last_logit, output_tokens, all_eos, step + 1

        def cond(carry):
            _, _, all_eos, step = carry
            return (~all_eos) & (step < max_decoding_steps)

        _, output_tokens, _, _ = jax.lax.while_loop(cond, step, (last_logit, output_tokens, False, 0))
        return output_tokens


model = Pi0FAST(jnp.eye(8))
jax.jit(model.sample_actions)(jax.random.key(0), jnp.ones((2, 3, 8)), temperature=0.7)
