"""The code around a pattern, as the calibration tables describe it (core/calibration.py).

What XLA fuses around a reduction (or an FFT, a loop...) depends on where its operand comes from
and what reads its result. A rule reads those here, in the vocabulary of its table's features,
and asks the table; a form this module cannot name is "other" (the rule then knows the compiler's
behaviour is not established for it: no table has such a variant):

- `producer(expr)`: "arg" (a parameter of the traced function, as it comes from memory),
  "elementwise" (elementwise work on parameters), "stack" / "concatenate" (the small axis is
  built by `jnp.stack` (or `jnp.array([...])`, `column_stack`) / `jnp.concatenate` in this
  function), "broadcast" (it comes from a new axis: `x[:, None] * w`);
- `consumer(call)`: "returned", "epilogue" (scalar elementwise work, then returned), "broadcast_back"
  (`keepdims=True` or `r[..., None]` against an array), "reduction" (a further reduction), "matmul";
- `reader(expr)` / `name_reader(name)`: the same reading for any value (a loop's result, a grid);
  `one_read(name, assign)`: the one read a binding reaches;
- `loop(scope)`: "fori_loop" when the code runs in a lax loop body, else "none";
- `dtype_name(expr)`: the one dtype the operand has, or None.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.core.calibration import OneOf
from jaxfuse_lint.model.api import JNP_ELEMENTWISE, REDUCTION_METHODS, REDUCTIONS
from jaxfuse_lint.model.scopes import Function, Scope
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.dtypes import DType
    from jaxfuse_lint.model.semantic import LoopSite
    from jaxfuse_lint.model.shapes import Shape


class FusionContextView(ModelView, Protocol):
    def shape(self, expr: cst.CSTNode, scope: Scope) -> "Shape | None": ...

    def dtype(self, expr: cst.CSTNode, scope: Scope, x64: bool = False) -> "frozenset[DType] | None": ...

    @property
    def loop_sites(self) -> "list[LoopSite]": ...


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo)
_STACKS = frozenset({"jax.numpy.stack", "jax.numpy.column_stack", "jax.numpy.array", "jax.numpy.asarray",
                     "jax.numpy.dstack"})
_CONCATENATES = frozenset({"jax.numpy.concatenate", "jax.numpy.hstack", "jax.numpy.append"})
_MATMULS = frozenset({"jax.numpy.dot", "jax.numpy.matmul", "jax.numpy.einsum", "jax.numpy.tensordot",
                      "jax.numpy.inner"})
# Which producer decides when an operand mixes several (a stack multiplied by a parameter is a stack).
_RANK = {"stack": 0, "concatenate": 1, "broadcast": 2, "elementwise": 3, "arg": 4}
_DEPTH = 4


def producer(model: FusionContextView, expr: cst.BaseExpression, scope: Scope) -> str | OneOf:
    """The producer kind, or "other" (a matmul, a gather, a call this module does not know: a form the
    tables do not cover, which is not the same as any of the ones they do)."""
    kinds = _leaves(model, expr, scope, 0)
    if not kinds:
        return "other"
    best = min(kinds, key=_RANK.__getitem__)
    if best == "arg" and not _is_name_or_param(expr):
        return "elementwise"
    if best == "broadcast" and "arg" in kinds:
        # `x[:, None] * w` (the calibrated form: the small axis is a vector's, `x` broadcast along it) or
        # `u / s[..., None]` (the axis is the full array `u`'s: elementwise work on it). The parameters'
        # ranks tell them apart; unknown, the form is one of the two.
        ranks = {r for r in _param_ranks(model, expr, scope)}
        full = model.shape(expr, scope)
        if full is not None and full.rank is not None and None not in ranks:
            return "elementwise" if full.rank in ranks else "broadcast"
        return OneOf(("broadcast", "elementwise"))
    return best


def _param_ranks(model: FusionContextView, expr: cst.BaseExpression, scope: Scope) -> list[int | None]:
    """The ranks of the parameters read directly in `expr` (None: unknown)."""
    out: list[int | None] = []
    for node in _names_in(expr):
        found = model.bindings_at(node, scope)
        if found is None or len(found[1]) != 1 or found[1][0].kind != "param":
            continue
        shape = model.shape(node, scope)
        out.append(shape.rank if shape is not None else None)
    return out


def _names_in(expr: cst.BaseExpression):
    """The names read in an arithmetic expression, subscripts' values included (not attributes' or
    calls' function names)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, cst.Name):
            yield e
        elif isinstance(e, cst.BinaryOperation):
            stack += [e.left, e.right]
        elif isinstance(e, cst.UnaryOperation):
            stack.append(e.expression)
        elif isinstance(e, cst.Subscript):
            stack.append(e.value)
        elif isinstance(e, cst.Call):
            stack += [a.value for a in e.args]


def _is_name_or_param(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name)


def _leaves(model: FusionContextView, expr: cst.BaseExpression, scope: Scope, depth: int) -> set[str] | None:
    """The producer kinds of the array leaves of an elementwise expression; None: a leaf of
    another kind (a matmul, a gather, a call this module does not know, an attribute...)."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary)):
        return set()
    if isinstance(expr, cst.UnaryOperation):
        return _leaves(model, expr.expression, scope, depth)
    if isinstance(expr, cst.BinaryOperation):
        if not isinstance(expr.operator, _ARITHMETIC):
            return None
        left = _leaves(model, expr.left, scope, depth)
        right = _leaves(model, expr.right, scope, depth)
        if left is None or right is None:
            return None
        return (left | right | {"elementwise"}) if (left or right) else set()
    if isinstance(expr, cst.Subscript):
        inner = _leaves(model, expr.value, scope, depth)
        if inner is None:
            return None
        if _adds_axis(expr):
            return {"broadcast"}
        # A slice or an integer index (`x[i]` in a loop over steps) reads the same producer's values.
        return inner
    if isinstance(expr, cst.Call):
        qn = model.qn(expr.func, scope)
        if qn in _STACKS and qn != "jax.numpy.asarray" or qn == "jax.numpy.asarray" and _is_list(expr):
            return {"stack"}
        if qn in _CONCATENATES:
            return {"concatenate"}
        if qn is None and isinstance(expr.func, cst.Name):
            return _returned_by(model, expr.func, scope, depth)
        if qn in JNP_ELEMENTWISE and qn not in ("jax.numpy.asarray", "jax.numpy.array", "jax.numpy.where"):
            out: set[str] = set()
            for arg in expr.args:
                if arg.keyword is not None or arg.star:
                    return None
                kinds = _leaves(model, arg.value, scope, depth)
                if kinds is None:
                    return None
                out |= kinds
            return out | {"elementwise"} if out else set()
        return None
    if isinstance(expr, cst.Name):
        shape = model.shape(expr, scope)
        if shape is not None and shape.rank == 0:
            return set()  # a scalar broadcasts: it does not decide the producer
        found = model.bindings_at(expr, scope)
        if found is None:
            return None
        owner, bindings = found
        if len(bindings) != 1:
            return None
        b = bindings[0]
        if b.kind == "param":
            return {"arg"} if isinstance(owner, Function) else None
        if b.kind == "assign" and b.value is not None and b.index is None and isinstance(b.target, cst.Name):
            return _leaves(model, b.value, owner, depth + 1)
        return None
    return None


def _returned_by(model: FusionContextView, func: cst.Name, scope: Scope, depth: int) -> set[str] | None:
    """A call of the module's own function: the producer kinds of what each of its returns is,
    when they agree and come from the array builders (a `kvec_mesh(n)` returning a `jnp.stack`)."""
    fn = model.function_named(func.value, scope)
    if fn is None or not fn.returns or fn.is_lambda:
        return None
    kinds: set[str] = set()
    for value in fn.returns:
        found = _leaves(model, value, fn, depth + 1)
        if found is None or not found & {"stack", "concatenate"}:
            return None  # its parameters are not this call's arguments: only builders are followed
        kinds |= found
    return kinds


def _is_list(call: cst.Call) -> bool:
    return bool(call.args) and isinstance(call.args[0].value, (cst.List, cst.Tuple))


def consumer(model: FusionContextView, call: cst.Call, scope: Scope, keepdims: bool) -> str:
    """What reads the reduction `call`'s result (see the module docstring), or "other"."""
    node: cst.CSTNode = call
    parent = _parent(model, node)
    if keepdims:
        return "broadcast_back" if _against_array(model, parent, node, scope) else "other"
    if isinstance(parent, cst.Subscript) and _adds_axis(parent):
        return "broadcast_back" if _against_array(model, _parent(model, parent), parent, scope) else "other"
    return _reader(model, node, parent, scope, 0) or "other"


def reader(model: FusionContextView, node: cst.CSTNode, scope: Scope) -> str | None:
    """What reads the value of `node` (an expression): "returned", "epilogue" (scalar elementwise
    work, then returned), "reduction", "matmul", or None."""
    return _reader(model, node, _parent(model, node), scope, 0)


def name_reader(model: FusionContextView, name: str, assign: cst.Assign, scope: Scope) -> str | None:
    """What reads `name`, which `assign` binds (and nothing else does), at its one read."""
    return _read_of_name(model, name, assign, scope, 0)


def one_read(model: FusionContextView, name: str, assign: cst.CSTNode, scope: Scope) -> cst.Name | None:
    """The one read of `name` that the binding made by `assign` reaches, in straight-line code (the
    name may be bound elsewhere too: `x = lax.fori_loop(..., x)`); None: none, several, or unsure."""
    from jaxfuse_lint.model.fusion import reaching_binding

    if not isinstance(scope, Function):
        return None
    reads = []
    for r in model.index.reads:
        if r.scope is not scope or r.name.value != name:
            continue
        if any(a is assign for a in model.ancestors(r.name)):
            continue  # read by the assignment's own value: an earlier binding
        found = reaching_binding(model, r.name)  # type: ignore[arg-type]
        if found is None:
            return None
        if found[1].node is assign:
            reads.append(r.name)
    return reads[0] if len(reads) == 1 else None


def _reader(model: FusionContextView, node: cst.CSTNode, parent: cst.CSTNode | None, scope: Scope,
            depth: int) -> str | None:
    if depth > _DEPTH or parent is None:
        return None
    if isinstance(parent, cst.Return):
        return "returned" if depth == 0 else "epilogue"
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return _read_of_name(model, parent.targets[0].target.value, parent, scope, depth)
    if isinstance(parent, cst.BinaryOperation):
        if isinstance(parent.operator, cst.MatrixMultiply):
            return "matmul"
        if isinstance(parent.operator, _ARITHMETIC):
            other = parent.right if parent.left is node else parent.left
            shape = model.shape(other, scope)
            if isinstance(other, (cst.Integer, cst.Float)) or (shape is not None and shape.rank == 0):
                return _reader(model, parent, _parent(model, parent), scope, depth + 1)
            if isinstance(parent.operator, (cst.Add, cst.Subtract)) and _is_carry(model, other, scope) \
                    and isinstance(_parent(model, parent), cst.Return):
                return _reader(model, parent, _parent(model, parent), scope, depth)  # accumulated into the carry
        return None
    if isinstance(parent, cst.UnaryOperation):
        return _reader(model, parent, _parent(model, parent), scope, depth)
    if isinstance(parent, cst.Arg):
        call = _parent(model, parent)
        if not isinstance(call, cst.Call):
            return None
        qn = model.qn(call.func, scope)
        if qn in REDUCTIONS:
            return "reduction"
        if qn in _MATMULS:
            return "matmul"
        if qn in JNP_ELEMENTWISE and len(call.args) == 1:
            return _reader(model, call, _parent(model, call), scope, depth + 1)
        return None
    if isinstance(parent, cst.Attribute):
        outer = _parent(model, parent)
        if isinstance(outer, cst.Call) and outer.func is parent:
            if parent.attr.value in REDUCTION_METHODS:
                return "reduction"
            if parent.attr.value == "reshape":
                after = _parent(model, outer)
                if isinstance(after, cst.BinaryOperation) and isinstance(after.operator, cst.MatrixMultiply):
                    return "matmul"
        return None
    return None


def _is_carry(model: FusionContextView, expr: cst.BaseExpression, scope: Scope) -> bool:
    """A parameter of the lax loop body `scope` (the carry a body adds its result into)."""
    if not isinstance(expr, cst.Name) or not isinstance(scope, Function) or loop(model, scope) == "none":
        return False
    return expr.value in scope.params


def _read_of_name(model: FusionContextView, name: str, assign: cst.Assign, scope: Scope, depth: int) -> str | None:
    """The one read of a name assigned the result: what reads it there."""
    if not isinstance(scope, Function):
        return None
    reads = [r for r in model.index.reads if r.scope is scope and r.name.value == name]
    if len(reads) != 1 or len(scope.bindings.get(name, ())) != 1:
        return None
    read = reads[0].name
    return _reader(model, read, _parent(model, read), scope, depth)


def _parent(model: FusionContextView, node: cst.CSTNode) -> cst.CSTNode | None:
    parent = model.parent(node)
    while isinstance(parent, (cst.Expr,)):
        parent = model.parent(parent)
    return parent


def _adds_axis(sub: cst.Subscript) -> bool:
    return any(isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name)
               and e.slice.value.value == "None" for e in sub.slice)


def _against_array(model: FusionContextView, parent: cst.CSTNode | None, node: cst.CSTNode, scope: Scope) -> bool:
    """Combined elementwise with an array (`keepdims=True` keeps the axis for nothing else): any
    operand but a number or a value known to be 0-d."""
    if not isinstance(parent, cst.BinaryOperation) or not isinstance(parent.operator, _ARITHMETIC):
        return False
    other = parent.right if parent.left is node else parent.left
    if isinstance(other, (cst.Integer, cst.Float, cst.Imaginary)):
        return False
    shape = model.shape(other, scope)
    return shape is None or shape.rank is None or shape.rank >= 1


def loop(model: FusionContextView, scope: Scope) -> str:
    """"fori_loop" when `scope` (or a function it is nested in) is the body of a lax loop."""
    bodies = {id(fn) for site in model.loop_sites for fn in site.bodies}
    s: Scope | None = scope
    while isinstance(s, Function):
        if id(s) in bodies:
            return "fori_loop"
        s = s.parent
    return "none"


def dtype_name(model: FusionContextView, expr: cst.BaseExpression, scope: Scope) -> str | None:
    fact = model.dtype(expr, scope)
    if fact is None:
        return None
    names = {d.name for d in fact}
    return next(iter(names)) if len(names) == 1 else None


def rows(shape: "Shape | None", axis: int | None) -> int | None:
    """The number of elements of `shape` outside `axis` (None: the only axis), when all are known."""
    if shape is None or shape.rank is None:
        return None
    total = 1
    for i in range(shape.rank):
        if axis is not None and axis % shape.rank == i:
            continue
        size = shape.size(i)
        if size is None:
            return None
        total *= size
    return total
