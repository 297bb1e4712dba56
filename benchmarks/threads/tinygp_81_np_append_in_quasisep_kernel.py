# Thread: https://github.com/dfm/tinygp/pull/81 (reported again by a user in https://github.com/dfm/tinygp/issues/85)
# Diagnosis (@dfm, tinygp maintainer): "Fixing dangling numpy op in quasisep"
# Problem: the quasiseparable kernel shifts the conditioning coordinates with NumPy's `np.append` inside jitted GP conditioning; the coordinates are tracers there, so prediction at new points fails with TracerArrayConversionError.
# (The kernel reduced to an exponential kernel with scalar state; the solver's product reduced to a dense sum.)
import jax
import jax.numpy as jnp
import numpy as np


class Exp:
    def __init__(self, scale):
        self.scale = scale

    def transition_matrix(self, x1, x2):
        return jnp.exp(-(x2 - x1) / self.scale)

    def to_general_qsm(self, X1, X2):
        idx = jnp.searchsorted(X2, X1, side="right") - 1
        Xs = jax.tree_util.tree_map(lambda x: np.append(x[0], x[:-1]), X2)  # expect: JF406
        a = jax.vmap(self.transition_matrix)(Xs, X2)
        i = jnp.clip(idx, 0, X2.shape[0] - 1)
        pl = jax.vmap(self.transition_matrix)(X2[i], X1)
        return a, pl

    def matmul(self, X1, X2, y):
        a, pl = self.to_general_qsm(X1, X2)
        return pl * (a @ y)


kernel = Exp(scale=1.5)


@jax.jit
def predict_mean(X_train, y, X_test):
    return kernel.matmul(X_test, X_train, y)


X_train = jnp.sort(jnp.linspace(0.0, 10.0, 100))
y = jnp.sin(X_train)
X_test = jnp.linspace(0.0, 10.0, 46)
mean = predict_mean(X_train, y, X_test)
