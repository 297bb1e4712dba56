"""A short lax loop, as JF103's calibration table describes it (calibrate/jf103.py).

What XLA makes of an unrolled loop depends on the work of its body and on the code around it.
A rule reads those here, in the vocabulary of the table's features; a value this module cannot
establish (a carry of undeclared shape) is None, and the table is asked about every value it may
take; code around the loop of another kind than the calibrated ones is "other" (no variant has it):

- `body_kind(bodies)`: the heaviest work the body does: "shift" (data moved between elements:
  `jnp.roll`, shifted or strided slices `v[1:]`, `v[::-1]`, concatenation and stacking, padding,
  flips and transposes, an `.at[...]` update of a static window: no calibrated variant has it, so
  a body with it is outside the table's vocabulary whatever else it does), "matmul" (`@`, `dot`,
  `einsum`...), "scatter" (`x.at[i].set/add/...` with a traced index), "reduction" (`sum`, `mean`,
  `max`...), "gather" (indexing with a traced index: `c[perm]`, `xs[i]`, `jnp.take`), else
  "elementwise"; None for a body this module cannot classify (an FFT, a nested loop, a call it
  cannot see into, a write to an object): such a loop is not the pattern;
- `carry(call)`: the loop's initial carry (`init_val` of `fori_loop`, `init` of `scan`);
- `context(call)`: "alone" (lax compiles the loop by itself: the enclosing code is not traced, or
  the carry is a parameter as it comes and the result is returned as it is), "around"
  (elementwise work on parameters makes the carry, and/or elementwise work reads the result before
  it is returned), "other" otherwise (the result passed to a call, a reduction, kept in a tuple...).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model import fusion_context
from jaxfuse_lint.model.api import REDUCTION_METHODS, REDUCTIONS
from jaxfuse_lint.model.fusion import CONTRACTIONS, cheap_call
from jaxfuse_lint.model.scopes import Function, Scope, walk
from jaxfuse_lint.model.traced import keyword, positional
from jaxfuse_lint.model.values import Kind
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.dtypes import DType
    from jaxfuse_lint.model.semantic import LoopSite
    from jaxfuse_lint.model.shapes import Shape


class LoopContextView(ModelView, Protocol):
    def shape(self, expr: cst.CSTNode, scope: Scope) -> "Shape | None": ...

    def dtype(self, expr: cst.CSTNode, scope: Scope, x64: bool = False) -> "frozenset[DType] | None": ...

    def kind(self, expr: cst.CSTNode, scope: Scope) -> Kind: ...

    def is_traced(self, fn: Function | None) -> bool: ...

    @property
    def loop_sites(self) -> "list[LoopSite]": ...


# The order of weight: a body with a matmul and a gather is calibrated as a matmul body. "shift" is
# none of the calibrated bodies (calibrate/jf103.py): a body with it is outside the table, first.
KINDS = ("shift", "matmul", "scatter", "reduction", "gather", "elementwise")
_MATMULS = CONTRACTIONS - {"jax.numpy.convolve", "jax.numpy.correlate", "jax.numpy.kron"}
_GATHERS = frozenset({"jax.numpy.take", "jax.numpy.take_along_axis", "jax.lax.dynamic_slice",
                      "jax.lax.dynamic_index_in_dim", "jax.lax.dynamic_slice_in_dim", "jax.lax.gather"})
# Data moved between elements (XLA: slices, concatenates, pads, reverses, transposes, update slices):
# `fusion.cheap_call` accepts them as fusible, but no calibrated body has them.
_SHIFTS = frozenset({"jax.numpy." + n for n in (
    "roll rollaxis concatenate concat hstack vstack dstack column_stack row_stack stack append pad flip fliplr "
    "flipud rot90 transpose permute_dims swapaxes moveaxis matrix_transpose diff ediff1d gradient tile repeat "
    "insert delete").split()} | {"jax.lax." + n for n in (
        "pad concatenate slice slice_in_dim rev transpose dynamic_update_slice dynamic_update_index_in_dim "
        "dynamic_update_slice_in_dim").split()})
_SHIFT_METHODS = frozenset({"transpose", "swapaxes"})
_AT_UPDATES = frozenset("set add multiply mul divide min max apply power".split())
_DEPTH = 4


def body_kind(model: LoopContextView, bodies: list[Function]) -> str | None:
    kinds: set[str] = set()
    for fn in bodies:
        found = _kinds(model, fn, 0, set())
        if found is None:
            return None
        kinds |= found
    return next((k for k in KINDS if k in kinds), "elementwise")


def _kinds(model: LoopContextView, fn: Function, depth: int, seen: set[int]) -> set[str] | None:
    if id(fn) in seen:
        return set()
    if depth > _DEPTH:
        return None
    seen.add(id(fn))
    out: set[str] = set()
    for n in walk(fn.node.body):
        if isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.MatrixMultiply):
            out.add("matmul")
        elif isinstance(n, (cst.For, cst.While)):
            return None  # a Python loop unrolls into an unknown amount of work
        elif isinstance(n, (cst.AssignTarget, cst.AugAssign)) and isinstance(n.target, (cst.Subscript, cst.Attribute)):
            return None  # writes to a mutable ref or object: state, not dataflow
        elif isinstance(n, cst.Subscript) and _gathers(model, n):
            out.add("gather")
        elif isinstance(n, cst.Subscript) and _shifted(n):
            out.add("shift")
        elif isinstance(n, cst.Attribute) and n.attr.value in ("T", "mT"):
            out.add("shift")  # a transpose
        elif isinstance(n, cst.Call):
            kind = _call_kind(model, n, depth, seen)
            if kind is None:
                return None
            out |= kind
    return out


def _call_kind(model: LoopContextView, call: cst.Call, depth: int, seen: set[int]) -> set[str] | None:
    scope = model.scope_of(call)
    qn = model.qn(call.func, scope)
    if qn in REDUCTIONS:
        return {"reduction"}
    if qn in _MATMULS:
        return {"matmul"}
    if qn in _GATHERS:
        return {"gather"}
    if qn in _SHIFTS:
        return {"shift"}
    func = call.func
    if qn is None and isinstance(func, cst.Attribute):
        attr = func.attr.value
        if attr in REDUCTION_METHODS:
            return {"reduction"}
        if attr == "dot":
            return {"matmul"}
        if attr in _SHIFT_METHODS:
            return {"shift"}
        index = func.value if isinstance(func.value, cst.Subscript) else None
        at = index.value if index is not None else None
        if isinstance(at, cst.Attribute) and at.attr.value == "at":
            if attr not in _AT_UPDATES and attr != "get":
                return None
            if not _traced_index(model, index):  # type: ignore[arg-type]
                return {"shift"}  # a static window (`v.at[1:-1].set(...)`): an update slice, not a scatter
            return {"scatter"} if attr in _AT_UPDATES else {"gather"}
    if qn is None and isinstance(func, cst.Name):
        callee = model.function_named(func.value, scope)
        if callee is not None:
            return _kinds(model, callee, depth + 1, seen)
    return set() if cheap_call(model, call, scope) else None  # type: ignore[arg-type]


def _gathers(model: LoopContextView, sub: cst.Subscript) -> bool:
    """Indexing with a traced index (`c[perm]`, `xs[i]`); not the index of an `.at[...]` update."""
    if isinstance(sub.value, cst.Attribute) and sub.value.attr.value == "at":
        return False
    scope = model.scope_of(sub)
    for element in sub.slice:
        if not isinstance(element.slice, cst.Index):
            continue
        value = element.slice.value
        if isinstance(value, (cst.Integer, cst.Ellipsis)) or isinstance(value, cst.Name) and value.value == "None":
            continue
        if model.kind(value, scope) is not Kind.STATIC:
            return True
    return False


def _traced_index(model: LoopContextView, sub: cst.Subscript) -> bool:
    """Whether an index of `x.at[...]` is not a Python value (a static window is an update slice)."""
    scope = model.scope_of(sub)
    for element in sub.slice:
        if isinstance(element.slice, cst.Index):
            value = element.slice.value
            if isinstance(value, (cst.Integer, cst.Ellipsis)) or isinstance(value, cst.Name) and value.value == "None":
                continue
            if model.kind(value, scope) is not Kind.STATIC:
                return True
        else:
            bounds = (element.slice.lower, element.slice.upper, element.slice.step)
            if any(b is not None and model.kind(b, scope) is not Kind.STATIC for b in bounds):
                return True
    return False


def _shifted(sub: cst.Subscript) -> bool:
    """A slice that keeps part of an axis or reorders it (`v[1:]`, `v[:-1, 2:]`, `v[::-1]`): the
    result's elements are other elements of the operand. `v[:, None]` and `v[...]` are not; nor is
    the index of an `.at[...]` update (the update's call is classified instead)."""
    if isinstance(sub.value, cst.Attribute) and sub.value.attr.value == "at":
        return False
    return any(isinstance(e.slice, cst.Slice) and
               any(b is not None for b in (e.slice.lower, e.slice.upper, e.slice.step)) for e in sub.slice)


def carry(call: cst.Call, qualified_name: str) -> cst.BaseExpression | None:
    if qualified_name == "jax.lax.fori_loop":
        return positional(call, 3) or keyword(call, "init_val")
    return positional(call, 1) or keyword(call, "init")


def size(model: LoopContextView, expr: cst.BaseExpression | None, scope: Scope) -> int | None:
    """The carry's number of elements, when every size is known."""
    shape = model.shape(expr, scope) if expr is not None else None
    return fusion_context.rows(shape, None) if shape is not None and shape.rank is not None else None


def context(model: LoopContextView, call: cst.Call, qualified_name: str, scope: Scope) -> str:
    if not isinstance(scope, Function) or not model.is_traced(scope):
        return "alone"  # run eagerly, lax compiles the loop by itself
    init = carry(call, qualified_name)
    if init is None:
        return "other"
    before = fusion_context.producer(model, init, scope)  # type: ignore[arg-type]
    after = _result_reader(model, call, qualified_name, scope)
    if before not in ("arg", "elementwise") or after not in ("returned", "epilogue"):
        return "other"
    return "alone" if before == "arg" and after == "returned" else "around"


def _result_reader(model: LoopContextView, call: cst.Call, qualified_name: str, scope: Scope) -> str | None:
    """What reads the loop's carry: through `scan(...)[0]` and `c, ys = scan(...)` for a scan, and
    through the name it is assigned to (which may be the carry's own: `x = lax.fori_loop(..., x)`)."""
    node: cst.CSTNode = call
    parent = model.parent(call)
    if qualified_name != "jax.lax.fori_loop":
        if isinstance(parent, cst.Subscript) and len(parent.slice) == 1 and isinstance(parent.slice[0].slice, cst.Index) \
                and isinstance(parent.slice[0].slice.value, cst.Integer) and parent.slice[0].slice.value.value == "0":
            node, parent = parent, model.parent(parent)
        elif isinstance(parent, cst.Assign) and len(parent.targets) == 1 and \
                isinstance(parent.targets[0].target, (cst.Tuple, cst.List)):
            first = parent.targets[0].target.elements[0].value if parent.targets[0].target.elements else None
            if not isinstance(first, cst.Name):
                return None
            read = fusion_context.one_read(model, first.value, parent, scope)  # type: ignore[arg-type]
            return fusion_context.reader(model, read, scope) if read is not None else None  # type: ignore[arg-type]
        else:
            return None
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        read = fusion_context.one_read(model, parent.targets[0].target.value, parent, scope)  # type: ignore[arg-type]
        return fusion_context.reader(model, read, scope) if read is not None else None  # type: ignore[arg-type]
    return fusion_context.reader(model, node, scope)  # type: ignore[arg-type]
