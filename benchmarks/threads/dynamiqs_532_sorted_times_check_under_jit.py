# Thread: https://github.com/dynamiqs/dynamiqs/pull/532 (commit cd3489d4 "Fix JIT sesolve/mesolve broken by runtime check")
# Diagnosis (@pierreguilmin, dynamiqs maintainer): "Fix JIT sesolve/mesolve broken by runtime check" (the `if not jnp.all(...)` check replaced by `eqx.error_if`)
# Problem: `check_times` validates that the save times are strictly increasing with a Python `if` on `jnp.all(jnp.diff(x) > 0)`; when `sesolve` is jitted the save times are traced.
# (The argument checks as in dynamiqs/_checks.py before the fix; the solver reduced to explicit Euler steps.)
import jax
import jax.numpy as jnp


def check_times(x, argname, allow_empty=False):
    if x.ndim != 1:
        raise ValueError(f'Argument {argname} must be a 1D array, but is a {x.ndim}D array.')
    if not allow_empty and len(x) == 0:
        raise ValueError(f'Argument {argname} must contain at least one element.')
    if not jnp.all(jnp.diff(x) > 0):  # expect: JF402
        raise ValueError(f'Argument {argname} must be sorted in strictly ascending order.')


def _check_sesolve_args(H, psi0, tsave):
    if H.shape[-1] != psi0.shape[-2]:
        raise ValueError('Arguments H and psi0 have incompatible shapes.')
    check_times(tsave, 'tsave')


def sesolve(H, psi0, tsave):
    _check_sesolve_args(H, psi0, tsave)

    def step(psi, dt):
        psi = psi - 1j * dt * (H @ psi)
        return psi / jnp.linalg.norm(psi), psi

    _, states = jax.lax.scan(step, psi0, jnp.diff(tsave, prepend=tsave[0]))
    return states


H = jnp.array([[0.0, 1.0], [1.0, 0.0]], dtype=jnp.complex64)
psi0 = jnp.array([[1.0], [0.0]], dtype=jnp.complex64)
tsave = jnp.linspace(0.0, 1.0, 11)
states = jax.jit(sesolve)(H, psi0, tsave)
