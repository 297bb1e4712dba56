# Thread: https://github.com/jax-ml/jax/issues/4615
# Diagnosis (@shoyer, JAX collaborator): "I recommend using `jax.experimental.host_callback`" (the printed `ret` is a JVP/batch tracer inside the differentiated function, not its value)
# Problem: a debugging `print` in a function whose gradient is taken shows a nest of `Traced<...>` wrappers instead of the number.
# (Adapted minimally: the thread shows only the two lines of the user's function; a loss around them and the `grad` call are added.)
import jax
import jax.numpy as jnp


def total_energy(params):
    ret = jnp.sum(jnp.cos(params) * params ** 2)
    print("JUtotal: ", ret)  # expect: JF401
    return ret


params = jnp.linspace(0.1, 1.0, 6)
print(jax.grad(total_energy)(params))
