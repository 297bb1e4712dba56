# Thread: https://github.com/dynamiqs/dynamiqs/pull/808 (commit ddb79cbe "Fix JIT compatibility with state creation")
# Diagnosis (Ronan Gautier, dynamiqs maintainer, co-authored by @pierreguilmin): "Fix dynamic error checking with equinox runtime checking" / "Fix error related to dynamic dim input"
# Problem: `fock` validates the (traced) occupation numbers with a Python `if` on `jnp.any(...)`, and turns the static mode dimensions into a jax array whose product then sizes `jnp.zeros`; both fail when the state is built inside jit.
# (The function as in dynamiqs/utils/states.py before the fix, the type checks reduced; built inside a jitted function.)
from math import prod

import jax
import jax.numpy as jnp


def _fock(dim, number):
    # tensor product of Fock states |n0> x |n1> x ... for one batch element
    idx = 0
    for d, n in zip(dim, number):
        idx = d * idx + n
    ket = jnp.zeros((prod(dim), 1), dtype=jnp.complex64)
    return ket.at[idx].set(1.0)


def fock(dim, number):
    dim = jnp.asarray(dim)  # expect: JF405
    number = jnp.asarray(number)
    if dim.ndim == 0:
        dim = dim[None]
    if number.ndim == 0:
        number = number[None]
    if jnp.any(dim - number <= 0):  # expect: JF402
        raise ValueError(
            'Argument `number` must be in the range [0, dim[i]) for each mode i:'
            ' 0 <= number[..., i] < dim[i].'
        )
    _vectorized_fock = jnp.vectorize(_fock, signature='(ndim),(ndim)->(prod_ndim,1)')
    return _vectorized_fock(dim, number)


@jax.jit
def initial_state(n):
    return fock((3, 2), jnp.stack([n, 0]))


psi0 = initial_state(1)
