# Thread: https://github.com/jax-ml/jax/pull/4312
# Diagnosis (@mattjj, JAX maintainer): "That last call has repeated randomness but no error, because we aren't re-executing the Python function and thus aren't actually touching the global Python key."
# Problem: a jitted init() splits a global PRNG key: the split happens only while tracing, so every later call repeats the same random draw (and the global key ends up holding a tracer).
from jax import jit
from jax import random

key = random.PRNGKey(0)


def init():
    global key
    key, subkey = random.split(key)  # expect: JF403
    return random.normal(subkey, ())


print(init())  # -1.2515389
print(init())  # -0.58665067

init = jit(init)
print(init())  # 0.48648298
print(init())  # 0.48648298  !!

print(key)
