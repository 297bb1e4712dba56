# Thread: https://github.com/jax-ml/jax/issues/3994
# Diagnosis (@froystig, JAX maintainer): "The predicate `_jit_is_disabled()` does not imply that arrays are concrete. ... Even though `jit` is effectively off, `vmap` will still lead to abstract interpretation of `func`, and `arr` will be an abstract tracer value at the point of the data-dependent check."
# Problem: a data-dependent `assert` guarded by "jit is disabled" still fails with ConcretizationTypeError when the function is vmapped.
# (Adapted minimally: `jax.api._jit_is_disabled` is today's `jax.config.jax_disable_jit`; the vmap call is the maintainer's from the thread.)
import jax


@jax.vmap
@jax.jit
def func(arr):
    if jax.config.jax_disable_jit:
        assert arr.min() > 0, "data-dependent check failed"  # expect: JF402
    # implement the rest of the function
    return arr * 2


with jax.disable_jit():
    func(jax.numpy.ones((3, 4)))
