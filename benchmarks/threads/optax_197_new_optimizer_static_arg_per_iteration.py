# Thread: https://github.com/google-deepmind/optax/issues/197
# Diagnosis (@rosshemsley, optax maintainer): "I think the optax recompilation happens because JAX is seeing that you are giving it" a different optimizer object each time (the new `adam(...)` is the static argument).
# Problem: every loop iteration builds a new optax optimizer and passes it as the static argument of `jit(inference, static_argnums=0)`: each iteration compiles again (the reporter counted 100 compiles for 100 iterations). The global counter in `inference` is deliberate: it counts traces.
# Written for this corpus after the reporter's benchmark in the thread (same idiom).
import jax.numpy as jnp
from jax import grad, jit
from jax.lax import scan
from optax import adam


def loss(p):
    return jnp.square(p - 1.0)


def inference(gt):
    global compiled_times
    compiled_times += 1

    def one_step(carry, _):
        p, opt_state = carry
        updates, opt_state = gt.update(grad(loss)(p), opt_state, p)
        return (p + updates, opt_state), p

    _, trajectory = scan(one_step, (0.0, gt.init(0.0)), None, 100)
    return trajectory


compiled_times = 0
for _ in range(100):
    optimizer = adam(0.05)
    jit(inference, static_argnums=0)(optimizer)  # expect?: JF301
print(f"compiled {compiled_times} times")
