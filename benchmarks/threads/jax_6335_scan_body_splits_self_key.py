# Thread: https://github.com/jax-ml/jax/issues/6335
# Diagnosis (@jakevdp, JAX maintainer): "JAX transforms only work on pure functions, i.e. functions without side effects ... Modifying `self` within the function is a side-effect, and so it is not compatible with functions used in JAX transforms"
# Problem: the lax.scan body splits self.key and stores it back on self: the body is traced once, so every step uses the same key and self.key ends up a tracer.
# (Adapted minimally: the thread's snippet is two methods; `sample`/`sample_distribution` are defined here, and `_sample_step` is passed as `self._sample_step`.)
import jax.random as jrandom
from jax.lax import scan


def sample_distribution(key, prev_val):
    return prev_val + jrandom.normal(key, prev_val.shape)


def sample(key, init_x):
    return init_x + jrandom.normal(key, init_x.shape)


class Generator:
    def __init__(self, seed):
        self.key = jrandom.PRNGKey(seed)

    def _sample_step(self, prev_val, xs):
        self.key, sub_key = jrandom.split(self.key)  # expect: JF403
        new_val = sample_distribution(sub_key, prev_val)
        return new_val, prev_val

    def gen_data(self, init_x):
        init_val = sample(self.key, init_x)
        vals = scan(self._sample_step, init_val, None, length=100)
        return vals


gen = Generator(0)
gen.gen_data(jrandom.normal(jrandom.PRNGKey(1), (3,)))
print(gen.key)
