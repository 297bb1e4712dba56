"""Omnistaging: which jax calls give tracers in staged code whatever their inputs, which give
Python values even for a traced argument, and the blocks (`jax.ensure_compile_time_eval()`)
under which jax operations compute concrete values instead."""
from __future__ import annotations

from jaxfuse_lint.model.api import JNP_STATIC_FUNCTIONS

# jax and NumPy functions (besides api.JNP_STATIC_FUNCTIONS) whose result is a Python value
# even for a traced argument.
STATIC_RESULT_FUNCTIONS = frozenset({
    "jax.lax.broadcast_shapes", "jax.lax.axis_size", "jax.core.get_aval", "jax.numpy.isdtype",
    "jax.process_count", "jax.local_devices", "jax.numpy.get_printoptions", "jax.config.read", "jax.typeof",
    "numpy.ndim", "numpy.shape", "numpy.size", "numpy.result_type", "numpy.dtype", "numpy.issubdtype",
    "numpy.iinfo", "numpy.finfo", "numpy.isscalar", "numpy.promote_types", "numpy.can_cast",
})
# Omnistaging: in staged code every jax array operation is staged out, so its result is a tracer
# even when no argument is (`jnp.arange(3)`, `jnp.ones(x.shape)`, `jax.random.PRNGKey(0)`), unless
# it runs under `jax.ensure_compile_time_eval()` (checked against jax 0.10.2). These namespaces
# hold array operations; their CamelCase names are classes (`lax.Precision`; `jax.random.PRNGKey`
# is left out with them, to be safe) and the names below return Python values, callables or
# context managers, or may hand a Python value back unchanged.
OMNISTAGED_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.")
OMNISTAGED_FUNCTIONS = frozenset({"jax.device_put"})
NOT_OMNISTAGED = frozenset({
    "jax.numpy.vectorize", "jax.numpy.frompyfunc", "jax.numpy.printoptions", "jax.numpy.get_printoptions",
    "jax.numpy.set_printoptions", "jax.numpy.einsum_path", "jax.numpy.save", "jax.numpy.savez", "jax.numpy.load",
    "jax.numpy.ufunc", "jax.numpy.ndarray", "jax.numpy.issubsctype", "jax.numpy.obj2sctype",
    "jax.lax.dtype", "jax.lax.conv_dimension_numbers", "jax.lax.padtype_to_pads", "jax.lax.conv_general_permutations",
    "jax.lax.conv_shape_tuple", "jax.lax.conv_general_shape_tuple", "jax.lax.conv_transpose_shape_tuple",
    "jax.lax.reduce_window_shape_tuple", "jax.lax.axis_size", "jax.lax.broadcast_shapes",
    "jax.random.key_impl", "jax.random.default_prng_impl",
    # Collectives of Python constants fold to Python values (`lax.psum(1, "i")` is the axis size).
    "jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin", "jax.lax.psum_scatter", "jax.lax.all_gather",
    "jax.lax.ppermute", "jax.lax.pshuffle", "jax.lax.pswapaxes", "jax.lax.all_to_all", "jax.lax.pbroadcast",
    "jax.lax.pvary", "jax.lax.pcast",
    # Control flow forwards what its functions give back unchanged: a Python value stays one
    # (`lax.fori_loop(0, 3, lambda i, c: c, 0)` is 0, a one-branch `lax.switch` runs the branch).
    "jax.lax.cond", "jax.lax.switch", "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map",
    "jax.lax.associative_scan", "jax.lax.custom_root", "jax.lax.custom_linear_solve", "jax.lax.platform_dependent",
})
_NOT_OMNISTAGED_PREFIXES = ("jax.nn.initializers.", "jax.numpy.dtypes.")
# Context managers (and decorators) under which jax operations compute concrete values.
COMPILE_TIME_EVAL = frozenset({"jax.ensure_compile_time_eval", "jax.core.ensure_compile_time_eval",
                               "jax.core.eval_context"})


def omnistaged_function(qn: str | None) -> bool:
    """Whether the jax function `qn`, called in staged code, always returns tracers."""
    if qn is None or qn in NOT_OMNISTAGED or qn in JNP_STATIC_FUNCTIONS or qn in STATIC_RESULT_FUNCTIONS:
        return False
    if qn in OMNISTAGED_FUNCTIONS:
        return True
    if not qn.startswith(OMNISTAGED_NAMESPACES) or qn.startswith(_NOT_OMNISTAGED_PREFIXES):
        return False
    last = qn.rsplit(".", 1)[-1]
    return bool(last) and last[0].islower() and not last.startswith("_")
