# Thread: https://github.com/google/jaxopt/issues/303
# Trap: the pattern a jaxopt developer proposed (@Algue-Rythme): build the solver once, outside, and jit a small wrapper around `solver.run`; the solver's hyper-parameters are fixed Python values and the jit is built once. Nothing should be reported.
import jax
import jax.numpy as jnp
import jaxopt


def objective(w, data):
    X, y = data
    return jnp.mean((X @ w - y) ** 2)


solver = jaxopt.GradientDescent(objective, stepsize=0.1, maxiter=500, jit=True)


@jax.jit
def jitted_run(w0, data):
    return solver.run(w0, data)


X = jnp.ones((32, 4))
y = jnp.ones((32,))
for _ in range(3):
    params, state = jitted_run(jnp.zeros(4), (X, y))
