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
"""
from __future__ import annotations

import libcst as cst

from codemods._helpers import RuleCodemodCommand, jnp_name, plan, replace_within
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
    new = replace_within(node, mapping)
    names = sorted({model.qn(k, scope) or "" for k in mapping})
    shown = ", ".join(f"`{n.replace('numpy.', 'np.', 1)}`" for n in names if n)
    verdict = _consumption(model, node, scope, 0)
    if verdict == BREAKS:
        return None  # used where only a concrete NumPy value works (an `if`, `int()`, another NumPy call)
    message = f"Use `{jnp.name}` instead of NumPy ({shown})"
    if verdict == MAYBE:
        message += "; the array is also used where it may need to stay a concrete NumPy value: check those uses"
    return plan(verdict == OK, message, {node: new}, jnp.imports)


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
    for read in model.index.reads:
        if read.name.value != target.value:
            continue
        hit = model.lookup(target.value, read.scope)
        if hit is None or binding not in hit[1]:
            continue
        if read.scope is not scope:
            verdicts.append(MAYBE)  # read from a nested function: review it
            continue
        verdicts.append(_consumption(model, read.name, scope, depth + 1))
    return _worst(*verdicts)


class NumpyToJnpCommand(RuleCodemodCommand):
    DESCRIPTION = "JF201: build arrays in traced code with jax.numpy instead of NumPy."
    CODE = CODE
