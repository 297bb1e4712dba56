"""ShapeAnalysis: the statically known shape of an expression (model/shapes.py's Shape).

Sources: `jnp.stack([a, b], axis=k)`, `jnp.array([...])`,
`jnp.column_stack`, literal shapes in `zeros`/`ones`/`full`/`empty`/`reshape`
(module constants such as `N = 64` included), `arange`/`linspace`/`fftfreq` of
known numbers, slices like `x[..., :3]`, `assert x.shape[-1] == 3`, tuple unpacking
(`w, x, y, z = q`: q's leading axis is 4; `a, b = p.T`: p's last is 2), explicit shapes of
`jax.random` draws, `stack(meshgrid(a, b), axis=-1)` / `array(meshgrid(a, b, c))`, trailing
full slices (`x[:, None, :]` keeps x's last axis), and jaxtyping annotations
(`Float[Array, "n 3"]`). Sizes flow through names (the bindings
that reach each read, model/flow.py), elementwise arithmetic, indexing (new
axes, integer indices, and one integer-array gather, which keeps the sizes on
either side of the axis it replaces; a boolean mask or a possible tuple of
indices stops them), `.T`/`transpose`/`swapaxes`/`moveaxis`/`expand_dims`,
`concatenate`, FFTs (`fftn` keeps the shape, `rfftn` halves its last axis),
and the return values of the module's own functions.

This module walks expressions (names, operators, attributes, subscripts); calls are
model/shape_calls.py, what names are declared to be model/declared_shapes.py, indexing
model/shape_indexing.py, layout changes model/shape_layout.py.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.declared_shapes import DeclaredShapes
from jaxfuse_lint.model.shape_calls import CallShapes
from jaxfuse_lint.model.shape_indexing import NOT_INT, UNSURE, _index_known_rank, _index_unknown_rank, index_kind
from jaxfuse_lint.model.shapes import SCALAR, Shape, broadcast, merge

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.shape_view import ShapeView


class ShapeAnalysis(CallShapes, DeclaredShapes):
    MAX_DEPTH = 30

    def __init__(self, model: "ShapeView", cross_module: bool = True) -> None:
        self.model = model
        # False: this module's facts only (what its project summary may record).
        self.cross_module = cross_module
        self._memo: dict[tuple[int, int], Shape | None] = {}
        self._active: set[tuple[int, int]] = set()
        self._param_facts: dict[int, dict[str, Shape]] = {}
        self._call_site_facts: dict = {}

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
            found = m.bindings_at(e, scope)
            if found is None:
                return None
            owner, bindings = found
            facts = self._facts_for(owner, e.value, bindings)
            shapes = []
            for b in bindings:
                if b.kind == "param":
                    shapes.append(self.param_shape(owner, b.name) if isinstance(owner, Function) else None)
                elif b.kind in ("assign", "annassign", "walrus") and b.value is not None and b.index is None:
                    shapes.append(self.shape(b.value, owner, depth))
                elif b.kind == "assign" and b.index is not None and b.value is not None:
                    shapes.append(self._unpacked(b.value, b.index, owner, depth))
                elif b.kind == "for" and b.index is None and isinstance(b.value, cst.Call) and \
                        m.qn(b.value.func, owner) == "builtins.range":
                    shapes.append(SCALAR)
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

    def _unpacked(self, value: cst.BaseExpression, index: int, scope: "Scope", depth: int) -> Shape | None:
        if isinstance(value, (cst.Tuple, cst.List)) and index < len(value.elements):
            return self.shape(value.elements[index].value, scope, depth)
        return None

    # -- subscripts ------------------------------------------------------------------------------
    def _subscript(self, e: cst.Subscript, scope: "Scope", depth: int) -> Shape | None:
        """NumPy indexing: slices keep an axis, `None` adds one of size 1, an integer drops one,
        `...` stands for the untouched middle, and one integer-array index (a gather) replaces
        its axis by the index's axes (so the sizes on either side of it survive)."""
        base = self.shape(e.value, scope, depth)
        ops = []
        for el in e.slice:
            op = self._index_op(el, scope, depth, alone=len(e.slice) == 1)
            if op is None:
                return None
            ops.append(op)
        kinds = [op[0] for op in ops]
        if kinds.count("ellipsis") > 1:
            return None
        gathers = kinds.count("gather")
        if gathers > 1 or (gathers and "drop" in kinds):
            return None  # several advanced indices broadcast together (and may move to the front)
        consumed = sum(1 for k in kinds if k in ("keep", "drop", "gather"))
        explicit_ellipsis = "ellipsis" in kinds
        if not explicit_ellipsis:
            ops.append(("ellipsis",))
        if base is not None and base.rank is not None:
            if consumed > base.rank:
                return None
            return _index_known_rank(base, ops, consumed)
        result = _index_unknown_rank(base, ops)
        if base is not None and result is not None and not explicit_ellipsis:
            # Without `...`, trailing full slices (`x[:, None, :]`) take the base's last axes,
            # whatever the rank: the axes they index are the last ones, or the untouched axes
            # after them are.
            right = dict(result.right)
            j = 0
            for op in reversed(ops[:-1]):
                if op[0] != "keep" or op[1] is not None or not op[2]:
                    break
                j += 1
                size = base.size(-j)
                if size is not None:
                    right.setdefault(-j, size)
            result = Shape.make(result.rank, dict(result.left), right)
        return result

    def _index_op(self, el: cst.SubscriptElement, scope: "Scope", depth: int, alone: bool = False):
        """One index: ("keep", size or None, inherits the source size), ("new",), ("drop",),
        ("ellipsis",), ("gather", index Shape or None); None when unknown (a boolean mask, a
        tuple of indices held in a name, anything the model cannot tell)."""
        s = el.slice
        if isinstance(s, cst.Slice):
            lo, hi, step = self.static_int(s.lower, scope), self.static_int(s.upper, scope), self.static_int(s.step, scope)
            if s.step is not None and step is None:
                return ("keep", None, False)
            if step not in (None, 1):
                if s.lower is None and s.upper is None and step == -1:
                    return ("keep", None, True)  # x[::-1]
                return ("keep", None, False)
            if s.lower is None and s.upper is None:
                return ("keep", None, True)
            if hi is not None and hi > 0 and (s.lower is None or (lo is not None and lo >= 0)):
                return ("keep", max(0, hi - (lo or 0)), False)
            if s.upper is None and lo is not None and lo < 0:
                return ("keep", -lo, False)
            return ("keep", None, False)
        v = s.value
        if isinstance(v, cst.Ellipsis):
            return ("ellipsis",)
        if isinstance(v, cst.Name) and v.value == "None":
            return ("new",)
        if self.static_int(v, scope) is not None:
            return ("drop",)
        kind = index_kind(self.model, v, scope)
        # Under tracing an index that is not a concrete NumPy mask cannot be boolean (a traced
        # mask has no static shape), so an UNSURE one among several indices is an integer or an
        # integer array (a sequence there is an array index too). Alone (`x[k]`), it may also
        # be a tuple of indices.
        if kind == NOT_INT or (kind == UNSURE and (alone or not self.model.is_traced_scope(scope))):
            return None
        shape = self.shape(v, scope, depth)
        if shape is not None and shape.rank == 0:
            return ("drop",)
        return ("gather", shape)
