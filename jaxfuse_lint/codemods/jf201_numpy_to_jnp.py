"""JF201: build the array with `jax.numpy` instead of NumPy inside traced code.

    x + np.arange(x.size).reshape(x.shape) ** 2.3   ->   x + jnp.arange(x.size).reshape(x.shape) ** 2.3
    np.sin(np.linspace(0, 1, n))                    ->   jnp.sin(jnp.linspace(0, 1, n))

Every array-building NumPy call inside the reported expression is rewritten
(static helpers such as `np.prod(x.shape)`, `np.pi` or `np.float32` are left
alone). The module's alias for `jax.numpy` is reused, or `import jax.numpy as
jnp` is added. Only functions whose `jax.numpy` namesake means the same are
rewritten; `np.random.*`, file loaders and anything else without an equivalent
get no fix. The fix is unsafe when the array is also used where NumPy's
concrete value matters (iterated, tested in an `if`, converted with `int()`,
`.tolist()`, handed to another NumPy call): with `jax.numpy` it is traced.

Dtype condition: NumPy computes in float64/int64 on the host and jax canonicalises the result
(float32/int32 without x64) as a strongly typed array; `jnp` computes in the default dtype of
the x64 setting, and its results of Python scalars are weakly typed (`jnp.arange(n) * 0.5` is a
weak float32; NumPy's float64 becomes a strong float32). The fix is safe only when both agree
bit for bit: creation with literal or shape arguments (`zeros`, `ones`, `eye`, `arange` with int
arguments, `array` of literals, `full` with `dtype=` — `jnp.full(s, 3)` is weakly typed — their
`dtype=`) and layout (`reshape`, `transpose`,
`stack`, ...). Anything computed (`**`, `sin`, `linspace`, `fftfreq`, arithmetic) is rounded in
another precision and may be weakly typed: unsafe.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.codemods._names import jnp_name
from jaxfuse_lint.codemods._statements import replace_within
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.model import keyword, positional
from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, walk
from jaxfuse_lint.model.values import Kind

CODE = "JF201"

# numpy functions whose jax.numpy namesake computes the same values (dtype defaults aside:
# with x64 disabled NumPy's 64-bit results are canonicalised to 32 bits when they enter jit).
SAME_MEANING = frozenset(
    "numpy." + n
    for n in (
        # creation
        "arange linspace logspace geomspace ones zeros full empty eye identity meshgrid indices tri tril triu "
        "ones_like zeros_like full_like empty_like fft.fftfreq fft.rfftfreq fft.fftshift fft.ifftshift outer kron "
        "tile repeat concatenate stack vstack hstack dstack column_stack broadcast_to diag diagflat vander "
        "array asarray "
        # elementwise
        "sin cos tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh exp exp2 expm1 log log2 "
        "log10 log1p sqrt cbrt square abs absolute negative positive sign floor ceil rint trunc fix "
        "reciprocal add subtract multiply divide true_divide floor_divide power float_power mod remainder fmod "
        "maximum minimum fmax fmin arctan2 hypot where clip sinc deg2rad rad2deg degrees radians heaviside "
        "copysign logaddexp real imag conj conjugate angle "
        # layout
        "reshape transpose swapaxes moveaxis expand_dims squeeze flip fliplr flipud roll ravel rot90"
    ).split()
)
SAME_MEANING_SUBSCRIPTS = frozenset({"numpy.mgrid", "numpy.ogrid", "numpy.r_", "numpy.c_"})
# Array methods that jax arrays have with the same meaning.
ARRAY_METHODS = frozenset(
    "reshape astype transpose squeeze swapaxes ravel flatten conj conjugate copy clip round T real imag".split()
)
_STATIC_BUILTINS = frozenset({"builtins.len"})


def build_fix(violation, model, settings):
    node = violation.node
    scope = model.scope_of(node)
    while scope is not None and not isinstance(scope, Function):
        scope = scope.parent
    if scope is None:
        return None
    jnp = jnp_name(model, [scope])
    if jnp is None:
        return None
    arrays = model.numpy_arrays
    mapping: dict[cst.CSTNode, cst.CSTNode] = {}
    for n in walk(node):
        if isinstance(n, cst.Call):
            qn = model.qn(n.func, scope)
            if qn is None or not qn.startswith("numpy."):
                continue
            if not arrays.is_array(n, scope):
                continue  # np.prod(x.shape), np.float32(2): static values, left alone
            if qn not in SAME_MEANING or any(isinstance(a.value, cst.Lambda) for a in n.args):
                return None
            mapping[n.func] = jnp.attr(qn[len("numpy."):])
        elif isinstance(n, cst.Subscript):
            qn = model.qn(n.value, scope)
            if qn is None or not qn.startswith("numpy."):
                continue
            if qn not in SAME_MEANING_SUBSCRIPTS:
                return None
            mapping[n.value] = jnp.attr(qn[len("numpy."):])
        elif isinstance(n, cst.Attribute) and n.attr.value not in STATIC_ATTRIBUTES:
            # A method of a NumPy array inside the expression must exist on jax arrays too.
            parent = model.parent(n)
            if model.qn(n, scope) is None and arrays.is_array(n.value, scope) and n.attr.value not in ARRAY_METHODS:
                if isinstance(parent, cst.Call) and parent.func is n:
                    return None
    if not mapping:
        return None
    if not model.static_uses.uses(node, scope).rewritable:
        return None  # a static use (an axis, a shape, `if`), an in-place change, a use not followed
    new = replace_within(node, mapping)
    names = sorted({as_written(k, model.qn(k, scope) or "") for k in mapping if model.qn(k, scope)})
    shown = ", ".join(f"`{n}`" for n in names)
    verdict = _consumption(model, node, scope, 0)
    if verdict == BREAKS:
        return None  # used where only a concrete NumPy value works (an `if`, `int()`, another NumPy call)
    message = f"Use `{jnp.name}` instead of NumPy ({shown})"
    if verdict == MAYBE:
        message += ("; unsafe: the array is also used where it may need to stay a concrete NumPy value: check "
                    "those uses")
    inexact = _first_inexact(model, node, scope) or _numpy_arithmetic_around(model, node, scope)
    if inexact is not None:
        message += (f"; unsafe: `{model.module.code_for_node(inexact).strip()}` computes in float64 with NumPy "
                    "(then rounded to float32 without x64) and in float32 with `jnp`, and `jnp` results of Python "
                    "scalars are weakly typed where NumPy's are not: values and dtypes can differ")
    return plan(verdict == OK and inexact is None, message, {node: new}, jnp.imports)


# -- dtypes and values: where NumPy and jax.numpy agree exactly ----------------------------------
# NumPy builds the array on the host in float64/int64; jax canonicalises it to float32/int32 when it
# enters jit without x64 (and keeps 64 bits with x64), as a strongly typed array. `jnp` builds it in
# the default dtype of the x64 setting. The two agree bit for bit, dtype and weak type included, for
# creation with exactly representable values and for layout: these calls, with literal or shape
# arguments. Anything computed (`**`, `sin`, `linspace`, arithmetic with Python floats) is rounded
# differently and may be weakly typed under `jnp`.
_EXACT_CREATION = frozenset(
    "numpy." + n for n in "zeros ones empty full eye identity indices tri zeros_like ones_like empty_like "
    "full_like array asarray arange".split())
_EXACT_LAYOUT = frozenset(
    "numpy." + n for n in "reshape transpose swapaxes moveaxis expand_dims squeeze flip fliplr flipud roll ravel "
    "rot90 tile repeat concatenate stack vstack hstack dstack column_stack broadcast_to tril triu meshgrid".split())
_SHAPE_FIRST = frozenset("numpy." + n for n in "zeros ones empty full eye identity indices tri".split())
_EXACT_METHODS = frozenset("reshape transpose squeeze swapaxes ravel flatten copy T".split())


def _first_inexact(model, node, scope):
    """The first part of the NumPy expression whose jnp version may differ in value, dtype or weak type."""
    if isinstance(node, cst.Call):
        qn = model.qn(node.func, scope)
        if qn in _EXACT_CREATION or qn in _EXACT_LAYOUT:
            if qn in ("numpy.full", "numpy.full_like") and not any(
                    a.keyword is not None and a.keyword.value == "dtype" for a in node.args):
                fill = positional(node, 1) or keyword(node, "fill_value")
                if fill is not None and not model.numpy_arrays.is_array(fill, scope):
                    # `jnp.full(s, 3)` takes the Python number's weak type; NumPy's int64 array is strongly
                    # typed (found by tests/test_fix_safety.py: `int8_x + full(s, 3)` is int32 vs int8).
                    return node
            for i, a in enumerate(node.args):
                if a.keyword is not None and a.keyword.value == "dtype":
                    continue
                if qn in _SHAPE_FIRST and (i == 0 or (a.keyword is not None and a.keyword.value in ("shape", "N", "M"))):
                    if model.kind(a.value, scope) is Kind.STATIC:
                        continue  # a shape: only its (static) value matters, not how it is computed
                bad = _first_inexact_argument(model, a.value, scope, qn)
                if bad is not None:
                    return bad
            return None
        if qn is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in _EXACT_METHODS:
            inner = _first_inexact(model, node.func.value, scope)
            if inner is not None:
                return inner
            for a in node.args:
                if not _static_int(model, a.value, scope):
                    return a.value
            return None
        return node
    if isinstance(node, cst.Attribute) and node.attr.value == "T":
        return _first_inexact(model, node.value, scope)
    if isinstance(node, cst.Subscript) and model.qn(node.value, scope) in ("numpy.mgrid", "numpy.ogrid"):
        for el in node.slice:
            sl = el.slice
            if not isinstance(sl, cst.Slice) or any(
                    b is not None and not _static_int(model, b, scope) for b in (sl.lower, sl.upper, sl.step)):
                return node  # float or complex steps: computed
        return None
    return node


def _numpy_arithmetic_around(model, node, scope):
    """Arithmetic NumPy did on the array with static partners (`np.arange(5) ** 2.3`): after the fix
    `jnp` does it, in float32 and weakly typed. Arithmetic with a traced partner was jax's already."""
    child, parent = node, model.parent(node)
    while parent is not None:
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is child else parent.left
            if model.kind(other, scope) is Kind.TRACED:
                return None
            return parent
        if isinstance(parent, cst.Attribute) and parent.value is child:
            grand = model.parent(parent)  # a method of the array (`.reshape(...)`): still NumPy's value
            child = grand if isinstance(grand, cst.Call) and grand.func is parent else parent
        elif isinstance(parent, (cst.UnaryOperation, cst.Subscript)) or (
                isinstance(parent, cst.Subscript) and parent.value is child):
            child = parent
        else:
            return None
        parent = model.parent(child)
    return None


def _first_inexact_argument(model, arg, scope, qn):
    arrays = model.numpy_arrays
    if isinstance(arg, (cst.Call, cst.Attribute)) and arrays.is_array(arg, scope):
        return _first_inexact(model, arg, scope)
    if isinstance(arg, (cst.List, cst.Tuple)):
        for el in arg.elements:
            bad = _first_inexact_argument(model, el.value, scope, qn)
            if bad is not None:
                return bad
        return None
    if qn == "numpy.arange":
        # Float steps accumulate differently; whole-number floats (`arange(12.0)`) give the same values.
        if _static_int(model, arg, scope) or (isinstance(arg, cst.Float) and float(arg.value).is_integer()):
            return None
        return arg
    if _static_int(model, arg, scope) or isinstance(arg, cst.Float):
        return None  # a Python float literal is rounded to float32 once, by either library
    if isinstance(arg, cst.Name) and arg.value in ("True", "False", "None"):
        return None
    if isinstance(arg, cst.SimpleString):
        return None
    return arg


def _static_int(model, e, scope) -> bool:
    """An int known without tracing: a literal, `x.shape[i]`, `x.size`, `x.ndim`, `len(x)`, and sums,
    differences and products of those."""
    if isinstance(e, cst.Integer):
        return True
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
        return _static_int(model, e.expression, scope)
    if isinstance(e, cst.Subscript):
        return isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape"
    if isinstance(e, cst.Attribute):
        return e.attr.value in ("size", "ndim") or e.attr.value == "shape"
    if isinstance(e, cst.Call):
        return model.qn(e.func, scope) == "builtins.len"
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract, cst.Multiply,
                                                                        cst.FloorDivide)):
        return _static_int(model, e.left, scope) and _static_int(model, e.right, scope)
    if isinstance(e, (cst.Tuple, cst.List)):
        return all(not isinstance(el, cst.StarredElement) and _static_int(model, el.value, scope)
                   for el in e.elements)
    return False


OK, MAYBE, BREAKS = "ok", "maybe", "breaks"
_RANK = {OK: 0, MAYBE: 1, BREAKS: 2}
# Array methods that give an array (or a 0-d array) on jax arrays too.
_ARRAY_RESULT_METHODS = ARRAY_METHODS | frozenset("sum mean max min prod any all cumsum argmax argmin".split())
_CONCRETE_BUILTINS = frozenset(
    "builtins." + n for n in "int float bool complex range list tuple set dict str bytes iter next sorted".split()
)
_CONCRETE_METHODS = frozenset({"tolist", "item", "tobytes", "__index__", "__int__", "__float__"})


def _worst(*verdicts: str) -> str:
    return max(verdicts, key=_RANK.__getitem__) if verdicts else OK


def _consumed_as_array(model, node, scope, depth: int) -> bool:
    return _consumption(model, node, scope, depth) == OK


def _consumption(model, node, scope, depth: int) -> str:
    """How the value's uses fare when it is a traced jax array: ok, maybe (review), or breaks."""
    if depth > 4:
        return MAYBE
    parent = model.parent(node)
    if parent is None:
        return MAYBE
    if isinstance(parent, (cst.BinaryOperation, cst.Comparison)):
        return _consumption(model, parent, scope, depth)
    if isinstance(parent, cst.UnaryOperation):
        if isinstance(parent.operator, cst.Not):
            return BREAKS
        return _consumption(model, parent, scope, depth)
    if isinstance(parent, cst.ComparisonTarget):
        return _consumption(model, model.parent(parent), scope, depth)
    if isinstance(parent, (cst.If, cst.While, cst.Assert)) and getattr(parent, "test", None) is node:
        return BREAKS
    if isinstance(parent, cst.IfExp) and parent.test is node:
        return BREAKS
    if isinstance(parent, cst.BooleanOperation):
        return BREAKS
    if isinstance(parent, cst.Attribute) and parent.value is node:
        attr = parent.attr.value
        if attr in STATIC_ATTRIBUTES:
            return OK
        grand = model.parent(parent)
        is_call = isinstance(grand, cst.Call) and grand.func is parent
        if attr in _CONCRETE_METHODS:
            return BREAKS
        if attr in _ARRAY_RESULT_METHODS:
            return _consumption(model, grand if is_call else parent, scope, depth)
        return MAYBE
    if isinstance(parent, cst.Subscript):
        if parent.value is node:
            return _consumption(model, parent, scope, depth)
        return MAYBE
    if isinstance(parent, cst.Index):
        sub = model.parent(model.parent(parent))  # Index -> SubscriptElement -> Subscript
        if isinstance(sub, cst.Subscript) and model.kind(sub.value, scope) is Kind.TRACED:
            return _consumption(model, sub, scope, depth)
        return MAYBE
    if isinstance(parent, cst.Element):
        container = model.parent(parent)
        if isinstance(container, (cst.List, cst.Tuple)):
            return _consumption(model, container, scope, depth)
        return MAYBE
    if isinstance(parent, cst.Arg):
        call = model.parent(parent)
        if not isinstance(call, cst.Call):
            return MAYBE
        qn = model.qn(call.func, scope)
        if qn is not None:
            if qn in _STATIC_BUILTINS:
                return OK
            if qn in _CONCRETE_BUILTINS or qn.startswith("numpy.") or qn.startswith("math."):
                return BREAKS
            return OK if qn.startswith("jax.") else MAYBE
        if isinstance(call.func, cst.Name):
            fn = model.function_named(call.func.value, scope)
            return OK if fn is not None and model.is_traced(fn) else MAYBE
        return MAYBE
    if isinstance(parent, cst.Return) or (isinstance(parent, cst.Lambda) and parent.body is node):
        return OK
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is node:
        return MAYBE  # iterating a traced array works, but yields tracers, not Python numbers
    if isinstance(parent, cst.AugAssign) and parent.value is node:
        ok = isinstance(parent.target, cst.Name) and model.kind(parent.target, scope) is Kind.TRACED
        return OK if ok else MAYBE
    if isinstance(parent, cst.Assign) and parent.value is node:
        if len(parent.targets) != 1:
            return MAYBE
        return _names_consumption(model, parent.targets[0].target, scope, depth)
    return MAYBE


def _names_consumption(model, target, scope, depth) -> str:
    if isinstance(target, (cst.Tuple, cst.List)):
        if any(isinstance(el, cst.StarredElement) for el in target.elements):
            return MAYBE
        return _worst(*(_names_consumption(model, el.value, scope, depth) for el in target.elements))
    if not isinstance(target, cst.Name):
        return MAYBE
    found = model.lookup(target.value, scope)
    if found is None or found[0] is not scope or len(found[1]) != 1:
        return MAYBE
    binding = found[1][0]
    verdicts = []
    for read in model.index.reads_named(target.value, scope):
        hit = model.lookup(target.value, read.scope)
        if hit is None or binding not in hit[1]:
            continue
        if read.scope is not scope:
            verdicts.append(MAYBE)  # read from a nested function: review it
            continue
        verdicts.append(_consumption(model, read.name, scope, depth + 1))
    return _worst(*verdicts)
