"""Where a known axis size comes from: the proof behind a `size` premise (model/premises.py).

The shape analysis (model/shape_analysis.py) says that axis -1 of `v` has size 3; a finding that
rests on it says how that is known: "a `jnp.stack` of 3 arrays on line 17", "`assert x.shape[-1] ==
3` on line 4", "the jaxtyping annotation `Float[Array, "n 3"]` of `x` on line 2", "every call of
`helper` passes it (line 9)", "every recorded call of `f` (profile.json)". `axis_origin` follows the
size back through the expression the way the analysis found it — names to the bindings that reach
them (and the statements that assert or unpack them), arithmetic to the operand that carries the
axis, elementwise calls to their array argument, the module's own functions to what they return —
down to the construct that states it:

    stack-count        `jnp.stack` / `jnp.array` / `column_stack` of N items
    concatenate-count  `jnp.concatenate` (`hstack`, `append`) of parts of known sizes
    literal-shape      a shape written in the call (`zeros((n, 3))`, `reshape(-1, 2)`, a random draw's shape)
    literal-size       a count written in the call (`arange(3)`, `linspace(0, 1, 5)`, `eye(3)`)
    slice              a slice of literal bounds (`x[..., :3]`)
    assert             `assert x.shape[-1] == 3` (or `x.shape == (n, 3)`) in the function's body
    unpacking          `a, b, c = v` (v's leading axis is 3; `a, b = p.T`: p's last)
    jaxtyping          a parameter's jaxtyping annotation
    call-site          the shape every call of a nested function passes
    profile            a recorded run's shapes (`check --profile`): the premise is RECORDED
    shape-analysis     anything else the analysis reads (the construct is cited by its line)

Nothing here decides a size: where the analysis knows none, there is no origin.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import JNP_ELEMENTWISE
from jaxfuse_lint.model.premises import LineOf, MessagePart
from jaxfuse_lint.model.source_text import code_of

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.semantic import SemanticModel

_MAX_DEPTH = 16
_STACKS = frozenset({"stack", "column_stack", "array", "asarray", "dstack", "vstack", "hstack_1d"})
_CONCATENATES = frozenset({"concatenate", "hstack", "append", "vstack"})
_COUNTS = frozenset({"arange", "linspace", "logspace", "geomspace", "eye", "identity", "fft.fftfreq",
                     "fft.rfftfreq", "indices", "tri"})
_SHAPED = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like", "reshape", "broadcast_to",
                     "tile", "repeat"})
_SAME_SHAPE_METHODS = frozenset({"astype", "copy", "conj", "clip", "round", "real", "imag"})


@dataclass(frozen=True)
class SizeOrigin:
    """How a size is known: the named inference and where (text and lines); `recorded`: the profile
    a recorded run's shapes came from (the premise is then RECORDED, not PROVEN)."""

    inference: str
    parts: tuple[MessagePart, ...]
    recorded: str = ""


def _line(node: cst.CSTNode, model: "SemanticModel", what: str) -> tuple[MessagePart, ...]:
    return (what, " on line ", LineOf(node))


def _short(qn: str | None) -> str | None:
    for prefix in ("jax.numpy.", "numpy."):
        if qn is not None and qn.startswith(prefix):
            return qn[len(prefix):]
    return None


def axis_origin(model: "SemanticModel", expr: cst.BaseExpression, scope: "Scope", axis: int,
                depth: int = 0) -> SizeOrigin | None:
    """How the size of `axis` of `expr` is known, or None where the shape analysis knows no size."""
    shape = model.shape(expr, scope)
    n = shape.size(axis) if shape is not None else None
    if n is None or depth > _MAX_DEPTH:
        return None
    if shape is not None and shape.rank is not None and axis >= 0:
        axis -= shape.rank  # from the right from here on: operands broadcast right-aligned
    found = _follow(model, expr, scope, axis, n, depth)
    if found is not None:
        return found
    return SizeOrigin("shape-analysis", _line(expr, model, f"`{code_of(model, expr, 40)}`"))


def _carries(model: "SemanticModel", e: cst.BaseExpression, scope: "Scope", axis: int, n: int) -> bool:
    s = model.shape(e, scope)
    if s is None or (axis < 0 and s.rank is not None and -axis > s.rank):
        return False
    return s.size(axis) == n


def _follow(model, e, scope, axis: int, n: int, depth: int) -> SizeOrigin | None:
    if isinstance(e, cst.Name):
        return _name(model, e, scope, axis, n, depth)
    if isinstance(e, cst.BinaryOperation):
        for side in (e.left, e.right):
            if _carries(model, side, scope, axis, n):
                return axis_origin(model, side, scope, axis, depth + 1)
        return None
    if isinstance(e, cst.UnaryOperation):
        return axis_origin(model, e.expression, scope, axis, depth + 1)
    if isinstance(e, cst.Attribute) and e.attr.value in ("real", "imag"):
        return axis_origin(model, e.value, scope, axis, depth + 1)
    if isinstance(e, cst.Subscript):
        return _subscript(model, e, scope, axis, n, depth)
    if isinstance(e, cst.Call):
        return _call(model, e, scope, axis, n, depth)
    return None


def _subscript(model, e: cst.Subscript, scope, axis: int, n: int, depth: int) -> SizeOrigin | None:
    for el in e.slice:
        s = el.slice
        if isinstance(s, cst.Slice) and (s.lower is not None or s.upper is not None):
            lo = model.shapes.static_int(s.lower, scope) if s.lower is not None else 0
            hi = model.shapes.static_int(s.upper, scope) if s.upper is not None else None
            size = (hi - (lo or 0)) if hi is not None and hi > 0 and lo is not None and lo >= 0 else (
                -lo if hi is None and lo is not None and lo < 0 else None)
            if size == n:
                return SizeOrigin("slice", _line(e, model, f"the slice `{code_of(model, e, 40)}`"))
    # Trailing full slices, `None` and `...` keep the base's last axes in place: `x[:, None]`, `x[..., :]`.
    simple = all(isinstance(el.slice, cst.Slice) and el.slice.lower is None and el.slice.upper is None
                 and el.slice.step is None for el in e.slice[1:]) if axis < 0 else False
    if simple and len(e.slice) >= -axis and _carries(model, e.value, scope, axis, n):
        return axis_origin(model, e.value, scope, axis, depth + 1)
    return None


def _call(model, e: cst.Call, scope, axis: int, n: int, depth: int) -> SizeOrigin | None:
    qn = model.qn(e.func, scope)
    short = _short(qn)
    if short is None and isinstance(e.func, cst.Attribute) and qn is None:
        method = e.func.attr.value
        if method in _SAME_SHAPE_METHODS and _carries(model, e.func.value, scope, axis, n):
            return axis_origin(model, e.func.value, scope, axis, depth + 1)
        if method == "reshape":
            return SizeOrigin("literal-shape", _line(e, model, f"the shape in `{code_of(model, e, 40)}`"))
        return None
    if short is None:
        callee = model.function_named(e.func.value, scope) if isinstance(e.func, cst.Name) else None
        if callee is not None and callee.returns:
            for value in callee.returns:
                if _carries(model, value, callee, axis, n):
                    inner = axis_origin(model, value, callee, axis, depth + 1)
                    if inner is not None:
                        return SizeOrigin(inner.inference, (*inner.parts, f", returned by `{callee.name}`"),
                                          inner.recorded)
        return None
    if short in _STACKS:
        items = e.args[0].value if e.args else None
        if isinstance(items, (cst.List, cst.Tuple)) and len(items.elements) == n:
            what = {"array": "`jnp.array`", "asarray": "`jnp.asarray`"}.get(short, f"`jnp.{short}`")
            if qn is not None and qn.startswith("numpy."):
                what = what.replace("jnp.", "np.")
            return SizeOrigin("stack-count", _line(e, model, f"a {what} of {n} arrays"))
        if isinstance(items, (cst.List, cst.Tuple)):
            for el in items.elements:
                if _carries(model, el.value, scope, axis, n):
                    return axis_origin(model, el.value, scope, axis, depth + 1)
        return None
    if short in _CONCATENATES:
        return SizeOrigin("concatenate-count", _line(e, model, f"the `{code_of(model, e.func, 20)}` of "
                                                               f"`{code_of(model, e, 40)}`"))
    if short in _COUNTS:
        return SizeOrigin("literal-size", _line(e, model, f"`{code_of(model, e, 40)}`"))
    if short in _SHAPED or short.startswith("random."):
        return SizeOrigin("literal-shape", _line(e, model, f"the shape in `{code_of(model, e, 40)}`"))
    if qn in JNP_ELEMENTWISE or short in ("where", "clip", "abs", "sqrt", "exp", "log", "sin", "cos", "tanh"):
        for a in e.args:
            if a.keyword is None and not a.star and _carries(model, a.value, scope, axis, n):
                return axis_origin(model, a.value, scope, axis, depth + 1)
    return None


def _name(model, e: cst.Name, scope, axis: int, n: int, depth: int) -> SizeOrigin | None:
    from jaxfuse_lint.model.scopes import Function

    found = model.bindings_at(e, scope)
    if found is None:
        return None
    owner, bindings = found
    for b in bindings:
        origin = None
        if b.kind == "param" and isinstance(owner, Function):
            origin = _param(model, owner, b.name, axis, n)
        elif b.kind in ("assign", "annassign", "walrus") and b.value is not None and b.index is None:
            if _carries(model, b.value, owner, axis, n):
                origin = axis_origin(model, b.value, owner, axis, depth + 1)
        elif b.kind == "assign" and b.index is not None and isinstance(b.value, (cst.Tuple, cst.List)) \
                and b.index < len(b.value.elements):
            item = b.value.elements[b.index].value
            if _carries(model, item, owner, axis, n):
                origin = axis_origin(model, item, owner, axis, depth + 1)
        if origin is not None:
            return origin
    if isinstance(owner, Function):
        return _statement_fact(model, owner, e, axis, n)
    return None


def _param(model, fn, name: str, axis: int, n: int) -> SizeOrigin | None:
    p = fn.param_nodes.get(name)
    if p is not None and p.annotation is not None:
        declared = model.shapes.annotation_shape(p.annotation.annotation, fn)
        if declared is not None and _has(declared, axis, n):
            return SizeOrigin("jaxtyping", _line(p, model, f"the jaxtyping annotation "
                                                           f"`{code_of(model, p.annotation.annotation, 40)}` of `{name}`"))
    via_calls = model.shapes.call_site_shape(fn, name)
    if via_calls is not None and _has(via_calls[0], axis, n):
        first = via_calls[1][0]
        more = f" (and {len(via_calls[1]) - 1} more)" if len(via_calls[1]) > 1 else ""
        return SizeOrigin("call-site", (f"every call of `{fn.name}` passes it: `{code_of(model, first, 40)}` on line ",
                                        LineOf(first), more))
    recorded = model.runtime_param_shape(fn, name)
    if recorded is not None and _has(recorded, axis, n):
        runtime = getattr(model, "runtime", None)
        path = getattr(runtime, "profile_path", None) or "a profile"
        return SizeOrigin("profile", (f"every recorded call of `{fn.name}` ({path})",), recorded=str(path))
    return None


def _has(shape, axis: int, n: int) -> bool:
    if shape.size(axis) == n:
        return True
    return shape.rank is not None and axis < 0 and shape.size(shape.rank + axis) == n


def _statement_fact(model, fn, e: cst.Name, axis: int, n: int) -> SizeOrigin | None:
    """The assert or unpacking in fn's body that states the size of the name's value."""
    from jaxfuse_lint.model.declared_shapes import _assert_facts

    for a in fn.asserts:
        for name_node, shape in _assert_facts(a.test):
            if name_node.value == e.value and (_has(shape, axis, n) or shape.size(axis) == n):
                return SizeOrigin("assert", _line(a, model, f"`assert {code_of(model, a.test, 40)}`"))
    for bindings in fn.bindings.values():
        for b in bindings:
            node = b.node
            if b.kind != "assign" or b.index is None or not isinstance(node, cst.Assign) or len(node.targets) != 1:
                continue
            target, value = node.targets[0].target, node.value
            if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != n:
                continue
            transposed = isinstance(value, cst.Attribute) and value.attr.value == "T"
            base = value.value if transposed else value
            if isinstance(base, cst.Name) and base.value == e.value:
                return SizeOrigin("unpacking", _line(node, model, f"the unpacking `{code_of(model, node, 40)}`"))
    return None


def axes_origin(model: "SemanticModel", expr: cst.BaseExpression, scope: "Scope",
                axes: list[int]) -> SizeOrigin | None:
    """How the sizes of several axes are known (a number of rows: every axis but the reduced one):
    the origins of each, each construct cited once; None unless every axis has one."""
    origins = []
    for axis in axes:
        found = axis_origin(model, expr, scope, axis)
        if found is None:
            return None
        if found not in origins:
            origins.append(found)
    if not origins:
        return None
    if len(origins) == 1:
        return origins[0]
    parts: list[MessagePart] = []
    for o in origins:
        parts += ["; " if parts else "", *o.parts]
    inferences = {o.inference for o in origins}
    recorded = next((o.recorded for o in origins if o.recorded), "")
    return SizeOrigin(inferences.pop() if len(inferences) == 1 else "+".join(sorted(inferences)), tuple(parts),
                      recorded if all(o.recorded for o in origins) else "")


__all__ = ["SizeOrigin", "axes_origin", "axis_origin"]
