"""A few small JAX functions, written as JAX code often is: some things XLA cannot fuse well.

`jaxfuse-lint check examples/quickstart.py` reports them; `--diff` shows the fixes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

if TYPE_CHECKING:
    from jaxtyping import Array, Float32

# A window tabulated once with NumPy, at import time.
KERNEL = np.exp(-np.linspace(0.0, 4.0, 4096) ** 2)


@jax.jit
def invert(x: Float32[Array, "65536"], y: Float32[Array, "65536"]):
    """The points (x, y) inverted in the unit circle."""
    p = jnp.stack([x, y], axis=-1)
    return p / jnp.sum(p * p, axis=-1, keepdims=True)


@jax.jit
def smooth(density: Float32[Array, "4096"]):
    print("density:", density)
    return density * KERNEL


@jax.jit
def drift(x, v, dt):
    return x + dt * v
