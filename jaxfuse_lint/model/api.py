"""What the model knows about JAX's and NumPy's public API, by canonical qualified name.

Names here are canonical: whatever the user's fork or vendored root is called
(`jax-modules`), it is rewritten to `jax` before it is looked up, and NumPy is
always `numpy`.
"""
from __future__ import annotations

from jaxfuse_lint.model import routes as _routes

# Function transforms: the function they receive runs under tracing.
TRANSFORMS = frozenset({
    "jax.jit", "jax.pmap", "jax.vmap", "jax.grad", "jax.value_and_grad", "jax.jacfwd",
    "jax.jacrev", "jax.hessian", "jax.jvp", "jax.vjp", "jax.linearize", "jax.checkpoint",
    "jax.remat", "jax.ad_checkpoint.checkpoint", "jax.custom_jvp", "jax.custom_vjp",
    "jax.make_jaxpr", "jax.eval_shape", "jax.named_call", "jax.xla_computation",
    "jax.closure_convert", "jax.experimental.pjit.pjit", "jax.experimental.shard_map.shard_map",
    "jax.shard_map", "jax.experimental.checkify.checkify", "jax.experimental.jax2tf.convert",
    "jax.experimental.maps.xmap", "jax.experimental.jet.jet",
    # equinox's filtered transforms behave like jax's for tracing purposes
    "equinox.filter_jit", "equinox.filter_vmap", "equinox.filter_pmap", "equinox.filter_grad",
    "equinox.filter_value_and_grad", "equinox.filter_checkpoint",
}) | _routes.transforms()  # every framework's transforms: model/routes.py

# Transforms that compile: applying one to a fresh callable costs a compilation.
COMPILING = frozenset({"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "equinox.filter_jit", "equinox.filter_pmap"}) | (
    _routes.names(kind="transform", compiles=True))

# lax control flow: argument positions (and keyword names) of the functions it traces.
# Every one of these traces its function arguments, jitted or not.
CONTROL_FLOW: dict[str, tuple[tuple[int, str], ...]] = {
    "jax.lax.fori_loop": ((2, "body_fun"),),
    "jax.lax.while_loop": ((0, "cond_fun"), (1, "body_fun")),
    "jax.lax.scan": ((0, "f"),),
    "jax.lax.map": ((0, "f"),),
    "jax.lax.cond": ((1, "true_fun"), (2, "false_fun")),
    "jax.lax.switch": ((1, "branches"),),
    "jax.lax.associative_scan": ((0, "fn"),),
    "jax.lax.custom_root": ((0, "f"), (2, "solve"), (3, "tangent_solve")),
    "jax.lax.custom_linear_solve": ((0, "matvec"), (2, "solve"), (3, "transpose_solve")),
    "jax.lax.reduce": ((2, "computation"),),
}
# Every framework's drivers (haiku's and flax's loops, diffrax terms, optax, blackjax).
CONTROL_FLOW.update((name, slots) for name, slots in _routes.drivers().items() if name not in CONTROL_FLOW)

# The lax functions that are loops: each iteration runs the body as its own kernels.
LOOPS = frozenset({"jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.scan", "jax.lax.map"}) | (
    _routes.names(kind="driver", loop=True))

# Host callbacks: the function passed runs on the host with concrete values.
CALLBACKS = frozenset({
    "jax.pure_callback", "jax.experimental.io_callback", "jax.debug.callback",
    "jax.experimental.host_callback.call", "jax.experimental.host_callback.id_tap",
    "jax.experimental.host_callback.id_print",
})



def is_callback(qualified_name: str | None) -> bool:
    """Host callbacks under any path (`jax.pure_callback`, `jax._src.callback.io_callback`...)."""
    if qualified_name is None:
        return False
    if qualified_name in CALLBACKS:
        return True
    last = qualified_name.rsplit(".", 1)[-1]
    return qualified_name.startswith("jax") and (
        last in ("pure_callback", "io_callback", "id_tap", "id_print") or qualified_name.endswith("debug.callback"))


# Attributes of an array that are static Python values under tracing.
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "itemsize", "nbytes", "weak_type", "sharding", "aval"})

# Attributes of an array that are arrays of the same tracedness.
ARRAY_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "at"})

# jax.numpy / jax functions whose result is a static Python value even on traced inputs.
JNP_STATIC_FUNCTIONS = frozenset({
    "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.dtype", "jax.numpy.result_type",
    "jax.numpy.issubdtype", "jax.numpy.iinfo", "jax.numpy.finfo", "jax.numpy.promote_types",
    "jax.numpy.can_cast", "jax.numpy.isdtype", "jax.numpy.iscomplexobj", "jax.numpy.isrealobj",
    "jax.numpy.isscalar", "jax.dtypes.canonicalize_dtype", "jax.dtypes.result_type",
    "jax.dtypes.issubdtype", "jax.tree_util.tree_structure", "jax.tree.structure",
    "jax.numpy.broadcast_shapes", "jax.eval_shape", "jax.devices", "jax.device_count",
    "jax.local_device_count", "jax.process_index", "jax.default_backend",
})

# Elementwise jax.numpy functions: the result broadcasts its array arguments.
JNP_ELEMENTWISE = frozenset(
    "jax.numpy." + n
    for n in (
        "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp exp2 expm1 "
        "log log2 log10 log1p sqrt cbrt square abs absolute negative positive sign conj conjugate "
        "real imag angle floor ceil round rint trunc fix reciprocal add subtract multiply divide "
        "true_divide floor_divide power float_power mod remainder fmod maximum minimum fmax fmin "
        "arctan2 hypot where clip logaddexp logaddexp2 heaviside copysign nextafter sinc deg2rad "
        "rad2deg degrees radians isnan isinf isfinite logical_and logical_or logical_not logical_xor "
        "greater greater_equal less less_equal equal not_equal asarray array astype"
    ).split()
) | frozenset({"jax.nn.relu", "jax.nn.sigmoid", "jax.nn.softplus", "jax.nn.gelu", "jax.nn.silu", "jax.lax.exp", "jax.lax.sin", "jax.lax.cos"})

# The reductions JF101 knows, by canonical name, with the kind of arithmetic they unroll to.
REDUCTIONS = {
    "jax.numpy.sum": "sum", "jax.numpy.mean": "mean", "jax.numpy.prod": "prod",
    "jax.numpy.max": "max", "jax.numpy.min": "min", "jax.numpy.amax": "max", "jax.numpy.amin": "min",
    "jax.numpy.linalg.norm": "norm",
}
REDUCTION_METHODS = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "min": "min"}

# NumPy functions that create a new array from static arguments alone.
NUMPY_ARRAY_BUILDERS = frozenset(
    "numpy." + n
    for n in (
        "arange linspace logspace geomspace ones zeros full empty eye identity meshgrid indices tri "
        "fromfunction load loadtxt genfromtxt frombuffer fromfile tile repeat diag diagflat vander "
        "fft.fftfreq fft.rfftfreq outer kron mgrid ogrid ones_like zeros_like full_like empty_like "
        "concatenate stack vstack hstack dstack column_stack broadcast_to"
    ).split()
)

# NumPy constructors of Python/NumPy scalars and dtypes: never a folded array.
NUMPY_SCALAR_NAMES = frozenset(
    "numpy." + n
    for n in (
        "float16 float32 float64 float_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 int_ "
        "bool_ complex64 complex128 dtype finfo iinfo result_type promote_types issubdtype "
        "can_cast isscalar ndim shape size prod sum max min abs floor ceil sqrt exp log log2 log10 "
        "sin cos tan pi e inf nan round isnan isinf isfinite gcd lcm"
    ).split()
)

# jax.numpy functions that create arrays from static shapes: cheap, size-inflating, fusible.
JNP_CREATORS = frozenset(
    "jax.numpy." + n
    for n in (
        "arange linspace logspace geomspace ones zeros full empty eye identity meshgrid indices tri "
        "fft.fftfreq fft.rfftfreq ones_like zeros_like full_like empty_like mgrid ogrid"
    ).split()
) | frozenset({"jax.lax.iota", "jax.lax.broadcasted_iota", "jax.lax.full"})
