"""A value captured by a `lax` loop body, as JF203's calibration table describes it
(jaxfuse_lint/calibrate/jf203.py):

- `value_kind(expr)`: what the captured value is: "grid" (built from shapes only: iota,
  `indices`, `fftfreq`), "elementwise" (elementwise work on inputs), "roll" (layout changes of an
  input: roll, flip, transpose, slices), "reduction", "cumsum", "fft", "matmul", "sort" (sorts,
  searches, factorisations, solves), "loop_output" (the result of an earlier `lax` loop or
  `cond`), "python" (a Python value: arithmetic on static shapes and attributes, no array op);
  None when it holds a call this module cannot name. The most expensive operation decides,
  following the names bound once in the function and the module's own helpers;
- `use_of(read)`: what the body does with it: "elementwise", "fft" (it multiplies an FFT's result
  or feeds an FFT), "matmul" (an operand of a contraction), or None;
- `value_shape(expr)`: its shape, where the model's shapes stop short (see the function);
- `unrolled(site)`: True for a fully unrolled loop (`unroll=True`, or an unroll factor that covers
  the static trip count), False for a rolled one, None for a partial unroll.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import CONTROL_FLOW, JNP_CREATORS, JNP_ELEMENTWISE, REDUCTIONS, STATIC_ATTRIBUTES
from jaxfuse_lint.model.computed_arrays import COSTLY, COSTLY_PREFIXES
from jaxfuse_lint.model.fusion import CONTRACTIONS, FFT_FUNCTIONS, own_nodes, static_int
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.shape_only import ShapeOnly
from jaxfuse_lint.model.traced import keyword, positional
from jaxfuse_lint.model.values import Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.semantic import LoopSite, SemanticModel
    from jaxfuse_lint.model.shapes import Shape

# The most expensive kind present decides (a grid is decided by the shape-only analysis).
_RANK = ("loop_output", "sort", "fft", "matmul", "cumsum", "reduction", "roll", "elementwise")
_CUMULATIVE = frozenset({
    "jax.numpy.cumsum", "jax.numpy.cumprod", "jax.numpy.cumulative_sum", "jax.numpy.cumulative_prod",
    "jax.numpy.nancumsum", "jax.numpy.nancumprod", "jax.lax.cumsum", "jax.lax.cumprod", "jax.lax.cummax",
    "jax.lax.cummin", "jax.lax.cumlogsumexp", "jax.lax.associative_scan",
})
_MORE_REDUCTIONS = frozenset("jax.numpy." + n for n in (
    "sum prod mean max min amax amin any all argmax argmin std var nansum nanmean nanmax nanmin "
    "count_nonzero ptp average trace vdot linalg.norm"
).split()) | frozenset({"jax.lax.reduce", "jax.lax.psum", "jax.nn.logsumexp", "jax.scipy.special.logsumexp",
                        "jax.nn.softmax", "jax.nn.log_softmax", "jax.numpy.linalg.norm"})
_LAYOUT = frozenset("jax.numpy." + n for n in (
    "roll flip fliplr flipud rot90 transpose swapaxes moveaxis reshape ravel expand_dims squeeze "
    "broadcast_to concatenate stack hstack vstack column_stack pad tile repeat real imag conj "
    "where select clip astype asarray array diagonal triu tril"
).split()) | frozenset({"jax.lax.broadcast_in_dim", "jax.lax.slice", "jax.lax.dynamic_slice",
                        "jax.lax.transpose", "jax.lax.rev", "jax.lax.pad", "jax.lax.concatenate",
                        "jax.lax.reshape", "jax.lax.convert_element_type", "jax.lax.stop_gradient"})
_DATA_MOVES = frozenset("jax.numpy." + n for n in (
    "roll flip fliplr flipud rot90 transpose swapaxes moveaxis concatenate stack hstack vstack column_stack "
    "pad tile repeat diagonal"
).split()) | frozenset({"jax.lax.transpose", "jax.lax.rev", "jax.lax.pad", "jax.lax.concatenate",
                        "jax.lax.dynamic_slice"})
_METHODS = {
    "sum": "reduction", "mean": "reduction", "max": "reduction", "min": "reduction", "prod": "reduction",
    "std": "reduction", "var": "reduction", "any": "reduction", "all": "reduction", "argmax": "reduction",
    "argmin": "reduction", "cumsum": "cumsum", "cumprod": "cumsum", "sort": "sort", "argsort": "sort",
    "dot": "matmul", "transpose": "roll", "swapaxes": "roll", "reshape": None, "astype": None, "ravel": None,
    "flatten": None, "squeeze": None, "conj": None, "conjugate": None, "clip": None, "round": None,
}
# Elementwise functions outside `jnp`'s list (the FFTs themselves are named before: these are fftfreq, fftshift).
_ELEMENTWISE_ROUTES = ("jax.numpy.fft.", "jax.scipy.special.", "jax.nn.",
                       "jax.lax.exp", "jax.lax.log", "jax.lax.sin", "jax.lax.cos", "jax.lax.tanh", "jax.lax.sqrt",
                       "jax.lax.rsqrt", "jax.lax.erf", "jax.lax.logistic", "jax.lax.abs", "jax.lax.max", "jax.lax.min",
                       "jax.lax.select", "jax.lax.clamp", "jax.lax.integer_pow", "jax.lax.pow")
_PYTHON_CALLS = frozenset({"builtins.len", "builtins.int", "builtins.float", "builtins.min", "builtins.max",
                           "builtins.abs", "builtins.round", "math.prod", "math.ceil", "math.floor", "numpy.prod"})
_DEPTH = 6


def value_kind(model: "SemanticModel", expr: cst.BaseExpression, scope: "Scope") -> str | None:
    if python_value(model, expr, scope):
        return "python"
    kinds = _kinds(model, expr, scope, 0, set())
    if kinds is None:
        return None
    for kind in _RANK:
        if kind in kinds:
            if kind in ("roll", "elementwise") and ShapeOnly(model).shape_only(expr, scope, {}):
                return "grid"
            return kind
    return "grid" if ShapeOnly(model).shape_only(expr, scope, {}) else "elementwise"


def python_value(model: "SemanticModel", expr: cst.BaseExpression, scope: "Scope") -> bool:
    """Arithmetic on static shapes, numbers and attributes of objects, with no array operation:
    `x.shape[0] // self.block_size` is a Python int at trace time."""
    static = False
    for node in _walk(expr):
        if isinstance(node, cst.Call):
            if model.qn(node.func, scope) not in _PYTHON_CALLS:
                return False
        elif isinstance(node, cst.Attribute) and node.attr.value in STATIC_ATTRIBUTES:
            static = True
        elif isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.DictComp, cst.SetComp)):
            return False
    return static


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _kinds(model: "SemanticModel", e: cst.CSTNode, scope: "Scope", depth: int, seen: set) -> set[str] | None:
    """The kinds of the operations `e` runs; None when one of them cannot be named."""
    if depth > _DEPTH:
        return None
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString)):
        return set()
    if isinstance(e, cst.Name):
        return _name_kinds(model, e, scope, depth, seen)
    if isinstance(e, cst.Attribute):
        if e.attr.value in STATIC_ATTRIBUTES or model.qn(e, scope) is not None:
            return set()  # `x.shape`, `jnp.pi`
        if e.attr.value in ("T", "mT"):
            inner = _kinds(model, e.value, scope, depth, seen)
            return None if inner is None else inner | {"roll"}
        if e.attr.value in ("real", "imag"):
            return _kinds(model, e.value, scope, depth, seen)
        return set() if isinstance(e.value, cst.Name) else None  # `self.table`: a field read in place
    if isinstance(e, cst.UnaryOperation):
        return _kinds(model, e.expression, scope, depth, seen)
    if isinstance(e, cst.BinaryOperation):
        left = _kinds(model, e.left, scope, depth, seen)
        right = _kinds(model, e.right, scope, depth, seen)
        if left is None or right is None:
            return None
        return left | right | ({"matmul"} if isinstance(e.operator, cst.MatrixMultiply) else {"elementwise"})
    if isinstance(e, cst.Comparison):
        out = _union(model, [e.left, *(c.comparator for c in e.comparisons)], scope, depth, seen)
        return None if out is None else out | {"elementwise"}
    if isinstance(e, (cst.Tuple, cst.List)):
        return _union(model, [el.value for el in e.elements], scope, depth, seen)
    if isinstance(e, cst.Subscript):
        inner = _kinds(model, e.value, scope, depth, seen)
        if inner is None:
            return None
        for el in e.slice:
            sl = el.slice
            parts = [sl.lower, sl.upper, sl.step] if isinstance(sl, cst.Slice) else [sl.value]
            for part in parts:
                if part is None or isinstance(part, cst.Ellipsis) or \
                        (isinstance(part, cst.Name) and part.value == "None"):
                    continue
                if static_int(model, part, scope) is None and model.kind(part, scope) is not Kind.STATIC:
                    return None  # a traced index: a gather or a dynamic slice
        return inner | {"roll"}
    if isinstance(e, cst.IfExp):
        return _union(model, [e.body, e.orelse], scope, depth, seen)
    if isinstance(e, cst.Call):
        return _call_kinds(model, e, scope, depth, seen)
    return None


def _union(model, exprs, scope, depth, seen) -> set[str] | None:
    out: set[str] = set()
    for x in exprs:
        k = _kinds(model, x, scope, depth, seen)
        if k is None:
            return None
        out |= k
    return out


def _name_kinds(model: "SemanticModel", e: cst.Name, scope: "Scope", depth: int, seen: set) -> set[str] | None:
    if e.value in ("True", "False", "None"):
        return set()
    found = model.bindings_at(e, scope)
    if found is None:
        return set()  # a builtin
    owner, bindings = found
    if not isinstance(owner, Function):
        return set()  # a module constant or function
    if any(b.kind in ("param", "def", "import", "class", "for") for b in bindings):
        return set() if all(b.kind in ("param", "def", "for") for b in bindings) else None
    if not bindings or len(bindings) > 4:
        return None
    out: set[str] = set()
    for b in bindings:  # every binding that reaches the read (`if real: kz = ... else: kz = ...`)
        if b.kind not in ("assign", "annassign") or b.value is None:
            return None
        key = (id(b.value), b.index)
        if key in seen:
            continue
        seen.add(key)
        value = b.value
        if b.index is not None and isinstance(value, (cst.Tuple, cst.List)) and b.index < len(value.elements):
            value = value.elements[b.index].value
        kinds = _kinds(model, value, owner, depth + 1, seen)
        if kinds is None:
            return None
        out |= kinds
    return out


def _call_kinds(model: "SemanticModel", e: cst.Call, scope: "Scope", depth: int, seen: set) -> set[str] | None:
    qn = model.qn(e.func, scope)
    args = [a.value for a in e.args]
    if qn is not None:
        if qn in CONTROL_FLOW:
            return {"loop_output"}
        if qn in COSTLY or qn.startswith(COSTLY_PREFIXES):
            return {"sort"}
        if qn in FFT_FUNCTIONS:
            kind = "fft"
        elif qn in CONTRACTIONS:
            kind = "matmul"
        elif qn in _CUMULATIVE:
            kind = "cumsum"
        elif qn in REDUCTIONS or qn in _MORE_REDUCTIONS:
            kind = "reduction"
        elif qn in _DATA_MOVES:
            kind = "roll"
        elif qn in JNP_CREATORS or qn in _LAYOUT or qn in JNP_ELEMENTWISE or qn.startswith(_ELEMENTWISE_ROUTES) \
                or qn in ("jax.lax.iota", "jax.lax.broadcasted_iota") or qn in _PYTHON_CALLS:
            kind = "elementwise"
        else:
            return None
        inner = _union(model, [a for a in args if not isinstance(a, (cst.Lambda,))], scope, depth, seen)
        return None if inner is None else inner | {kind}
    func = e.func
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        if method not in _METHODS:
            return None
        inner = _union(model, [func.value, *args], scope, depth, seen)
        if inner is None:
            return None
        kind = _METHODS[method]
        return inner | {kind} if kind else inner
    if isinstance(func, cst.Name):
        callee = model.function_named(func.value, scope)
        if callee is None or callee.is_lambda or not callee.returns:
            return None
        out = _union(model, args, scope, depth, seen)
        if out is None:
            return None
        for node in own_nodes(callee):
            if isinstance(node, cst.Call):
                qn2 = model.qn(node.func, model.scope_of(node) if node in model.index.scope_of_node else callee)
                if qn2 in CONTROL_FLOW:
                    return out | {"loop_output"}
        for r in callee.returns:
            k = _kinds(model, r, callee, depth + 1, seen)
            if k is None:
                return None
            out |= k
        return out
    return None


# -- what the body does with it ---------------------------------------------------------------------

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo,
               cst.BitAnd, cst.BitOr, cst.BitXor)


def use_of(model: "SemanticModel", read: cst.Name, scope: "Scope", depth: int = 0) -> str | None:
    """What the expression around `read` does with the value (see the module docstring)."""
    node: cst.CSTNode = read
    elementwise = False
    while depth <= _DEPTH:
        parent = model.parent(node)
        if isinstance(parent, cst.BinaryOperation):
            if isinstance(parent.operator, cst.MatrixMultiply):
                return "matmul"
            if not isinstance(parent.operator, _ARITHMETIC):
                return None
            other = parent.right if parent.left is node else parent.left
            if _is_fft(model, other, scope):
                return "fft"
            node, elementwise = parent, True
            continue
        if isinstance(parent, cst.UnaryOperation):
            node = parent
            continue
        if isinstance(parent, cst.Comparison):
            node, elementwise = parent, True  # `rows >= start`: an elementwise mask
            continue
        if isinstance(parent, cst.Subscript) and parent.value is node and _static_slices(model, parent, scope):
            node = parent  # `w[:, None]`, `w[1:]`: a view of it, read elementwise
            continue
        if isinstance(parent, cst.Arg):
            call = model.parent(parent)
            if not isinstance(call, cst.Call):
                return None
            qn = model.qn(call.func, scope)
            if qn in FFT_FUNCTIONS:
                return "fft"
            if qn in CONTRACTIONS:
                return "matmul"
            if qn in JNP_ELEMENTWISE or qn in ("jax.numpy.where", "jax.numpy.real", "jax.numpy.imag"):
                node, elementwise = call, True
                continue
            return None
        if isinstance(parent, cst.AugAssign):
            if isinstance(parent.operator, (cst.MatrixMultiplyAssign,)):
                return "matmul"
            if _is_fft(model, parent.target, scope):
                return "fft"
            return "elementwise"
        if isinstance(parent, cst.Assign):
            targets = parent.targets
            if len(targets) == 1 and isinstance(targets[0].target, cst.Name):
                return _use_of_name(model, targets[0].target.value, scope, depth + 1) or \
                    ("elementwise" if elementwise else None)
            return "elementwise" if elementwise else None
        if isinstance(parent, cst.Element):
            tup = model.parent(parent)
            return "elementwise" if isinstance(model.parent(tup), cst.Return) else None
        if isinstance(parent, cst.Return):
            return "elementwise"
        if isinstance(parent, cst.Lambda):
            return "elementwise"
        return None
    return None


def _static_slices(model: "SemanticModel", sub: cst.Subscript, scope: "Scope") -> bool:
    for el in sub.slice:
        sl = el.slice
        parts = [sl.lower, sl.upper, sl.step] if isinstance(sl, cst.Slice) else [sl.value]
        for part in parts:
            if part is None or isinstance(part, cst.Ellipsis) or (isinstance(part, cst.Name) and part.value == "None"):
                continue
            if static_int(model, part, scope) is None:
                return False
    return True


def _use_of_name(model: "SemanticModel", name: str, scope: "Scope", depth: int) -> str | None:
    """A name the body binds from the value: what its reads do (when they agree)."""
    if not isinstance(scope, Function) or depth > _DEPTH:
        return None
    uses = {use_of(model, r.name, r.scope, depth) for r in scope.reads if r.name.value == name}
    if len(uses) > 1:
        uses.discard("elementwise")  # an FFT or a contraction among its readers decides
    return next(iter(uses)) if len(uses) == 1 else None


def _is_fft(model: "SemanticModel", e: cst.BaseExpression, scope: "Scope") -> bool:
    if isinstance(e, cst.Call):
        return model.qn(e.func, scope) in FFT_FUNCTIONS
    if isinstance(e, cst.Name):
        found = model.bindings_at(e, scope)
        if found is None:
            return False
        values = [b.value for b in found[1] if b.kind in ("assign", "annassign", "augassign")]
        return bool(values) and any(isinstance(v, cst.Call) and model.qn(v.func, found[0]) in FFT_FUNCTIONS
                                    for v in values)
    return False


# -- the loop -----------------------------------------------------------------------------------------

def unrolled(model: "SemanticModel", site: "LoopSite") -> bool | None:
    value = keyword(site.call, "unroll")
    if value is None:
        return False
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    factor = static_int(model, value, site.scope)
    if factor is None:
        return None
    if factor <= 1:
        return False
    trips = trip_count(model, site)
    return True if trips is not None and factor >= trips else None


def trip_count(model: "SemanticModel", site: "LoopSite") -> int | None:
    call, scope = site.call, site.scope
    if site.qualified_name == "jax.lax.fori_loop":
        lower = static_int(model, positional(call, 0) or keyword(call, "lower"), scope)
        upper = static_int(model, positional(call, 1) or keyword(call, "upper"), scope)
        return upper - lower if lower is not None and upper is not None else None
    if site.qualified_name == "jax.lax.scan":
        return static_int(model, keyword(call, "length"), scope)
    return None


# -- the value's shape --------------------------------------------------------------------------------

_SAME_SHAPE = frozenset("jax.numpy." + n for n in (
    "roll flip fliplr flipud sort argsort clip real imag conj conjugate nan_to_num"
).split()) | frozenset({"jax.lax.stop_gradient", "jax.lax.sort"})
_CUMULATIVE_AXIS = frozenset({"jax.numpy.cumsum", "jax.numpy.cumprod", "jax.numpy.nancumsum",
                              "jax.numpy.nancumprod", "jax.numpy.cumulative_sum", "jax.numpy.cumulative_prod"})
_AXIS_REDUCTIONS = frozenset("jax.numpy." + n for n in "sum mean prod max min amax amin std var any all".split())


_SHAPE_DEPTH = 40


def value_shape(model: "SemanticModel", e: cst.CSTNode, scope: "Scope", depth: int = 0,
                env: dict | None = None) -> "Shape | None":
    """The shape of a captured value: the model's, or what the ops it is built from keep (a roll,
    a sort, a cumulative sum along an axis, a reduction over one, `reshape(y.shape)`, a matmul, the
    initial value of the lax loop it comes out of, the module's helper called with arrays of known
    shapes)."""
    from jaxfuse_lint.model.shapes import SCALAR, Shape, broadcast

    if depth > _SHAPE_DEPTH or e is None:
        return None
    env = env or {}
    found = model.shape(e, scope)
    if found is not None and found.total() is not None:
        return found
    if isinstance(e, cst.Name):
        got = model.bindings_at(e, scope)
        if got is None or len(got[1]) != 1:
            return found
        b = got[1][0]
        if b.kind == "param" and (id(got[0]), b.name) in env:
            return env[(id(got[0]), b.name)]
        if b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
            return value_shape(model, b.value, got[0], depth + 1, env) or found
        if b.kind == "assign" and b.index is not None and isinstance(b.value, cst.Call) and \
                model.qn(b.value.func, got[0]) == "jax.numpy.indices":
            dims = positional(b.value, 0)  # `ix, iy = jnp.indices(x.shape)`: each has x's shape
            if isinstance(dims, cst.Attribute) and dims.attr.value == "shape":
                return value_shape(model, dims.value, got[0], depth + 1, env) or found
        return found
    if isinstance(e, cst.UnaryOperation):
        return value_shape(model, e.expression, scope, depth + 1, env)
    if isinstance(e, cst.Comparison):
        out = value_shape(model, e.left, scope, depth + 1, env)
        for c in e.comparisons:
            out = broadcast(out, value_shape(model, c.comparator, scope, depth + 1, env))
        return out or found
    if isinstance(e, cst.BinaryOperation):
        left = value_shape(model, e.left, scope, depth + 1, env)
        right = value_shape(model, e.right, scope, depth + 1, env)
        if not isinstance(e.operator, cst.MatrixMultiply):
            return broadcast(left, right) or found
        if left is None or right is None or left.rank is None or right.rank is None:
            return found
        if left.rank == 1 and right.rank == 1:
            return SCALAR
        if left.rank == 2 and right.rank == 2:
            return Shape.of_dims([left.size(0), right.size(1)])
        if left.rank == 2 and right.rank == 1:
            return Shape.of_dims([left.size(0)])
        return found
    if isinstance(e, cst.Subscript):
        inner = e.value
        if isinstance(inner, cst.Call) and model.qn(inner.func, scope) == "jax.lax.scan" and len(e.slice) == 1 \
                and isinstance(e.slice[0].slice, cst.Index) and static_int(model, e.slice[0].slice.value, scope) == 0:
            init = positional(inner, 1) or keyword(inner, "init")
            return value_shape(model, init, scope, depth + 1, env) if init is not None else found
        return found
    if not isinstance(e, cst.Call):
        return found
    if isinstance(e.func, cst.Name) and model.qn(e.func, scope) is None:
        return _helper_shape(model, e, scope, depth, env) or found
    qn = model.qn(e.func, scope)
    first = positional(e, 0)
    if qn is None and isinstance(e.func, cst.Attribute) and e.func.attr.value == "reshape" and len(e.args) == 1:
        target = e.args[0].value
        if isinstance(target, cst.Attribute) and target.attr.value == "shape":
            return value_shape(model, target.value, scope, depth + 1, env) or found
        return found
    if qn == "jax.numpy.reshape":
        target = positional(e, 1) or keyword(e, "shape") or keyword(e, "newshape")
        if isinstance(target, cst.Attribute) and target.attr.value == "shape":
            return value_shape(model, target.value, scope, depth + 1, env) or found
        return found
    if qn in ("jax.lax.fori_loop", "jax.lax.while_loop"):
        init = positional(e, 3 if qn == "jax.lax.fori_loop" else 2) or keyword(e, "init_val")
        return value_shape(model, init, scope, depth + 1, env) if init is not None else found
    if first is None:
        return found
    base = value_shape(model, first, scope, depth + 1, env)
    if qn in _SAME_SHAPE or qn in JNP_ELEMENTWISE and len(e.args) == 1:
        return base or found
    if qn in JNP_ELEMENTWISE and not any(a.keyword is not None or a.star for a in e.args):
        out = SCALAR
        for a in e.args:
            shape = value_shape(model, a.value, scope, depth + 1, env)
            if shape is None:
                if model.kind(a.value, scope) is not Kind.STATIC:
                    return found
                shape = SCALAR  # a Python number (`n` in `where(i < n // 2, i / n, ...)`)
            out = broadcast(out, shape)
        return out or found
    axis_e = keyword(e, "axis") or positional(e, 1)
    axis = static_int(model, axis_e, scope) if axis_e is not None else None
    if qn in _CUMULATIVE_AXIS:
        if axis_e is None and base is not None and base.total() is not None:
            return Shape.of_dims([base.total()])
        return base if axis is not None else found
    if qn in _AXIS_REDUCTIONS and axis is not None and keyword(e, "keepdims") is None and base is not None \
            and base.rank is not None:
        k = base.normalize_axis(axis)
        if k is None:
            return found
        return Shape.of_dims([base.size(i) for i in range(base.rank) if i != k])
    return found


def _helper_shape(model: "SemanticModel", call: cst.Call, scope: "Scope", depth: int, env: dict) -> "Shape | None":
    """A call of the module's own function: the shape its returns agree on, its parameters bound
    to the shapes of the arguments."""
    from jaxfuse_lint.model.shapes import SCALAR

    callee = model.function_named(call.func.value, scope)
    if callee is None or callee.is_lambda or not callee.returns or callee.star_params:
        return None
    inner = dict(env)
    for name in callee.params:
        arg = model.argument_for(call, callee, name)
        node = callee.param_nodes.get(name)
        where = scope
        if arg is None and node is not None and node.default is not None:
            arg, where = node.default, callee.parent or scope  # `eps=0.0` left out: the default
        if arg is not None:
            shape = value_shape(model, arg, where, depth + 1, env)
            if (shape is None or shape.rank is None) and model.kind(arg, where) is Kind.STATIC:
                shape = SCALAR  # `x.shape[0]`: a Python number at trace time
            if shape is not None:
                inner[(id(callee), name)] = shape
    shapes = [value_shape(model, r, callee, depth + 1, inner) for r in callee.returns]
    return shapes[0] if shapes and all(s is not None and s == shapes[0] for s in shapes) else None
