# Thread: https://github.com/pnkraemer/probdiffeq/pull/141 ("Recompilation resolve", commit 60aeccc9 "Resolve recompilation of taylor_coefficient init")
# Diagnosis (@pnkraemer, probdiffeq maintainer, in the function's docstring): "we use ``lambda t, y: f(t, y, p)``-style implementations and pass this lambda function to lower-level implementations, which have static "fun" arguments. Since we cannot jit this function. the lower-level stuff must recompile"
# Problem: `solve` wraps the vector field in a new lambda on every call and passes it as a static argument of the jitted Taylor-coefficient routine, and binds the parameters into a new `functools.partial` information operator that the jitted step marks static; each solve compiles both again (the maintainer's own todo: "this lambda function below is newly created at every call to solve() and therefore we recompile steps every single time").
# (The routines reduced to the initialisation and a fixed-step filter loop; `solve` called for several parameter values as a user sweeping parameters would.)
import functools
from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental.jet import jet


@partial(jax.jit, static_argnames=("vector_field", "num"))
def taylor_mode_fn(*, vector_field, initial_values, num):
    primals = vector_field(*initial_values)
    taylor_coeffs = [*initial_values, primals]
    series = [[primals]]
    for _ in range(num - 1):
        primals_out, series_new = jet(vector_field, primals=initial_values, series=series)
        taylor_coeffs = [*initial_values, primals_out, *series_new]
        series = [[primals_out, *series_new]]
    return taylor_coeffs


@partial(jax.jit, static_argnames=["info_op"])
def step_fn(state, info_op, t, dt):
    u, du = state[0], state[1]
    residual = du - info_op(u, t=t)
    return [u + dt * du, du - residual, *state[2:]]


def odefilter(info_op, taylor_coefficients, t0, t1, dt=0.1):
    state, t = list(taylor_coefficients), t0
    while t < t1:
        state = step_fn(state, info_op, t, dt)
        t = t + dt
    return state


def ode_residual(vector_field):
    def info_op(u, *, t, p):
        return vector_field(u, t=t, p=p)
    return info_op


def solve(vector_field, initial_values, t0, t1, num_derivatives, parameters=()):
    taylor_coefficients = taylor_mode_fn(
        vector_field=lambda *x: vector_field(*x, t=t0, p=parameters),  # expect: JF302
        initial_values=initial_values,
        num=num_derivatives,
    )
    info_op_curried = ode_residual(vector_field)
    info_op_partial = functools.partial(info_op_curried, p=parameters)  # expect: JF302
    return odefilter(info_op_partial, taylor_coefficients, t0, t1)


def lotka_volterra(y, *, t, p):
    a, b, c, d = p
    return jnp.array([a * y[0] - b * y[0] * y[1], -c * y[1] + d * y[0] * y[1]])


u0 = jnp.array([20.0, 20.0])
for a in jnp.linspace(0.3, 0.7, 10):
    tcoeffs = solve(lotka_volterra, (u0,), 0.0, 10.0, 4, parameters=(a, 0.01, 0.5, 0.01))
