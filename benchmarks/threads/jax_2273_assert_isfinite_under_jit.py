# Thread: https://github.com/jax-ml/jax/issues/2273
# Diagnosis (@hawkinsp, JAX maintainer): "This is working as intended ... whenever tracing encounters control flow (here, the `if` condition that is implicitly inside `assert`), in order to know which branch to take, we must have a concrete value for the `if`-condition."
# Problem: an `assert` on a reduction of the traced input inside a jitted function needs a concrete bool, so tracing fails ("Abstract value passed to `bool`"); returning the same reduction works.
import jax
import jax.numpy as np

a = np.array([1., np.nan, 3.])


@jax.jit
def test_nan_return_jit(x):
    return np.all(np.isfinite(x))


print(test_nan_return_jit(a))  # works (False)


def test_nan_assert_nojit(x):
    assert np.all(np.isfinite(x))


@jax.jit
def test_nan_assert_jit(x):
    assert np.all(np.isfinite(x))  # expect: JF402


print(test_nan_assert_jit(a))  # TypeError: Abstract value passed to `bool`
