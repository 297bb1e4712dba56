# Thread: https://github.com/dynamiqs/dynamiqs/pull/983 ("Add tracing tests for general utilities")
# Diagnosis (Ronan Gautier, dynamiqs maintainer; the PR's tracing tests failed on these branches, replaced by `jax.lax.select`): "Add tracing tests for general utilities"
# Problem: `bloch_coordinates` branches in Python on values computed from the state (`... if rb != 0 else 0.0`, `if r == 0:`); traced under jit or vmap, both tests need concrete values.
# (The function as in dynamiqs/utils/general.py before the PR, on plain arrays; evaluated under jit as the PR's tests do.)
import jax
import jax.numpy as jnp


def isket(x):
    return x.shape[-1] == 1


def isdm(x):
    return x.shape[-1] == x.shape[-2]


def bloch_coordinates(x):
    if isket(x):
        a, b = x[:, 0]
        ra, ta = jnp.abs(a), jnp.angle(a)
        rb, tb = jnp.abs(b), jnp.angle(b)
        r = 1  # for a pure state
        theta = 2 * jnp.acos(ra)
        phi = tb - ta if rb != 0 else 0.0  # expect: JF402
    elif isdm(x):
        rx = 2 * x[0, 1].real
        ry = 2 * x[1, 0].imag
        rz = (x[0, 0] - x[1, 1]).real
        r = jnp.linalg.norm(jnp.array([rx, ry, rz]))
        if r == 0:  # expect: JF402
            theta = 0.0
            phi = 0.0
        else:
            theta = jnp.acos(rz / r)
            phi = jnp.arctan2(ry, rx)

    phi = phi % (2 * jnp.pi)
    return jnp.array([r, theta, phi])


plus = jnp.array([[1.0], [1.0]], dtype=jnp.complex64) / jnp.sqrt(2.0)
mixed = jnp.array([[0.75, 0.0], [0.0, 0.25]], dtype=jnp.complex64)
jax.jit(bloch_coordinates)(plus)
jax.jit(bloch_coordinates)(mixed)
