# Thread: https://github.com/jax-ml/jax/issues/3740
# Diagnosis (@jakevdp, JAX maintainer): "In general, you cannot jit-compile code with control flow that depends on the value in an array."
# Problem: inside the jitted rounding function, `if x < delta` tests a singular value computed from the traced input; marking `delta` static does not help.
# (The thread shows only the skeleton of tt_round_model; the SVD producing `s` is written out here as the user describes it.)
import math

import jax.numpy as jnp
from jax import jit


def tt_round_model(tt, delta):
    u, s, vh = jnp.linalg.svd(tt, full_matrices=False)
    rank = 0
    for x in s:
        if x < delta:  # expect: JF402
            break
        rank += 1
    return u, s, vh, rank


eps = 1e-3
tts_s = jnp.eye(4)
fast_tt_round = jit(tt_round_model, static_argnums=(1))
ttr = fast_tt_round(tts_s, eps / math.sqrt(len(tts_s) - 1))
