# Thread: https://github.com/exoplanet-dev/jaxoplanet/issues/234 (fixed by @lgrcia in commit f830fe3, PR #236)
# Diagnosis (@lgrcia, jaxoplanet maintainer): "Good catch! Should be fixed after merging." (the fix removes the `assert self.data[(0, 0)] != 0.0` from `Ylm.normalize`)
# Problem: `Ylm.normalize` asserts that the (0, 0) coefficient is non-zero; when a map is built from traced coefficients inside `jax.jit` (e.g. `Ylm.from_dense(y)`, which normalizes by default) the assert needs a concrete bool and raises TracerBoolConversionError.
# Written for this corpus after src/jaxoplanet/experimental/starry/ylm.py before that fix (same structure, reduced; the jitted call shows how it runs).
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np


class Ylm(eqx.Module):
    data: dict
    deg: int = eqx.field(static=True)

    def __init__(self, data=None):
        if data is None:
            data = {(0, 0): 1.0}
        self.data = dict(data)
        self.deg = max(ell for ell, _ in data.keys())

    def normalize(self) -> "Ylm":
        assert self.data[(0, 0)] != 0.0, ValueError(  # expect: JF402
            "The (0, 0) coefficient must be non-zero to normalize"
        )
        data = {k: v / self.data[(0, 0)] for k, v in self.data.items()}
        return Ylm(data=data)

    @classmethod
    def from_dense(cls, y, normalize=True) -> "Ylm":
        data = {}
        for i, ylm in enumerate(y):
            l = int(np.floor(np.sqrt(i)))
            m = i - l * (l + 1)
            data[(l, m)] = ylm
        ylm = cls(data)
        if normalize:
            return ylm.normalize()
        else:
            return ylm


jax.jit(lambda y: Ylm.from_dense(y).data[(1, 0)])(jnp.array([1.0, 0.1, 0.2, 0.3]))
