"""An FFT over leading axes, as JF104's calibration table describes it (calibrate/jf104.py).

What XLA makes of the transposes around such an FFT depends on the transform, on where the
array comes from and on what reads the result. A rule reads those here, in the vocabulary of
the table's features; a form the table does not know gets a name of its own, "other" or the
function's (the rule then finds no calibrated variant for it):

- `transform(call)`: "fftn" (a complex transform: `fftn`, `ifftn`, `fft2`, `ifft2`), "rfftn"
  (`rfftn`/`rfft2` whose result is not transformed back here), "rfftn_irfftn" (an `rfftn` whose
  result reaches an `irfftn` through names and elementwise arithmetic, or that `irfftn`), else
  the function's short name (`fft`, `irfftn` of another array...);
- `producer(call)`: "arg" (a parameter as it comes) or "stack" (a `jnp.stack`/`jnp.array` of
  components built here), through the round trip's `rfftn` for an `irfftn`; the producer kinds of
  model/fusion_context.py otherwise ("elementwise", "concatenate", "other"...);
- `consumer(call)`: what reads the result (the round trip's, for its `rfftn`): "returned";
  "elementwise" (elementwise work, then returned); "componentwise" (a reduction over the trailing
  component axis, `jnp.sum(..., axis=-1)`); "other" otherwise.
"""
from __future__ import annotations

from typing import Protocol

import libcst as cst

from jaxfuse_lint.model import fusion_context
from jaxfuse_lint.model.api import JNP_ELEMENTWISE, REDUCTION_METHODS, REDUCTIONS
from jaxfuse_lint.model.fusion import reaching_value
from jaxfuse_lint.model.scopes import Scope
from jaxfuse_lint.model.traced import keyword, positional

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power)
_COMPLEX = frozenset(f"jax.numpy.fft.{n}" for n in ("fftn", "ifftn", "fft2", "ifft2"))
_FORWARD = frozenset({"jax.numpy.fft.rfftn", "jax.numpy.fft.rfft2"})
_INVERSE = frozenset({"jax.numpy.fft.irfftn", "jax.numpy.fft.irfft2"})
_DEPTH = 6


class FftContextView(fusion_context.FusionContextView, Protocol):
    pass


def operand(call: cst.Call) -> cst.BaseExpression | None:
    return positional(call, 0) or keyword(call, "a") or keyword(call, "x")


def transform(model: FftContextView, call: cst.Call, qn: str, scope: Scope) -> str:
    if qn in _COMPLEX:
        return "fftn"
    if qn in _FORWARD:
        return "rfftn_irfftn" if _inverse_of(model, call, scope) is not None else "rfftn"
    if qn in _INVERSE:
        op = operand(call)
        return "rfftn_irfftn" if op is not None and _forward_of(model, op, scope, 0) is not None else "irfftn"
    return qn.rsplit(".", 1)[-1]


def forward_of(model: FftContextView, call: cst.Call, scope: Scope) -> cst.Call | None:
    """The `rfftn` whose result the `irfftn` `call` transforms back, when it is found."""
    op = operand(call)
    return _forward_of(model, op, scope, 0) if op is not None else None


def producer(model: FftContextView, call: cst.Call, qn: str, scope: Scope) -> str:
    if qn in _INVERSE:
        forward = forward_of(model, call, scope)
        if forward is None:
            return "other"
        call = forward
    op = operand(call)
    return fusion_context.producer(model, op, scope) if op is not None else "other"


def consumer(model: FftContextView, call: cst.Call, qn: str, scope: Scope) -> str:
    if qn in _FORWARD:
        inverse = _inverse_of(model, call, scope)
        if inverse is not None:
            call = inverse
    return _read(model, call, scope, 0) or "other"


def _parent(model: FftContextView, node: cst.CSTNode) -> cst.CSTNode | None:
    parent = model.parent(node)
    while isinstance(parent, cst.Expr):
        parent = model.parent(parent)
    return parent


def _read(model: FftContextView, node: cst.CSTNode, scope: Scope, depth: int) -> str | None:
    """What reads the value of `node`: through names read once, elementwise arithmetic and
    one-argument elementwise functions."""
    if depth > _DEPTH:
        return None
    parent = _parent(model, node)
    if isinstance(parent, cst.Return):
        return "returned" if depth == 0 else "elementwise"
    if isinstance(parent, cst.UnaryOperation) or \
            isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARITHMETIC):
        return _read(model, parent, scope, depth + 1)
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        read = fusion_context.one_read(model, parent.targets[0].target.value, parent, scope)
        return _read(model, read, scope, depth) if read is not None else None
    if isinstance(parent, cst.Arg):
        call = _parent(model, parent)
        if not isinstance(call, cst.Call):
            return None
        qn = model.qn(call.func, scope)
        if qn in REDUCTIONS:
            return "componentwise" if _last_axis(keyword(call, "axis") or positional(call, 1)) else None
        if qn in JNP_ELEMENTWISE and len(call.args) == 1:
            return _read(model, call, scope, depth + 1)
        return None
    if isinstance(parent, cst.Attribute) and parent.attr.value in REDUCTION_METHODS:
        outer = _parent(model, parent)
        if isinstance(outer, cst.Call) and outer.func is parent:
            return "componentwise" if _last_axis(keyword(outer, "axis") or positional(outer, 0)) else None
    return None


def _last_axis(axis: cst.BaseExpression | None) -> bool:
    return isinstance(axis, cst.UnaryOperation) and isinstance(axis.operator, cst.Minus) and \
        isinstance(axis.expression, cst.Integer) and axis.expression.value == "1"


def _inverse_of(model: FftContextView, call: cst.Call, scope: Scope) -> cst.Call | None:
    """The `irfftn` that reads this `rfftn`'s result (through names and elementwise arithmetic)."""
    node: cst.CSTNode = call
    for _ in range(_DEPTH):
        parent = _parent(model, node)
        if isinstance(parent, cst.Arg):
            outer = _parent(model, parent)
            if isinstance(outer, cst.Call) and model.qn(outer.func, scope) in _INVERSE and operand(outer) is node:
                return outer
            return None
        if isinstance(parent, (cst.UnaryOperation, cst.BinaryOperation)):
            node = parent
            continue
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            read = fusion_context.one_read(model, parent.targets[0].target.value, parent, scope)
            if read is None:
                return None
            node = read
            continue
        return None
    return None


def _forward_of(model: FftContextView, expr: cst.BaseExpression, scope: Scope, depth: int) -> cst.Call | None:
    """The `rfftn` whose result this `irfftn` operand is (through names and elementwise arithmetic)."""
    if depth > _DEPTH:
        return None
    if isinstance(expr, cst.Call):
        return expr if model.qn(expr.func, scope) in _FORWARD else None
    if isinstance(expr, cst.Name):
        found = reaching_value(model, expr)  # type: ignore[arg-type]
        return _forward_of(model, found[0], found[1], depth + 1) if found is not None else None
    if isinstance(expr, cst.UnaryOperation):
        return _forward_of(model, expr.expression, scope, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
        return _forward_of(model, expr.left, scope, depth + 1) or _forward_of(model, expr.right, scope, depth + 1)
    return None
