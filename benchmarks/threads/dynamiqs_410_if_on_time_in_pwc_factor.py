# Thread: https://github.com/dynamiqs/dynamiqs/pull/410 (commit 16f60241 "Make _PWCFactor jit compatible")
# Diagnosis (Adrien Bocquet, dynamiqs maintainer): "Make _PWCFactor jit compatible"
# Problem: the piecewise-constant factor tests the (traced) time against its bounds with a Python `if ... or ...`; calling the time array under `jax.jit` fails with a TracerBoolConversionError.
# (The factor class as in dynamiqs/time_array.py before the fix; the commit's new test jits the callable object.)
import jax
import jax.numpy as jnp


class _PWCFactor:
    def __init__(self, times, values):
        self.times = times  # (nv+1)
        self.values = values  # (..., nv)
        self.nv = self.values.shape[-1]

    def __call__(self, t):
        if t < self.times[0] or t >= self.times[-1]:  # expect: JF402
            return jnp.zeros_like(self.values[..., 0])
        else:
            idx = jnp.searchsorted(self.times, t, side='right') - 1
            return self.values[..., idx]


class PWCTimeArray:
    def __init__(self, factors, arrays):
        self.factors = factors
        self.arrays = arrays

    def __call__(self, t):
        coeffs = jnp.stack([f(t) for f in self.factors])
        return jnp.tensordot(coeffs, self.arrays, axes=1)


times = jnp.array([0.0, 0.5, 1.0])
factors = [_PWCFactor(times, jnp.array([1.0, 2.0])), _PWCFactor(times, jnp.array([0.0, 1j]))]
arrays = jnp.stack([jnp.eye(2), jnp.ones((2, 2))])
H = PWCTimeArray(factors, arrays)

x = jax.jit(H)
x(-0.1)
x(0.0)
x(1.0)
