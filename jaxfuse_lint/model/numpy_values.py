"""Which expressions are NumPy arrays built on the host (and so folded into a traced program).

`np.arange(n)`, `np.linspace(...)`, `np.random.normal(...)`, and array math on
them (`np.sin(np.arange(n))`, `np.arange(n).reshape(s) ** 2`) are arrays.
`np.prod(x.shape)`, `np.pi`, `np.float32(2.0)`, dtypes, and `np.array` of a
literal list (a handful of numbers, folding costs nothing) are not.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import NUMPY_ARRAY_BUILDERS, NUMPY_SCALAR_NAMES
from jaxfuse_lint.model.traced import positional
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.values import Kind


class NumpyView(ModelView, Protocol):
    """What the NumPy-array analysis reads of the model besides its structure and names."""

    def kind(self, expr: cst.CSTNode, scope: Scope) -> Kind: ...

_RANDOM_NOT_ARRAYS = frozenset({
    "numpy.random.seed", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "numpy.random.get_state", "numpy.random.set_state", "numpy.random.SeedSequence", "numpy.random.PCG64",
})
_SCALAR_METHODS = frozenset({"item", "tolist", "tobytes", "sum", "mean", "max", "min", "prod", "std", "var", "any", "all", "argmax", "argmin"})
_NUMPY_REDUCTIONS = frozenset(
    "numpy." + n for n in "sum prod max min amax amin mean median std var any all argmax argmin count_nonzero ptp".split()
)
_LITERAL_WRAPPERS = frozenset({"numpy.array", "numpy.asarray", "numpy.ascontiguousarray", "numpy.asanyarray"})

# NumPy functions whose result is never an array: scalars and dtypes, shapes and sizes,
# predicates, configuration, I/O and printing. Any other `numpy.*` call makes an array,
# except the two families below.
_NOT_ARRAYS = frozenset("numpy." + n for n in (
    "dtype finfo iinfo result_type promote_types min_scalar_type common_type issubdtype issubsctype can_cast "
    "isscalar ndim shape size array_equal array_equiv allclose iscomplexobj isrealobj isfortran iterable "
    "shares_memory may_share_memory broadcast_shapes seterr geterr seterrcall errstate set_printoptions "
    "get_printoptions printoptions array2string array_repr array_str format_float_positional "
    "format_float_scientific base_repr binary_repr save savez savez_compressed savetxt typename "
    "mintypecode sctype2char obj2sctype ndindex nditer ndenumerate broadcast show_config info source "
    "get_include deprecate busday_count is_busday datetime_as_string datetime_data "
    "str_ bytes_ object_ void generic number integer floating complexfloating signedinteger unsignedinteger "
    "datetime64 timedelta64 vectorize frompyfunc poly1d "
    "random.seed random.default_rng random.RandomState random.Generator random.get_state random.set_state "
    "random.SeedSequence random.PCG64 random.MT19937 random.Philox random.SFC64 random.BitGenerator"
).split()) | frozenset({"numpy.testing", "numpy.lib"})
# Functions that follow their input (elementwise math, layout of what they are given): an
# array exactly when an argument is one (`np.sqrt(2.0)` is a scalar).
_FOLLOW_INPUT = frozenset("numpy." + n for n in (
    "abs absolute fabs sign sqrt cbrt square exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos "
    "arctan arctan2 sinh cosh tanh arcsinh arccosh arctanh deg2rad rad2deg degrees radians hypot floor ceil "
    "trunc rint round around fix clip maximum minimum fmax fmin power float_power mod fmod remainder divmod "
    "add subtract multiply divide true_divide floor_divide negative positive reciprocal heaviside copysign "
    "nextafter spacing ldexp frexp modf real imag conj conjugate angle isnan isinf isfinite isposinf "
    "isneginf signbit logical_and logical_or logical_not logical_xor greater greater_equal less less_equal "
    "equal not_equal isclose where select piecewise nan_to_num real_if_close gcd lcm left_shift right_shift "
    "bitwise_and bitwise_or bitwise_xor invert unravel_index ravel_multi_index sinc i0 exp2 logaddexp "
    "logaddexp2 dot matmul inner tensordot einsum cross vecdot interp polyval asarray_chkfinite copy "
    "squeeze ravel transpose reshape atleast_1d atleast_2d atleast_3d "
    # scalar types: `np.float32(2.0)` is a scalar, `np.float32(a)` converts an array
    "float16 float32 float64 float128 float_ longdouble half single double int8 int16 int32 int64 uint8 "
    "uint16 uint32 uint64 int_ intc intp uint uintp bool bool_ complex64 complex128 complex_"
).split())
# Reductions: a scalar without `axis` (`np.prod(x.shape)`, `np.sum(w)`), else like their input.
_REDUCTIONS = frozenset("numpy." + n for n in (
    "sum prod max min amax amin mean median std var any all argmax argmin count_nonzero ptp average "
    "nansum nanprod nanmax nanmin nanmean nanmedian nanstd nanvar nanargmax nanargmin percentile quantile "
    "nanpercentile nanquantile trace vdot linalg.norm linalg.det linalg.matrix_rank linalg.cond "
    "linalg.slogdet"
).split())


def _is_literal(e: cst.BaseExpression) -> bool:
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _is_literal(e.expression)
    if isinstance(e, (cst.List, cst.Tuple)):
        return all(not isinstance(el, cst.StarredElement) and _is_literal(el.value) for el in e.elements)
    if isinstance(e, cst.Name):
        return e.value in ("True", "False", "None")
    return False


# The position of `size` in np.random's distributions (after their parameters).
_RANDOM_SIZE_POSITION = {
    "normal": 2, "uniform": 2, "lognormal": 2, "logistic": 2, "laplace": 2, "gumbel": 2, "binomial": 2,
    "randint": 2, "standard_normal": 0, "standard_cauchy": 0, "standard_exponential": 0, "exponential": 1,
    "poisson": 1, "rayleigh": 1, "chisquare": 1, "geometric": 1, "standard_t": 1, "power": 1, "pareto": 1,
    "weibull": 1, "zipf": 1, "gamma": 2, "beta": 2, "f": 2, "multivariate_normal": 2, "dirichlet": 1,
    "multinomial": 2, "integers": 2, "standard_gamma": 1, "vonmises": 2, "wald": 2, "triangular": 3,
    "hypergeometric": 3, "negative_binomial": 2, "noncentral_chisquare": 2, "noncentral_f": 3, "logseries": 1,
}
# Draws that are never an array (`bytes` gives bytes; `shuffle` works in place) and those that are one
# without `size` (a vector: a permutation, a multivariate draw).
_DRAWS_NOT_ARRAYS = frozenset({"bytes", "shuffle", "spawn"})
_DRAWS_ALWAYS_ARRAYS = frozenset({"permutation", "permuted", "multivariate_normal", "dirichlet", "multinomial",
                                  "multivariate_hypergeometric"})


def _is_none(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Name) and e.value == "None"


def _is_literal_scalar_sequence(e: cst.BaseExpression) -> bool:
    """`[1.0, 2.0]`: a handful of literal numbers (folding them costs nothing)."""
    return _is_literal(e)


# Arguments that jax reads as Python values at trace time (shapes, axes, split points): a host
# array there is converted to numbers, never folded into the program as a constant.
_STATIC_KEYWORDS = frozenset({
    "shape", "newshape", "axis", "axes", "reps", "indices_or_sections", "new_sizes", "dimensions",
    "source", "destination", "axis1", "axis2", "num", "repeats", "total_repeat_length", "sizes",
})
_STATIC_POSITIONS = {
    "jax.numpy.split": (1,), "jax.numpy.array_split": (1,), "jax.numpy.hsplit": (1,), "jax.numpy.vsplit": (1,),
    "jax.numpy.dsplit": (1,), "jax.numpy.reshape": (1,), "jax.numpy.zeros": (0,), "jax.numpy.ones": (0,),
    "jax.numpy.empty": (0,), "jax.numpy.full": (0,), "jax.numpy.broadcast_to": (1,), "jax.numpy.tile": (1,),
    "jax.numpy.transpose": (1,), "jax.numpy.moveaxis": (1, 2), "jax.numpy.swapaxes": (1, 2),
    "jax.numpy.expand_dims": (1,), "jax.numpy.squeeze": (1,), "jax.lax.reshape": (1, 2),
    "jax.lax.broadcast_in_dim": (1, 2), "jax.lax.transpose": (1,), "jax.random.normal": (1,),
    "jax.random.uniform": (1,),
}
_STATIC_METHODS_ARGS = frozenset({"reshape", "transpose", "swapaxes", "squeeze", "split", "tile", "repeat"})


def static_argument(model: "ModelView", node: cst.CSTNode, scope: "Scope") -> bool:
    """Whether `node` is an argument that jax reads as a Python value: `jnp.split(x, SPLITS)`,
    `x.reshape(SHAPE)`, `jnp.sum(x, axis=AXES)`, `jnp.zeros(SHAPE)`."""
    arg = model.parent(node)
    if not isinstance(arg, cst.Arg) or arg.value is not node:
        return False
    call = model.parent(arg)
    if not isinstance(call, cst.Call):
        return False
    if arg.keyword is not None:
        return arg.keyword.value in _STATIC_KEYWORDS
    qn = model.qn(call.func, scope)
    positions = _STATIC_POSITIONS.get(qn or "")
    index = [a for a in call.args if a.keyword is None].index(arg) if not arg.star else -1
    if positions is not None:
        return index in positions
    if qn is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in _STATIC_METHODS_ARGS:
        return True
    return False


class MemoizedArrays:
    """`is_array(expression, scope)`, memoised per (node, scope) and bounded in depth; a cycle
    (`a = b; b = a`) is not an array. Subclasses say what an array is (`_is_array`)."""

    def __init__(self, model: "ModelView") -> None:
        self.model = model
        self._memo: dict[tuple[int, int], bool] = {}

    def is_array(self, e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
        key = (id(e), id(scope))
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # cycles: not an array
        result = depth < 30 and self._is_array(e, scope, depth + 1)
        self._memo[key] = result
        return result

    def _is_array(self, e: cst.CSTNode, scope: "Scope", depth: int) -> bool:
        raise NotImplementedError


class NumpyArrays(MemoizedArrays):
    model: "NumpyView"

    def is_numpy_call(self, e: cst.CSTNode, scope: "Scope") -> str | None:
        """The numpy function a call (or `np.mgrid[...]`) makes, if any; a draw of a NumPy random
        Generator (`rng.normal(...)`, `np.random.default_rng(0).standard_normal(...)`) is
        "numpy.random.Generator.<method>"."""
        if isinstance(e, cst.Call):
            qn = self.model.qn(e.func, scope)
            if qn is None and isinstance(e.func, cst.Attribute) and self._is_generator(e.func.value, scope):
                return f"numpy.random.Generator.{e.func.attr.value}"
            return qn if qn is not None and qn.startswith("numpy.") else None
        if isinstance(e, cst.Subscript):
            qn = self.model.qn(e.value, scope)
            return qn if qn in ("numpy.mgrid", "numpy.ogrid", "numpy.r_", "numpy.c_") else None
        return None

    def _is_array(self, e: cst.CSTNode, scope: "Scope", depth: int) -> bool:
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None and qn.startswith("numpy."):
                return self._numpy_call_is_array(e, qn, scope, depth)
            if qn is None and isinstance(e.func, cst.Attribute):
                if self._is_generator(e.func.value, scope):
                    # `rng.normal(0, 1, (256, 3))`: decided as the legacy `np.random.normal` is (the
                    # Generator's methods take `size` where the module's functions do).
                    return self._draw_is_array(e, e.func.attr.value)
                if e.func.attr.value in _SCALAR_METHODS and not e.args:
                    return False
                return self.is_array(e.func.value, scope, depth)
            if qn is None and isinstance(e.func, cst.Name):
                # The module's own NumPy helper: an array when every `return` gives one.
                callee = m.function_named(e.func.value, scope)
                if callee is not None and callee.returns and not callee.is_lambda:
                    return all(self.is_array(r, callee, depth) for r in callee.returns)
            return False
        if isinstance(e, cst.Subscript):
            if self.is_numpy_call(e, scope):
                return True
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.BinaryOperation):
            devices = getattr(self.model, "device_arrays", None)
            if devices is not None and (devices.is_array(e.left, scope) or devices.is_array(e.right, scope)):
                return False  # a jax array and a NumPy array make a jax array (`clean + noise`)
            return (self.is_array(e.left, scope, depth) or self.is_array(e.right, scope, depth)) and \
                self.model.kind(e.left, scope).value != "traced" and self.model.kind(e.right, scope).value != "traced"
        if isinstance(e, cst.UnaryOperation):
            return self.is_array(e.expression, scope, depth)
        if isinstance(e, cst.Attribute) and e.attr.value in ("T", "real", "imag", "flat"):
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.Name):
            found = m.bindings_at(e, scope)
            if found is None:
                return False
            owner, bindings = found
            return self.binding_is_array(bindings, owner, depth)
        return False

    def _numpy_call_is_array(self, e: cst.Call, qn: str, scope: "Scope", depth: int) -> bool:
        """NumPy calls make arrays by default; the tables above list what does not."""
        if qn in _LITERAL_WRAPPERS:
            arg = positional(e, 0)
            return arg is not None and not _is_literal(arg) and self.is_array(arg, scope, depth)
        if qn in _NOT_ARRAYS or qn.startswith(("numpy.testing.", "numpy.lib.", "numpy.typing.", "numpy.polynomial.")):
            return False
        if qn.startswith("numpy.random."):
            # `np.random.normal(0, 1)` draws one number; `size=` (or the shape arguments of
            # rand/randn/random) makes an array.
            if qn in _RANDOM_NOT_ARRAYS:
                return False
            return self._draw_is_array(e, qn[len("numpy.random."):])
        if qn in NUMPY_ARRAY_BUILDERS:
            return True
        has_axis = any(a.keyword is not None and a.keyword.value == "axis" and not _is_none(a.value) for a in e.args) \
            or (positional(e, 1) is not None and qn in _REDUCTIONS and qn not in ("numpy.vdot",))
        if qn in _REDUCTIONS or qn in _NUMPY_REDUCTIONS:
            if not has_axis:
                return False  # a whole-array reduction is a scalar
            return any(self.is_array(a.value, scope, depth) for a in e.args)
        if qn in _FOLLOW_INPUT or qn in NUMPY_SCALAR_NAMES:
            return any(self.is_array(a.value, scope, depth) or isinstance(a.value, (cst.List, cst.Tuple))
                       and not _is_literal_scalar_sequence(a.value) for a in e.args)
        # Anything else NumPy has (`np.hanning(256)`, `np.kaiser(64, 8.6)`, `np.unique(...)`,
        # `np.polynomial...`) returns an array.
        return True

    def _is_generator(self, e: cst.BaseExpression, scope: "Scope", depth: int = 0) -> bool:
        """`np.random.default_rng(0)` / `RandomState(...)`, or a name bound only to one."""
        if isinstance(e, cst.Call):
            return self.model.qn(e.func, scope) in ("numpy.random.default_rng", "numpy.random.RandomState",
                                                    "numpy.random.Generator")
        if isinstance(e, cst.Name) and depth < 4:
            found = self.model.bindings_at(e, scope)
            if found is None or not found[1]:
                return False
            return all(b.kind == "assign" and b.index is None and b.value is not None
                       and self._is_generator(b.value, found[0], depth + 1) for b in found[1])
        return False

    def _draw_is_array(self, e: cst.Call, name: str) -> bool:
        """Whether a random draw NAME (`np.random.NAME(...)`, or a Generator's or RandomState's
        method) makes an array: one number per element of its `size` (a keyword, or the position
        after the distribution's parameters), or of the dimensions `rand`/`randn` take; one number
        without them."""
        if name in _DRAWS_NOT_ARRAYS:
            return False
        if any(a.keyword is not None and a.keyword.value == "size" and not _is_none(a.value) for a in e.args):
            return True
        if name in ("rand", "randn", "random", "random_sample", "ranf", "sample"):
            return any(a.keyword is None for a in e.args)
        if name in _DRAWS_ALWAYS_ARRAYS:
            return True
        if name == "choice":
            return self._random_size_positional(e, 1)
        return self._random_size_positional(e, _RANDOM_SIZE_POSITION.get(name, 2))

    @staticmethod
    def _random_size_positional(e: cst.Call, position: int) -> bool:
        arg = positional(e, position)
        return arg is not None and not _is_none(arg)

    def binding_is_array(self, bindings, owner: "Scope", depth: int = 0) -> bool:
        """All of a name's bindings give it a NumPy array."""
        if not bindings:
            return False
        for b in bindings:
            if b.kind not in ("assign", "annassign", "augassign", "walrus") or b.value is None:
                return False
            value = b.value
            if b.index is not None and isinstance(value, (cst.Tuple, cst.List)):
                value = value.elements[b.index].value
            if b.kind == "augassign":
                continue  # `a += 1` keeps an array an array
            if not self.is_array(value, owner, depth):
                return False
        return any(b.kind != "augassign" for b in bindings)
