"""A coordinate grid from `jnp.meshgrid`, as JF102's calibration table describes it (calibrate/jf102.py).

What XLA makes of the grid depends on its size and on what reads it. A rule reads those here, in
the vocabulary of the table's features; a length this module cannot establish is None (the table is
asked about every size), and a consumer of another kind than the calibrated ones is "other":

- `vector_length(call)`: the length of a 1-D coordinate vector (`fftfreq(n)`: n; `rfftfreq(n)`:
  n // 2 + 1; `linspace(a, b, num)`: num, 50 when not given), from literals, names bound once to
  them and `x.shape[i]` / `len(x)` of arrays of known shape;
- `consumer(meshgrid call)`: what reads the grid, followed through elementwise arithmetic,
  names and one-argument elementwise functions: "returned" (it is returned), "reduction" (a
  reduction reads it), "fft_filter" (it multiplies an FFT's output, as a filter in k-space);
  "other" where the grid's reads end elsewhere, or in more than one of these.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import JNP_ELEMENTWISE, REDUCTION_METHODS, REDUCTIONS
from jaxfuse_lint.model.fusion import FFT_FUNCTIONS, reaching_binding, reaching_value, static_int
from jaxfuse_lint.model.scopes import Function, Scope
from jaxfuse_lint.model.traced import keyword, positional
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.shapes import Shape


class GridContextView(ModelView, Protocol):
    def shape(self, expr: cst.CSTNode, scope: Scope) -> "Shape | None": ...


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.FloorDivide, cst.Modulo)
_DEPTH = 8


def length(model: GridContextView, expr: cst.BaseExpression | None, scope: Scope) -> int | None:
    """An integer known before tracing, `x.shape[i]` and `len(x)` of arrays of known shape included."""
    if expr is None:
        return None
    n = static_int(model, expr, scope)  # type: ignore[arg-type]
    if n is not None:
        return n
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape" \
            and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        index = static_int(model, expr.slice[0].slice.value, scope)  # type: ignore[arg-type]
        shape = model.shape(expr.value.value, scope)
        if index is not None and shape is not None and shape.rank is not None and -shape.rank <= index < shape.rank:
            return shape.size(index)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len" and expr.args:
        shape = model.shape(expr.args[0].value, scope)
        return shape.size(0) if shape is not None and shape.rank else None
    return None


def vector_length(model: GridContextView, kind: str, call: cst.Call, scope: Scope) -> int | None:
    if kind in ("fftfreq", "rfftfreq"):
        n = length(model, positional(call, 0) or keyword(call, "n"), scope)
        return None if n is None else n if kind == "fftfreq" else n // 2 + 1
    if kind in ("linspace", "logspace", "geomspace"):
        num = positional(call, 2) or keyword(call, "num")
        return 50 if num is None else length(model, num, scope)
    return None


def consumer(model: GridContextView, call: cst.Call, scope: Scope) -> str:
    """What reads the grid that the meshgrid `call` builds (see the module docstring)."""
    assign = model.parent(call)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or not isinstance(scope, Function):
        return "other"
    target = assign.targets[0].target
    names = [el.value for el in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
    if not all(isinstance(n, cst.Name) for n in names):
        return "other"
    kinds: set[str] = set()
    for name in names:
        found = _name_readers(model, name.value, assign, scope, 0)
        if found is None:
            return "other"
        kinds |= found
    return next(iter(kinds)) if len(kinds) == 1 else "other"


def _name_readers(model: GridContextView, name: str, assign: cst.CSTNode, scope: Scope, depth: int) -> set[str] | None:
    """The consumers of every read of `name` that the binding made by `assign` reaches."""
    out: set[str] = set()
    for read in model.index.reads:
        if read.scope is not scope or read.name.value != name:
            continue
        if any(a is assign for a in model.ancestors(read.name)):
            continue  # read by the assignment's own value: an earlier binding (the 1-D vector)
        found = reaching_binding(model, read.name)  # type: ignore[arg-type]
        if found is None:
            return None
        if found[1].node is not assign:
            continue  # reads another binding of the name (the 1-D vector the meshgrid reads)
        kinds = _climb(model, read.name, scope, depth + 1)
        if kinds is None:
            return None
        out |= kinds
    return out or None


def _parent(model: GridContextView, node: cst.CSTNode) -> cst.CSTNode | None:
    parent = model.parent(node)
    while isinstance(parent, cst.Expr):
        parent = model.parent(parent)
    return parent


def _climb(model: GridContextView, node: cst.CSTNode, scope: Scope, depth: int) -> set[str] | None:
    if depth > _DEPTH:
        return None
    parent = _parent(model, node)
    if isinstance(parent, cst.Return):
        return {"returned"}
    if isinstance(parent, cst.UnaryOperation):
        return _climb(model, parent, scope, depth + 1)
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARITHMETIC):
        other = parent.right if parent.left is node else parent.left
        if _fft_output(model, other, scope):
            return {"fft_filter"}
        return _climb(model, parent, scope, depth + 1)
    if isinstance(parent, cst.AugAssign) and parent.value is node and isinstance(parent.operator, cst.MultiplyAssign):
        return {"fft_filter"} if _fft_output(model, parent.target, scope) else None
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return _name_readers(model, parent.targets[0].target.value, parent, scope, depth)
    if isinstance(parent, cst.Arg):
        call = _parent(model, parent)
        if not isinstance(call, cst.Call):
            return None
        qn = model.qn(call.func, scope)
        if qn in REDUCTIONS:
            return {"reduction"}
        if qn in JNP_ELEMENTWISE and len(call.args) == 1:
            return _climb(model, call, scope, depth + 1)
        return None
    if isinstance(parent, cst.Attribute):
        outer = _parent(model, parent)
        if isinstance(outer, cst.Call) and outer.func is parent and parent.attr.value in REDUCTION_METHODS:
            return {"reduction"}
    return None


def _fft_output(model: GridContextView, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """An FFT's result: the call itself, or a name bound to one."""
    if depth > 3:
        return False
    if isinstance(expr, cst.Call):
        return model.qn(expr.func, scope) in FFT_FUNCTIONS
    if isinstance(expr, cst.Name):
        found = reaching_value(model, expr)  # type: ignore[arg-type]
        return found is not None and _fft_output(model, found[0], found[1], depth + 1)
    return False
