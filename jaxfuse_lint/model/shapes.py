"""Statically known axis sizes.

A Shape knows some axis sizes, counted from the left, from the right, or both
when the rank is known. Sources: `jnp.stack([a, b], axis=k)`, `jnp.array([...])`,
`jnp.column_stack`, literal shapes in `zeros`/`ones`/`full`/`empty`/`reshape`,
slices like `x[..., :3]`, `assert x.shape[-1] == 3`, and jaxtyping annotations
(`Float[Array, "n 3"]`). Sizes flow through names, elementwise arithmetic and
the return values of the module's own functions.

Known approximation: when an operand of unknown rank is broadcast against one
of known rank, the result is assumed to have the known rank (operands are
rarely broadcast *up* by a partner of unknown rank). Rules document this.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import JNP_ELEMENTWISE
from jaxfuse_lint.model.traced import keyword, positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.semantic import SemanticModel


@dataclass(frozen=True)
class Shape:
    rank: int | None = None
    left: tuple[tuple[int, int], ...] = ()  # (axis >= 0, size)
    right: tuple[tuple[int, int], ...] = ()  # (axis < 0, size)

    @staticmethod
    def make(rank: int | None, left: dict[int, int] | None = None, right: dict[int, int] | None = None) -> "Shape":
        left = dict(left or {})
        right = dict(right or {})
        if rank is not None:
            for a, s in list(left.items()):
                if a < rank:
                    right.setdefault(a - rank, s)
            for a, s in list(right.items()):
                if -a <= rank:
                    left.setdefault(rank + a, s)
            left = {a: s for a, s in left.items() if a < rank}
            right = {a: s for a, s in right.items() if -a <= rank}
        return Shape(rank, tuple(sorted(left.items())), tuple(sorted(right.items())))

    @staticmethod
    def of_dims(dims: list[int | None]) -> "Shape":
        return Shape.make(len(dims), {i: d for i, d in enumerate(dims) if d is not None})

    def size(self, axis: int) -> int | None:
        if axis >= 0:
            v = dict(self.left).get(axis)
            if v is None and self.rank is not None and axis < self.rank:
                v = dict(self.right).get(axis - self.rank)
            return v
        v = dict(self.right).get(axis)
        if v is None and self.rank is not None and -axis <= self.rank:
            v = dict(self.left).get(self.rank + axis)
        return v

    def total(self) -> int | None:
        """The number of elements, when every axis size is known."""
        if self.rank is None:
            return None
        n = 1
        for axis in range(self.rank):
            size = self.size(axis)
            if size is None:
                return None
            n *= size
        return n

    def normalize_axis(self, axis: int) -> int | None:
        if self.rank is None:
            return axis
        if -self.rank <= axis < self.rank:
            return axis
        return None


SCALAR = Shape.make(0)

# Reductions that, without an axis, produce a scalar.
_FULL_REDUCTIONS = frozenset("sum mean prod max min amax amin std var any all argmax argmin linalg.norm vdot".split())

_JAXTYPING_DTYPES = frozenset(
    "Float Float16 Float32 Float64 BFloat16 Int Int8 Int16 Int32 Int64 UInt UInt8 UInt16 UInt32 UInt64 "
    "Integer Bool Complex Complex64 Complex128 Inexact Real Num Shaped Key".split()
)


def parse_jaxtyping_dims(text: str) -> Shape | None:
    """`"n 3"` -> rank 2, last axis 3; `"... 3"` -> unknown rank, last axis 3."""
    tokens = text.split()
    variadic = [i for i, t in enumerate(tokens) if t == "..." or t.startswith("*") or t.startswith("#*")]
    if len(variadic) > 1:
        return None
    if not variadic:
        dims: list[int | None] = []
        for t in tokens:
            t = t.lstrip("#_")
            dims.append(int(t) if t.isdigit() else None)
        return Shape.of_dims(dims)
    v = variadic[0]
    left = {i: int(t.lstrip("#_")) for i, t in enumerate(tokens[:v]) if t.lstrip("#_").isdigit()}
    after = tokens[v + 1:]
    right = {i - len(after): int(t.lstrip("#_")) for i, t in enumerate(after) if t.lstrip("#_").isdigit()}
    return Shape.make(None, left, right)


def broadcast(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None and b is None:
        return None
    if a is not None and a.rank == 0:
        return b
    if b is not None and b.rank == 0:
        return a
    if a is None or b is None:
        known = a if b is None else b
        # See the module docstring: the unknown partner is assumed not to raise the rank.
        return _broadcast_with_unknown(known)
    if a.rank is not None and b.rank is not None:
        rank = max(a.rank, b.rank)
        right = {}
        for k in range(1, rank + 1):
            da = a.size(-k) if k <= a.rank else 1
            db = b.size(-k) if k <= b.rank else 1
            d = _broadcast_dim(da, db)
            if d is not None:
                right[-k] = d
        return Shape.make(rank, None, right)
    # At least one rank unknown: only the right-aligned sizes are reliable.
    right = {}
    for k in range(1, 8):
        da = a.size(-k) if a.rank is None or k <= a.rank else 1
        db = b.size(-k) if b.rank is None or k <= b.rank else 1
        d = _broadcast_dim(da, db)
        if d is not None:
            right[-k] = d
    rank = a.rank if b.rank is None else b.rank
    return Shape.make(rank, None, right)


def _broadcast_with_unknown(known: Shape) -> Shape:
    # Sizes > 1 survive broadcasting against anything compatible; size 1 may be stretched.
    left = {a: s for a, s in known.left if s != 1}
    right = {a: s for a, s in known.right if s != 1}
    return Shape.make(known.rank, left, right)


def _broadcast_dim(da: int | None, db: int | None) -> int | None:
    if da is None:
        return db if db is not None and db != 1 else None
    if db is None:
        return da if da != 1 else None
    if da == 1:
        return db
    return da


def _int_literal(e: cst.BaseExpression | None) -> int | None:
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value, 0)
    return None


class ShapeAnalysis:
    MAX_DEPTH = 30

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self._memo: dict[tuple[int, int], Shape | None] = {}
        self._active: set[tuple[int, int]] = set()
        self._param_facts: dict[int, dict[str, Shape]] = {}

    def shape(self, e: cst.CSTNode, scope: "Scope", depth: int = 0) -> Shape | None:
        key = (id(e), id(scope))
        if key in self._memo:
            return self._memo[key]
        if key in self._active or depth > self.MAX_DEPTH:
            return None
        self._active.add(key)
        try:
            result = self._shape(e, scope, depth + 1)
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def _shape(self, e: cst.CSTNode, scope: "Scope", depth: int) -> Shape | None:
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
            return SCALAR
        if isinstance(e, cst.Name):
            found = m.resolver.lookup(e.value, scope)
            if found is None:
                return None
            owner, bindings = found
            facts = self.facts(owner).get(e.value) if isinstance(owner, Function) else None
            shapes = []
            for b in bindings:
                if b.kind == "param":
                    shapes.append(self.param_shape(owner, b.name) if isinstance(owner, Function) else None)
                elif b.kind in ("assign", "annassign", "walrus") and b.value is not None and b.index is None:
                    shapes.append(self.shape(b.value, owner, depth))
                elif b.kind == "assign" and b.index is not None and b.value is not None:
                    shapes.append(self._unpacked(b.value, b.index, owner, depth))
                else:
                    shapes.append(None)
            result = shapes[0] if shapes and all(s == shapes[0] for s in shapes) else None
            if facts is not None:
                result = merge(result, facts)
            return result
        if isinstance(e, cst.BinaryOperation):
            if isinstance(e.operator, cst.MatrixMultiply):
                return None
            return broadcast(self.shape(e.left, scope, depth), self.shape(e.right, scope, depth))
        if isinstance(e, cst.UnaryOperation):
            return self.shape(e.expression, scope, depth)
        if isinstance(e, cst.Subscript):
            return self._subscript(e, scope, depth)
        if isinstance(e, cst.Attribute):
            if e.attr.value in ("real", "imag"):
                return self.shape(e.value, scope, depth)
            if e.attr.value == "T":
                s = self.shape(e.value, scope, depth)
                if s is not None and s.rank is not None:
                    return Shape.of_dims([s.size(i) for i in reversed(range(s.rank))])
            return None
        if isinstance(e, cst.Call):
            return self._call(e, scope, depth)
        return None

    # -- facts about names: asserts and annotations --------------------------------------------
    def facts(self, fn: "Function") -> dict[str, Shape]:
        cached = self._param_facts.get(id(fn))
        if cached is not None:
            return cached
        facts: dict[str, Shape] = {}
        for a in fn.asserts:
            for name, shape in _assert_facts(a.test):
                facts[name] = merge(facts.get(name), shape)
        self._param_facts[id(fn)] = facts
        return facts

    def param_shape(self, fn: "Function", name: str) -> Shape | None:
        p = fn.param_nodes.get(name)
        if p is None:
            return None
        shape = self.annotation_shape(p.annotation.annotation, fn) if p.annotation is not None else None
        # What the source does not say, a recorded run may have seen (model/runtime_facts.py).
        return shape if shape is not None else self.model.runtime_param_shape(fn, name)

    def annotation_shape(self, ann: cst.BaseExpression, scope: "Scope") -> Shape | None:
        if isinstance(ann, cst.Subscript) and len(ann.slice) == 2:
            head = ann.value.attr.value if isinstance(ann.value, cst.Attribute) else (
                ann.value.value if isinstance(ann.value, cst.Name) else "")
            dims = ann.slice[1].slice
            if head in _JAXTYPING_DTYPES and isinstance(dims, cst.Index) and isinstance(dims.value, cst.SimpleString):
                text = dims.value.evaluated_value
                if isinstance(text, str):
                    return parse_jaxtyping_dims(text)
        if isinstance(ann, cst.SimpleString):  # a string annotation
            return None
        return None

    def _unpacked(self, value: cst.BaseExpression, index: int, scope: "Scope", depth: int) -> Shape | None:
        if isinstance(value, (cst.Tuple, cst.List)) and index < len(value.elements):
            return self.shape(value.elements[index].value, scope, depth)
        return None

    # -- subscripts ------------------------------------------------------------------------------
    def _subscript(self, e: cst.Subscript, scope: "Scope", depth: int) -> Shape | None:
        base = self.shape(e.value, scope, depth)
        elements = list(e.slice)
        ell = [i for i, el in enumerate(elements) if isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.Ellipsis)]
        if len(ell) > 1:
            return None

        def axis_result(el: cst.SubscriptElement, src: int | None) -> tuple[str, int | None]:
            s = el.slice
            if isinstance(s, cst.Slice):
                lo, hi, step = _int_literal(s.lower), _int_literal(s.upper), _int_literal(s.step)
                if s.step is not None and step is None:
                    return "keep", None
                if hi is not None and hi > 0 and (s.lower is None or (lo is not None and lo >= 0)) and (step in (None, 1)):
                    return "keep", max(0, hi - (lo or 0))
                if hi is None and s.upper is None and lo is not None and lo < 0 and step in (None, 1):
                    return "keep", -lo
                if s.lower is None and s.upper is None and step in (None, 1):
                    return "keep", src
                return "keep", None
            v = s.value
            if isinstance(v, cst.Name) and v.value == "None":
                return "new", 1
            if _int_literal(v) is not None:
                return "drop", None
            return "unknown", None

        if ell:
            k = ell[0]
            before, after = elements[:k], elements[k + 1:]
            left: dict[int, int] = {}
            right: dict[int, int] = {}
            pos = 0
            src_pos = 0
            for el in before:
                kind, size = axis_result(el, base.size(src_pos) if base else None)
                if kind == "unknown":
                    return None
                if kind == "keep":
                    if size is not None:
                        left[pos] = size
                    pos += 1
                    src_pos += 1
                elif kind == "new":
                    left[pos] = 1
                    pos += 1
                else:
                    src_pos += 1
            out_right = 0
            src_right = 0
            for el in reversed(after):
                kind, size = axis_result(el, base.size(-(src_right + 1)) if base else None)
                if kind == "unknown":
                    return None
                if kind == "keep":
                    out_right += 1
                    src_right += 1
                    if size is not None:
                        right[-out_right] = size
                elif kind == "new":
                    out_right += 1
                    right[-out_right] = 1
                else:
                    src_right += 1
            if base is not None:
                # Untouched axes in the middle keep their known sizes from the right.
                for a, s in base.right:
                    if -a > src_right:
                        right.setdefault(a + src_right - out_right, s)
            rank = None
            if base is not None and base.rank is not None:
                consumed = sum(1 for el in before + after if axis_result(el, None)[0] in ("keep", "drop"))
                added = sum(1 for el in before + after if axis_result(el, None)[0] == "new")
                rank = base.rank - sum(1 for el in before + after if axis_result(el, None)[0] == "drop") + added
                if consumed > base.rank:
                    return None
            return Shape.make(rank, left, right)
        # No ellipsis: elements index from the left.
        dims: dict[int, int] = {}
        pos = 0
        src = 0
        dropped = added = 0
        for el in elements:
            kind, size = axis_result(el, base.size(src) if base else None)
            if kind == "unknown":
                return None
            if kind == "keep":
                if size is not None:
                    dims[pos] = size
                pos += 1
                src += 1
            elif kind == "new":
                dims[pos] = 1
                pos += 1
                added += 1
            else:
                src += 1
                dropped += 1
        rank = None
        if base is not None and base.rank is not None:
            rank = base.rank - dropped + added
            for a in range(src, base.rank):
                s = base.size(a)
                if s is not None:
                    dims[a - src + pos] = s
        return Shape.make(rank, dims)

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, e: cst.Call, scope: "Scope", depth: int) -> Shape | None:
        m = self.model
        qn = m.qn(e.func, scope)
        if qn is None and isinstance(e.func, cst.Attribute):
            return self._method(e, scope, depth)
        if qn is None:
            if isinstance(e.func, cst.Name):
                callee = m.function_named(e.func.value, scope)
                if callee is not None and callee.returns:
                    shapes = [self.shape(r, callee, depth) for r in callee.returns]
                    if shapes and all(s == shapes[0] for s in shapes):
                        return shapes[0]
            return None
        if not qn.startswith("jax."):
            return None
        name = qn[len("jax.numpy."):] if qn.startswith("jax.numpy.") else None
        if name in ("stack",):
            seq = positional(e, 0)
            axis = _int_literal(keyword(e, "axis") or positional(e, 1)) if (keyword(e, "axis") or positional(e, 1)) is not None else 0
            if axis is None or not isinstance(seq, (cst.List, cst.Tuple)) or any(isinstance(el, cst.StarredElement) for el in seq.elements):
                return None
            n = len(seq.elements)
            elem = None
            for i, el in enumerate(seq.elements):
                s = self.shape(el.value, scope, depth)
                elem = s if i == 0 else broadcast(elem, s) if (elem is not None and s is not None) else None
            return _insert_axis(elem, axis, n)
        if name in ("array", "asarray") and isinstance(positional(e, 0), (cst.List, cst.Tuple)):
            return self._literal_array(positional(e, 0), scope, depth)
        if name == "column_stack":
            seq = positional(e, 0)
            if isinstance(seq, (cst.List, cst.Tuple)):
                shapes = [self.shape(el.value, scope, depth) for el in seq.elements]
                if shapes and all(s is not None and s.rank == 1 for s in shapes):
                    return Shape.make(2, None, {-1: len(shapes)})
            return None
        if name in ("zeros", "ones", "empty", "full"):
            return _literal_shape(positional(e, 0) or keyword(e, "shape"))
        if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            return self.shape(positional(e, 0), scope, depth) if positional(e, 0) is not None else None
        if name == "reshape":
            return _literal_shape(positional(e, 1) or keyword(e, "shape") or keyword(e, "newshape"))
        if name in ("ravel", "flatnonzero") or qn == "jax.numpy.ndarray.flatten":
            return Shape.make(1)
        if name in ("arange", "linspace", "fft.fftfreq", "fft.rfftfreq"):
            size = None
            if name == "arange" and len(e.args) == 1:
                size = _int_literal(positional(e, 0))
            if name == "linspace":
                size = _int_literal(keyword(e, "num") or positional(e, 2))
            return Shape.make(1, {0: size} if size is not None else None)
        if name in _FULL_REDUCTIONS and (keyword(e, "axis") is None and positional(e, 1) is None) \
                and keyword(e, "keepdims") is None:
            return SCALAR
        if qn in JNP_ELEMENTWISE:
            shapes = [self.shape(a.value, scope, depth) for a in e.args if a.keyword is None]
            if name in ("asarray", "array", "astype"):
                shapes = shapes[:1]
            if not shapes:
                return None
            out = shapes[0]
            for s in shapes[1:]:
                out = broadcast(out, s)
            return out
        return None

    def _method(self, e: cst.Call, scope: "Scope", depth: int) -> Shape | None:
        attr = e.func.attr.value  # type: ignore[union-attr]
        if attr in _FULL_REDUCTIONS and not e.args:
            return SCALAR
        if attr == "reshape":
            if len(e.args) == 1:
                return _literal_shape(e.args[0].value)
            return _literal_shape(cst.Tuple([cst.Element(a.value) for a in e.args]))
        if attr in ("ravel", "flatten") and not e.args:
            return Shape.make(1)
        if attr in ("astype", "conj", "conjugate", "copy", "clip", "round"):
            return self.shape(e.func.value, scope, depth)  # type: ignore[union-attr]
        return None

    def _literal_array(self, seq: cst.BaseExpression, scope: "Scope", depth: int) -> Shape | None:
        if not isinstance(seq, (cst.List, cst.Tuple)) or not seq.elements:
            return None
        if any(isinstance(el, cst.StarredElement) for el in seq.elements):
            return None
        n = len(seq.elements)
        inner = [self._literal_array(el.value, scope, depth) if isinstance(el.value, (cst.List, cst.Tuple))
                 else self.shape(el.value, scope, depth) for el in seq.elements]
        first = inner[0]
        if first is not None and all(s == first for s in inner):
            return _insert_axis(first, 0, n)
        return Shape.make(None, {0: n})


def merge(a: Shape | None, b: Shape | None) -> Shape | None:
    """Two facts about the same array."""
    if a is None:
        return b
    if b is None:
        return a
    rank = a.rank if a.rank is not None else b.rank
    left = dict(b.left)
    left.update(dict(a.left))
    right = dict(b.right)
    right.update(dict(a.right))
    return Shape.make(rank, left, right)


def _insert_axis(elem: Shape | None, axis: int, n: int) -> Shape | None:
    if elem is not None and elem.rank is not None:
        rank = elem.rank + 1
        if not -rank <= axis < rank:
            return None
        ax = axis % rank
        dims = [elem.size(i) for i in range(elem.rank)]
        dims.insert(ax, n)
        return Shape.of_dims(dims)
    # Element rank unknown: axes on the inserted side of the new axis keep their known
    # sizes; those beyond it shift by one, which is only trackable from the other end.
    left_in = dict(elem.left) if elem is not None else {}
    right_in = dict(elem.right) if elem is not None else {}
    if axis >= 0:
        left = {a: s for a, s in left_in.items() if a < axis}
        left[axis] = n
        # Inserting in front keeps every from-the-right size; elsewhere they may move.
        return Shape.make(None, left, right_in if axis == 0 else {})
    right = {a: s for a, s in right_in.items() if a > axis}
    right.update({a - 1: s for a, s in right_in.items() if a <= axis})
    right[axis] = n
    return Shape.make(None, left_in if axis == -1 else {}, right)


def _literal_shape(e: cst.BaseExpression | None) -> Shape | None:
    if e is None:
        return None
    if isinstance(e, (cst.Tuple, cst.List)):
        dims = []
        for el in e.elements:
            if isinstance(el, cst.StarredElement):
                return None
            v = _int_literal(el.value)
            dims.append(v if v is not None and v >= 0 else None)
        return Shape.of_dims(dims)
    v = _int_literal(e)
    if v is not None:
        return Shape.of_dims([v if v >= 0 else None])
    return None


def _assert_facts(test: cst.BaseExpression):
    """`x.shape[-1] == 3`, `x.shape == (n, 3)`, `a and b` -> (name, Shape) facts."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        yield from _assert_facts(test.left)
        yield from _assert_facts(test.right)
        return
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return
    comp = test.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return
    for lhs, rhs in ((test.left, comp.comparator), (comp.comparator, test.left)):
        # x.shape[k] == n
        if (isinstance(lhs, cst.Subscript) and isinstance(lhs.value, cst.Attribute) and lhs.value.attr.value == "shape"
                and isinstance(lhs.value.value, cst.Name) and len(lhs.slice) == 1 and isinstance(lhs.slice[0].slice, cst.Index)):
            axis = _int_literal(lhs.slice[0].slice.value)
            size = _int_literal(rhs)
            if axis is not None and size is not None:
                name = lhs.value.value.value
                yield name, (Shape.make(None, {axis: size}) if axis >= 0 else Shape.make(None, None, {axis: size}))
                return
        # x.shape == (n, 3)
        if isinstance(lhs, cst.Attribute) and lhs.attr.value == "shape" and isinstance(lhs.value, cst.Name):
            s = _literal_shape(rhs)
            if s is not None:
                yield lhs.value.value, s
                return
        # len(x) == n / x.ndim == 2
        if isinstance(lhs, cst.Attribute) and lhs.attr.value == "ndim" and isinstance(lhs.value, cst.Name):
            r = _int_literal(rhs)
            if r is not None:
                yield lhs.value.value, Shape.make(r)
                return

