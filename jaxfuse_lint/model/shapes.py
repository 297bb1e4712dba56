"""Statically known axis sizes.

A Shape knows some axis sizes, counted from the left, from the right, or both
when the rank is known. Sources: `jnp.stack([a, b], axis=k)`, `jnp.array([...])`,
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

Known approximation: when an operand of unknown rank is broadcast against one
of known rank, the result is assumed to have the known rank (operands are
rarely broadcast *up* by a partner of unknown rank). Rules document this.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import JNP_ELEMENTWISE
from jaxfuse_lint.model.traced import keyword, positional
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.numpy_values import NumpyArrays
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.traced import TracedRegions


class ShapeView(ModelView, Protocol):
    """What the shape analysis reads of the model besides its structure and names."""

    # The return shapes of other modules' functions this one calls: {callee as written: Shape}.
    external_shapes: dict[str, Shape]

    @property
    def traced(self) -> TracedRegions: ...

    def is_traced_scope(self, scope: Scope) -> bool: ...

    @property
    def numpy_arrays(self) -> NumpyArrays: ...

    def runtime_param_shape(self, fn: Function, name: str) -> Shape | None:
        """The shape a recorded run saw for fn's parameter `name` (model/runtime_facts.py)."""


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


# Array functions whose result is boolean (a mask, not a gather index) or a tuple of arrays.
_BOOLEAN_RESULTS = frozenset(
    "isnan isfinite isinf isposinf isneginf isclose isin in1d isreal iscomplex signbit logical_and logical_or "
    "logical_not logical_xor greater greater_equal less less_equal equal not_equal array_equal allclose "
    "any all".split()
)
_TUPLE_RESULTS = frozenset("nonzero where indices meshgrid unravel_index tril_indices triu_indices "
                           "diag_indices mask_indices argwhere split array_split divmod frexp modf".split())
_INTEGER_RESULTS = frozenset("arange argsort argmax argmin searchsorted digitize randint permutation argpartition "
                             "lexsort ravel_multi_index bincount".split())
_INDEX_METHODS = frozenset("argsort argmax argmin searchsorted astype ravel flatten reshape".split())


INT, NOT_INT, UNSURE = "int", "not-int", "unsure"


def index_kind(model: "ShapeView", v: cst.BaseExpression, scope: "Scope", depth: int = 0) -> str:
    """What an index expression is: INT (an integer or integer array: integer arithmetic,
    `range` loop variables, `argsort`/`arange`/`astype(int)` results, names bound to those),
    NOT_INT (a boolean mask, a tuple of indices, a float), or UNSURE."""
    if depth > 8:
        return UNSURE
    if _int_literal(v) is not None:
        return INT
    if isinstance(v, (cst.Float, cst.Comparison, cst.Tuple, cst.List, cst.SimpleString, cst.BooleanOperation)):
        return NOT_INT
    if isinstance(v, cst.BinaryOperation):
        if isinstance(v.operator, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Divide, cst.MatrixMultiply)):
            return NOT_INT
        kinds = {index_kind(model, v.left, scope, depth + 1), index_kind(model, v.right, scope, depth + 1)}
        return NOT_INT if NOT_INT in kinds else INT if kinds == {INT} else UNSURE
    if isinstance(v, cst.UnaryOperation):
        if isinstance(v.operator, (cst.BitInvert, cst.Not)):
            return NOT_INT
        return index_kind(model, v.expression, scope, depth + 1)
    if isinstance(v, cst.Subscript):
        if all(isinstance(el.slice, cst.Slice) for el in v.slice):
            return index_kind(model, v.value, scope, depth + 1)
        return UNSURE
    if isinstance(v, cst.Call):
        qn = model.qn(v.func, scope)
        if qn is not None:
            if qn in ("builtins.len", "builtins.int", "builtins.round", "builtins.range"):
                return INT
            for prefix in ("jax.numpy.", "numpy.", "jax.random.", "jax.lax."):
                if qn.startswith(prefix):
                    name = qn[len(prefix):].rsplit(".", 1)[-1]
                    if name in _BOOLEAN_RESULTS or name in _TUPLE_RESULTS or name == "bernoulli":
                        return NOT_INT
                    dtype = keyword_value(v, "dtype")
                    if dtype is not None:
                        return INT if _integer_dtype(model, dtype, scope) else NOT_INT
                    if name in ("array", "asarray"):
                        arg = v.args[0].value if v.args else None
                        return INT if arg is not None and _int_elements(arg) else UNSURE
                    # Functions that make integers; the others keep their input's dtype.
                    return INT if name in _INTEGER_RESULTS else UNSURE
            return UNSURE
        if isinstance(v.func, cst.Attribute) and v.func.attr.value in _INDEX_METHODS:
            if v.func.attr.value == "astype":
                return INT if v.args and _integer_dtype(model, v.args[0].value, scope) else NOT_INT
            if v.func.attr.value in ("ravel", "flatten", "reshape"):
                return index_kind(model, v.func.value, scope, depth + 1)
            return INT
        return UNSURE
    if isinstance(v, cst.Name):
        if v.value in ("True", "False", "None"):
            return NOT_INT
        found = model.bindings_at(v, scope)
        if found is None:
            return UNSURE
        owner, bindings = found
        kinds = set()
        for b in bindings:
            if b.kind == "param":
                kinds.add(_param_index_kind(model, owner, b.name))
            elif b.kind == "for" and b.index is None and isinstance(b.value, cst.Call) and \
                    model.qn(b.value.func, owner) == "builtins.range":
                kinds.add(INT)
            elif b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                kinds.add(index_kind(model, b.value, owner, depth + 1))
            else:
                kinds.add(UNSURE)
        if kinds != {INT} and model.numpy_arrays.binding_is_array(bindings, owner):
            return NOT_INT  # a concrete NumPy array may be a boolean mask, which jit accepts
        return NOT_INT if NOT_INT in kinds else INT if kinds == {INT} else UNSURE
    return UNSURE


def _param_index_kind(model: "ShapeView", fn, name: str) -> str:
    """The index of a `fori_loop` body, a parameter annotated `int` / `Int[Array, ...]`: INT;
    annotated as a tuple, list, bool or boolean array: NOT_INT."""
    from jaxfuse_lint.model.scopes import Function

    if not isinstance(fn, Function):
        return UNSURE
    if fn.params and fn.params[0] == name and any(
            r.kind == "control-flow" and r.transform == "jax.lax.fori_loop" for r in model.traced.reasons.get(fn, ())):
        return INT
    p = fn.param_nodes.get(name)
    if p is None or p.annotation is None:
        return UNSURE
    ann = p.annotation.annotation
    head = ann.value if isinstance(ann, cst.Subscript) else ann
    head_name = head.attr.value if isinstance(head, cst.Attribute) else head.value if isinstance(head, cst.Name) else ""
    if head_name in ("int", "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64",
                     "Integer"):
        return INT
    if head_name in ("bool", "Bool", "tuple", "Tuple", "list", "List", "Sequence", "float", "Float"):
        return NOT_INT
    return UNSURE


def keyword_value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def _has_integer_dtype(model: "ShapeView", call: cst.Call, scope: "Scope") -> bool:
    dtype = keyword_value(call, "dtype")
    return dtype is not None and _integer_dtype(model, dtype, scope)


def _integer_dtype(model: "ShapeView", dtype: cst.BaseExpression, scope: "Scope") -> bool:
    if isinstance(dtype, cst.SimpleString):
        text = dtype.evaluated_value
        return isinstance(text, str) and text.lstrip("<>=").startswith(("int", "uint", "i", "u"))
    qn = model.qn(dtype, scope)
    if qn is None:
        return False
    last = qn.rsplit(".", 1)[-1]
    return last in ("int",) or last.startswith(("int", "uint"))


def _int_elements(e: cst.BaseExpression) -> bool:
    if isinstance(e, (cst.List, cst.Tuple)):
        return bool(e.elements) and all(not isinstance(el, cst.StarredElement) and _int_elements(el.value)
                                        for el in e.elements)
    return _int_literal(e) is not None


# The key of an imported callee's return shape in the model's `external_shapes` (model/return_shapes.py).
def callee_key(model: "ModelView", func: cst.BaseExpression, scope: "Scope") -> str | None:
    """An imported callee as `import_spellings` spells it (`..mesh.components`), or None."""
    if isinstance(func, cst.Attribute):
        base = callee_key(model, func.value, scope)
        return f"{base}.{func.attr.value}" if base else None
    if not isinstance(func, cst.Name):
        return None
    found = model.lookup(func.value, scope)
    if found is None or not found[1] or any(b.kind != "import" for b in found[1]):
        return None
    names = {b.qualified_name for b in found[1]}
    return names.pop() if len(names) == 1 else None


class ShapeAnalysis:
    MAX_DEPTH = 30

    def __init__(self, model: "ShapeView", cross_module: bool = True) -> None:
        self.model = model
        # False: this module's facts only (what its project summary may record).
        self.cross_module = cross_module
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

    # -- facts about names: asserts and annotations --------------------------------------------
    def facts(self, fn: "Function") -> dict[str, list[tuple[frozenset[int], Shape]]]:
        """Sizes fn's own statements establish about a name's value: `assert x.shape[-1] == 3`,
        `w, x, y, z = q` — each with the bindings that reach the name there (the fact holds for
        reads of that same value) and only when the statement runs whenever fn does (a
        top-level statement of its body, not under an `if` or in a loop)."""
        cached = self._param_facts.get(id(fn))
        if cached is not None:
            return cached
        facts: dict[str, list[tuple[frozenset[int], Shape]]] = {}
        body = fn.node.body
        top = set(id(st) for st in body.body) if isinstance(body, cst.IndentedBlock) else set()
        for a in fn.asserts:
            if id(self.model.statement_of(a)) not in top:
                continue
            for name_node, shape in _assert_facts(a.test):
                self._add_fact(facts, fn, name_node, shape)
        for name_node, shape in self._unpacking_facts(fn, top):
            self._add_fact(facts, fn, name_node, shape)
        self._param_facts[id(fn)] = facts
        return facts

    def _add_fact(self, facts, fn: "Function", name: cst.Name, shape: Shape) -> None:
        found = self.model.bindings_at(name, fn)
        if found is None or found[0] is not fn or not found[1]:
            return
        key = frozenset(id(b) for b in found[1])
        entries = facts.setdefault(name.value, [])
        for i, (k, known) in enumerate(entries):
            if k == key:
                entries[i] = (k, merge(known, shape))
                return
        entries.append((key, shape))

    def _facts_for(self, owner: "Scope", name: str, bindings) -> Shape | None:
        from jaxfuse_lint.model.scopes import Function

        if not isinstance(owner, Function):
            return None
        key = frozenset(id(b) for b in bindings)
        for k, shape in self.facts(owner).get(name, ()):
            if k == key:
                return shape
        return None

    def _unpacking_facts(self, fn: "Function", top: set[int]):
        """`w, x, y, z = q` needs exactly 4 items along q's leading axis (`a, b, c = q.T`: 3
        along its last)."""
        seen: set[int] = set()
        for bindings in fn.bindings.values():
            for b in bindings:
                if b.kind != "assign" or b.index is None or id(b.node) in seen or not isinstance(b.node, cst.Assign):
                    continue
                seen.add(id(b.node))
                if len(b.node.targets) != 1 or id(self.model.statement_of(b.node)) not in top:
                    continue
                target = b.node.targets[0].target
                if not isinstance(target, (cst.Tuple, cst.List)) or any(
                        isinstance(el, cst.StarredElement) for el in target.elements):
                    continue
                value, axis = b.node.value, 0
                if isinstance(value, cst.Attribute) and value.attr.value == "T":
                    value, axis = value.value, -1
                if not isinstance(value, cst.Name):
                    continue
                n = len(target.elements)
                yield value, (Shape.make(None, {0: n}) if axis == 0 else Shape.make(None, None, {-1: n}))

    def param_shape(self, fn: "Function", name: str) -> Shape | None:
        p = fn.param_nodes.get(name)
        if fn.params and fn.params[0] == name and any(
                r.kind == "control-flow" and r.transform == "jax.lax.fori_loop"
                for r in self.model.traced.reasons.get(fn, ())):
            return SCALAR  # the loop index
        if p is None:
            return None
        shape = None
        if p.annotation is not None:
            ann = p.annotation.annotation
            if isinstance(ann, cst.Name) and ann.value in ("int", "float", "bool", "complex"):
                return SCALAR
            shape = self.annotation_shape(ann, fn)
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

    def static_int(self, e: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> int | None:
        """An integer known from the source: a literal, a name bound once to one (`N = 64`),
        or simple arithmetic of those."""
        if e is None or depth > 8:
            return None
        v = _int_literal(e)
        if v is not None:
            return v
        if isinstance(e, cst.Name):
            found = self.model.bindings_at(e, scope)
            if found is None:
                return None
            owner, bindings = found
            if len(bindings) != 1 or bindings[0].kind not in ("assign", "annassign") or bindings[0].index is not None:
                return None
            return self.static_int(bindings[0].value, owner, depth + 1)
        if isinstance(e, cst.BinaryOperation):
            a, b = self.static_int(e.left, scope, depth + 1), self.static_int(e.right, scope, depth + 1)
            if a is None or b is None:
                return None
            op = e.operator
            if isinstance(op, cst.Add):
                return a + b
            if isinstance(op, cst.Subtract):
                return a - b
            if isinstance(op, cst.Multiply):
                return a * b
            if isinstance(op, cst.FloorDivide) and b != 0:
                return a // b
            if isinstance(op, cst.Power) and 0 <= b <= 64:
                return a ** b
        return None

    def literal_shape(self, e: cst.BaseExpression | None, scope: "Scope") -> Shape | None:
        """`(n, 3)`, `[N, N, N]` (N bound once to an integer), `64`."""
        if e is None:
            return None
        if isinstance(e, (cst.Tuple, cst.List)):
            dims = []
            for el in e.elements:
                if isinstance(el, cst.StarredElement):
                    return None
                v = self.static_int(el.value, scope)
                dims.append(v if v is not None and v >= 0 else None)
            return Shape.of_dims(dims)
        v = self.static_int(e, scope)
        if v is not None:
            return Shape.of_dims([v if v >= 0 else None])
        return _literal_shape(e)

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, e: cst.Call, scope: "Scope", depth: int) -> Shape | None:
        m = self.model
        qn = m.qn(e.func, scope)
        if qn is None and isinstance(e.func, cst.Attribute):
            found = self._method(e, scope, depth)
            # `mesh.components(x)` with `from . import mesh`: another module's function.
            return found if found is not None else self._imported_return_shape(e.func, scope)
        if qn is None:
            if isinstance(e.func, cst.Name):
                callee = m.function_named(e.func.value, scope)
                if callee is not None and callee.returns:
                    return self.return_shape(callee, depth)
            return self._imported_return_shape(e.func, scope)
        if qn in ("builtins.len", "builtins.int", "builtins.float", "builtins.round", "builtins.bool"):
            return SCALAR
        if not qn.startswith(("jax.", "numpy.")):
            return self._imported_return_shape(e.func, scope)  # a function of another project module
        name = qn[len("jax.numpy."):] if qn.startswith("jax.numpy.") else qn[len("numpy."):] if qn.startswith("numpy.") else None
        if name is not None:
            found = self._layout_call(name, e, scope, depth)
            if found is not _NOT_HANDLED:
                return found
        if name in ("stack",):
            seq = positional(e, 0)
            axis = _int_literal(keyword(e, "axis") or positional(e, 1)) if (keyword(e, "axis") or positional(e, 1)) is not None else 0
            grids = self._meshgrid_count(seq, scope)
            if axis is not None and grids is not None:
                return _insert_axis(None, axis, grids)  # `stack(meshgrid(a, b), axis=-1)` ends in 2
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
        if name in ("array", "asarray") and keyword(e, "ndmin") is None:
            grids = self._meshgrid_count(positional(e, 0), scope)
            if grids is not None:
                return Shape.make(None, {0: grids})  # `array(meshgrid(a, b, c))` starts with 3
        if qn.startswith("jax.random."):
            return self._random_shape(qn[len("jax.random."):], e, scope)
        if name == "column_stack":
            seq = positional(e, 0)
            if isinstance(seq, (cst.List, cst.Tuple)):
                shapes = [self.shape(el.value, scope, depth) for el in seq.elements]
                if shapes and all(s is not None and s.rank == 1 for s in shapes):
                    return Shape.make(2, None, {-1: len(shapes)})
            return None
        if name in ("zeros", "ones", "empty", "full"):
            return self.literal_shape(positional(e, 0) or keyword(e, "shape"), scope)
        if name in ("zeros_like", "ones_like", "empty_like", "full_like"):
            return self.shape(positional(e, 0), scope, depth) if positional(e, 0) is not None else None
        if name == "reshape":
            return self.literal_shape(positional(e, 1) or keyword(e, "shape") or keyword(e, "newshape"), scope)
        if name in ("ravel", "flatnonzero") or qn == "jax.numpy.ndarray.flatten":
            return Shape.make(1)
        if name in ("arange", "linspace", "fft.fftfreq", "fft.rfftfreq"):
            size = None
            if name == "arange":
                size = self._arange_size(e, scope)
            if name == "linspace":
                num = keyword(e, "num") or positional(e, 2)
                size = self.static_int(num, scope) if num is not None else 50
            if name in ("fft.fftfreq", "fft.rfftfreq"):
                n = self.static_int(positional(e, 0) or keyword(e, "n"), scope)
                if n is not None and n > 0:
                    size = n if name == "fft.fftfreq" else n // 2 + 1
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

    def _meshgrid_count(self, seq: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> int | None:
        """How many arrays `meshgrid(a, b, ...)` gives (one per argument; dense grids only, all
        of one shape), looked up through a name bound once to it."""
        if isinstance(seq, cst.Name) and depth < 3:
            found = self.model.lookup(seq.value, scope)
            if found is None or len(found[1]) != 1:
                return None
            b = found[1][0]
            if b.kind != "assign" or b.index is not None:
                return None
            return self._meshgrid_count(b.value, found[0], depth + 1)
        if not isinstance(seq, cst.Call) or self.model.qn(seq.func, scope) not in ("jax.numpy.meshgrid", "numpy.meshgrid"):
            return None
        sparse = keyword(seq, "sparse")
        if sparse is not None and not (isinstance(sparse, cst.Name) and sparse.value == "False"):
            return None
        if any(a.star for a in seq.args):
            return None
        n = sum(1 for a in seq.args if a.keyword is None)
        return n if n >= 1 else None

    def _random_shape(self, name: str, e: cst.Call, scope: "Scope") -> Shape | None:
        """`jax.random.normal(key, (3,))`, `uniform(key, shape=(5, 2))`: a draw with an explicit
        shape has exactly that shape."""
        position = _RANDOM_SHAPE_POSITION.get(name)
        if position is None:
            return None
        shape = keyword(e, "shape")
        if shape is None:
            shape = positional(e, position)
        if shape is None:
            return None
        return self.literal_shape(shape, scope)

    def return_shape(self, callee: "Function", depth: int = 0) -> Shape | None:
        """The shape every `return` of one of the module's functions gives (None if they differ)."""
        shapes = [self.shape(r, callee, depth) for r in callee.returns]
        if shapes and all(s == shapes[0] for s in shapes):
            return shapes[0]
        return None

    def _imported_return_shape(self, func: cst.BaseExpression, scope: "Scope") -> Shape | None:
        """The return shape of another module's function, from the project index."""
        if not self.cross_module or not self.model.external_shapes:
            return None
        key = callee_key(self.model, func, scope)
        return self.model.external_shapes.get(key) if key is not None else None

    def _arange_size(self, e: cst.Call, scope: "Scope") -> int | None:
        """`arange(n)`, `arange(3.0)`, `arange(a, b)`, `arange(a, b, step)` of known numbers."""
        args = [a.value for a in e.args if a.keyword is None]
        start_kw, stop_kw, step_kw = keyword(e, "start"), keyword(e, "stop"), keyword(e, "step")
        if start_kw is not None or stop_kw is not None:
            return None
        values = [self._static_number(a, scope) for a in args]
        if step_kw is not None:
            values.append(self._static_number(step_kw, scope))
        if not values or any(v is None for v in values):
            return None
        if len(values) == 1:
            start, stop, step = 0, values[0], 1
        elif len(values) == 2:
            (start, stop), step = values, 1
        else:
            start, stop, step = values[:3]
        if step == 0:
            return None
        return max(0, math.ceil((stop - start) / step))

    def _static_number(self, e: cst.BaseExpression, scope: "Scope") -> float | None:
        if isinstance(e, cst.Float):
            return float(e.value)
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Float):
            return -float(e.expression.value)
        return self.static_int(e, scope)

    def _layout_call(self, name: str, e: cst.Call, scope: "Scope", depth: int):
        """Functions that move, join or keep axes: transpose, swapaxes, moveaxis, expand_dims,
        concatenate, FFTs. `_NOT_HANDLED` for any other."""
        first = positional(e, 0) or keyword(e, "a") or keyword(e, "x")
        if name in ("transpose", "permute_dims", "matrix_transpose", "swapaxes", "moveaxis", "expand_dims"):
            base = self.shape(first, scope, depth) if first is not None else None
            if name == "transpose" or name == "permute_dims":
                axes = keyword(e, "axes") or positional(e, 1)
                if axes is None:
                    return _transpose(base, None)
                if not isinstance(axes, (cst.Tuple, cst.List)):
                    return None
                return _transpose(base, [self.static_int(el.value, scope) for el in axes.elements])
            if name == "matrix_transpose":
                return _swapaxes(base, -1, -2)
            a, b = positional(e, 1), positional(e, 2)
            if name == "swapaxes":
                return _swapaxes(base, self.static_int(a or keyword(e, "axis1"), scope),
                                 self.static_int(b or keyword(e, "axis2"), scope))
            if name == "moveaxis":
                return _moveaxis(base, self.static_int(a or keyword(e, "source"), scope),
                                 self.static_int(b or keyword(e, "destination"), scope))
            axis = self.static_int(a or keyword(e, "axis"), scope)
            return _insert_axis(base, axis, 1) if axis is not None else None
        if name in ("concatenate", "concat"):
            seq = first if first is not None else keyword(e, "arrays")
            axis_e = keyword(e, "axis") or positional(e, 1)
            axis = self.static_int(axis_e, scope) if axis_e is not None else 0
            if axis is None or not isinstance(seq, (cst.List, cst.Tuple)) or not seq.elements or \
                    any(isinstance(el, cst.StarredElement) for el in seq.elements):
                return None
            return _concatenate([self.shape(el.value, scope, depth) for el in seq.elements], axis)
        if name.startswith("fft."):
            fname = name[4:]
            if fname in ("fftshift", "ifftshift"):
                return self.shape(first, scope, depth) if first is not None else None
            if fname in _FFT_SAME_SHAPE or fname in _FFT_REAL:
                if keyword(e, "n") is not None or keyword(e, "s") is not None or positional(e, 1) is not None:
                    return None  # padded or cropped
                base = self.shape(first, scope, depth) if first is not None else None
                if base is None:
                    return None
                if fname in _FFT_SAME_SHAPE:
                    return base
                return _real_fft(base, fname, e)
            return _NOT_HANDLED
        return _NOT_HANDLED

    def _method(self, e: cst.Call, scope: "Scope", depth: int) -> Shape | None:
        attr = e.func.attr.value  # type: ignore[union-attr]
        if attr in _FULL_REDUCTIONS and not e.args:
            return SCALAR
        if attr == "reshape":
            if len(e.args) == 1:
                return self.literal_shape(e.args[0].value, scope)
            return self.literal_shape(cst.Tuple([cst.Element(a.value) for a in e.args]), scope)
        if attr in ("transpose", "swapaxes"):
            base = self.shape(e.func.value, scope, depth)  # type: ignore[union-attr]
            args = [a.value for a in e.args if a.keyword is None]
            if attr == "transpose":
                if len(args) == 1 and isinstance(args[0], (cst.Tuple, cst.List)):
                    args = [el.value for el in args[0].elements]
                return _transpose(base, [self.static_int(a, scope) for a in args] if args else None)
            if len(args) == 2:
                return _swapaxes(base, self.static_int(args[0], scope), self.static_int(args[1], scope))
            return None
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


_GAP = object()  # an unknown number of axes (a gather by an index of unknown rank)


def _keep_size(op, src: int | None) -> int | None:
    return src if op[2] else op[1]


def _index_known_rank(base: Shape, ops: list, consumed: int) -> Shape | None:
    rank = base.rank or 0
    src_dims = [base.size(i) for i in range(rank)]
    middle = rank - consumed
    out: list = []
    src = 0
    for op in ops:
        kind = op[0]
        if kind == "ellipsis":
            out.extend(src_dims[src:src + middle])
            src += middle
        elif kind == "keep":
            out.append(_keep_size(op, src_dims[src]))
            src += 1
        elif kind == "new":
            out.append(1)
        elif kind == "drop":
            src += 1
        else:  # gather
            index = op[1]
            if index is not None and index.rank is not None:
                out.extend(index.size(i) for i in range(index.rank))
            else:
                out.append(_GAP)
            src += 1
    if _GAP not in out:
        return Shape.of_dims(out)
    g = out.index(_GAP)
    head, tail = out[:g], out[g + 1:]
    return Shape.make(None, {i: d for i, d in enumerate(head) if d is not None},
                      {i - len(tail): d for i, d in enumerate(tail) if d is not None})


def _index_unknown_rank(base: Shape | None, ops: list) -> Shape | None:
    """Rank unknown: sizes from the left up to the ellipsis (or a gather), from the right back to it."""
    k = next(i for i, op in enumerate(ops) if op[0] == "ellipsis")
    before, after = ops[:k], ops[k + 1:]
    left: dict[int, int] = {}
    right: dict[int, int] = {}
    pos = src = 0
    clean_left = True
    for op in before:
        kind = op[0]
        if kind == "keep":
            size = _keep_size(op, base.size(src) if base is not None else None)
            if size is not None:
                left[pos] = size
            pos += 1
            src += 1
        elif kind == "new":
            left[pos] = 1
            pos += 1
        elif kind == "drop":
            src += 1
        else:
            clean_left = False
            break
    out_r = src_r = 0
    clean_right = True
    for op in reversed(after):
        kind = op[0]
        if kind == "keep":
            size = _keep_size(op, base.size(-(src_r + 1)) if base is not None else None)
            out_r += 1
            src_r += 1
            if size is not None:
                right[-out_r] = size
        elif kind == "new":
            out_r += 1
            right[-out_r] = 1
        elif kind == "drop":
            src_r += 1
        else:
            clean_right = False
            break
    if base is not None:
        # The untouched middle keeps its sizes: from the left when nothing after the ellipsis
        # consumes axes, from the right when nothing before it does.
        if clean_left and not any(op[0] in ("keep", "drop", "gather") for op in after):
            for a, size in base.left:
                if a >= src:
                    left.setdefault(a - src + pos, size)
        if clean_right and not any(op[0] in ("keep", "drop", "gather") for op in before):
            for a, size in base.right:
                if -a > src_r:
                    right.setdefault(a + src_r - out_r, size)
    return Shape.make(None, left, right)


# jax.random draws whose `shape` is the result's shape, and its positional place.
_RANDOM_SHAPE_POSITION = {
    "normal": 1, "uniform": 1, "randint": 1, "bits": 1, "exponential": 1, "gumbel": 1, "laplace": 1,
    "logistic": 1, "cauchy": 1, "rademacher": 1, "maxwell": 1, "double_sided_maxwell": 3, "weibull_min": 3,
    "bernoulli": 2, "poisson": 2, "gamma": 2, "loggamma": 2, "t": 2, "chisquare": 2, "rayleigh": 2,
    "pareto": 2, "geometric": 2, "beta": 3, "truncated_normal": 3, "binomial": 3, "f": 3, "triangular": 4,
    "lognormal": 2, "generalized_normal": 2, "wald": 2,
}


_NOT_HANDLED = object()
# FFTs that keep the shape, and real FFTs that change the size of the last transformed axis.
_FFT_SAME_SHAPE = frozenset({"fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"})
_FFT_REAL = frozenset({"rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn", "hfft", "ihfft"})


def _real_fft(base: Shape, fname: str, e: cst.Call) -> Shape | None:
    """rfft* halves the last transformed axis (n // 2 + 1); irfft* doubles it back (unknown
    size here); every other axis keeps its size."""
    one_axis = fname in ("rfft", "irfft", "hfft", "ihfft")
    axes_e = keyword(e, "axis" if one_axis else "axes") or positional(e, 2)
    if axes_e is None:
        last = -1  # every default transforms the trailing axis last
    elif one_axis:
        last = _int_literal(axes_e)
    elif isinstance(axes_e, (cst.Tuple, cst.List)) and axes_e.elements:
        last = _int_literal(axes_e.elements[-1].value)
    else:
        return None
    if last is None:
        return None
    if base.rank is not None:
        if not -base.rank <= last < base.rank:
            return None
        dims = [base.size(i) for i in range(base.rank)]
        n = dims[last]
        dims[last] = n // 2 + 1 if n is not None and fname in ("rfft", "rfft2", "rfftn", "ihfft") else None
        return Shape.of_dims(dims)
    left = {a: s for a, s in base.left if a != last}
    right = {a: s for a, s in base.right if a != last}
    if last >= 0:
        right = {}  # which from-the-right axis `last` is depends on the rank
    else:
        left = {}
    return Shape.make(None, left, right)


def _transpose(base: Shape | None, axes: list[int | None] | None) -> Shape | None:
    if base is None or base.rank is None:
        return None
    dims = [base.size(i) for i in range(base.rank)]
    if axes is None:
        return Shape.of_dims(list(reversed(dims)))
    if len(axes) != base.rank or any(a is None or not -base.rank <= a < base.rank for a in axes):
        return None
    return Shape.of_dims([dims[a] for a in axes])  # type: ignore[index]


def _swapaxes(base: Shape | None, a: int | None, b: int | None) -> Shape | None:
    if base is None or a is None or b is None:
        return None
    if base.rank is not None:
        if not (-base.rank <= a < base.rank and -base.rank <= b < base.rank):
            return None
        dims = [base.size(i) for i in range(base.rank)]
        dims[a], dims[b] = dims[b], dims[a]
        return Shape.of_dims(dims)
    if (a < 0) != (b < 0):
        return None
    side = dict(base.right if a < 0 else base.left)
    sa, sb = side.pop(a, None), side.pop(b, None)
    if sb is not None:
        side[a] = sb
    if sa is not None:
        side[b] = sa
    return Shape.make(None, side, None) if a >= 0 else Shape.make(None, None, side)


def _moveaxis(base: Shape | None, src: int | None, dst: int | None) -> Shape | None:
    if base is None or src is None or dst is None:
        return None
    if base.rank is None:
        return _moveaxis_unknown_rank(base, src, dst)
    r = base.rank
    if not (-r <= src < r and -r <= dst < r):
        return None
    dims = [base.size(i) for i in range(r)]
    moved = dims.pop(src % r)
    dims.insert(dst % r, moved)
    return Shape.of_dims(dims)


def _moveaxis_unknown_rank(base: Shape, src: int, dst: int) -> Shape | None:
    """Rank unknown: positions counted from the same end as the moved axis stay countable."""
    if src >= 0 and dst >= 0 or src < 0 and dst < 0:
        side = dict(base.left if src >= 0 else base.right)
        # Work in distances from that end: 0, 1, 2... from the left or -1, -2... from the right.
        pos = (lambda a: a) if src >= 0 else (lambda a: -a - 1)
        unpos = (lambda d: d) if src >= 0 else (lambda d: -d - 1)
        reach = max(pos(src), pos(dst))
        dims = [side.get(unpos(d)) for d in range(reach + 1)]
        moved = dims.pop(pos(src))
        dims.insert(pos(dst), moved)
        out = {unpos(d): v for d, v in enumerate(dims) if v is not None}
        out.update({a: v for a, v in side.items() if pos(a) > reach})
        return Shape.make(None, out, None) if src >= 0 else Shape.make(None, None, out)
    # Across ends: the axes on the source's side after it shift by one; the moved axis is
    # known at its destination; the other end's sizes may have included the source axis.
    if src >= 0:
        size = base.size(src)
        left = {a: v for a, v in base.left if a < src}
        left.update({a - 1: v for a, v in base.left if a > src})
        return Shape.make(None, left, {dst: size} if size is not None else None)
    size = base.size(src)
    right = {a: v for a, v in base.right if a > src}
    right.update({a + 1: v for a, v in base.right if a < src})
    return Shape.make(None, {dst: size} if size is not None else None, right)


def _concatenate(shapes: list[Shape | None], axis: int) -> Shape | None:
    """Sizes along `axis` add up (when all known); the other axes agree between operands."""
    known = [s for s in shapes if s is not None]
    if not known:
        return None
    rank = next((s.rank for s in known if s.rank is not None), None)
    if rank is not None and not -rank <= axis < rank:
        return None
    total: int | None = 0
    for s in shapes:
        n = s.size(axis) if s is not None else None
        total = None if n is None or total is None else total + n
    out: Shape | None = None
    for s in known:
        # Every other axis is the same in all operands: collect what any of them knows.
        if rank is not None and s.rank is not None:
            dims = {i: s.size(i) for i in range(rank) if i != axis % rank and s.size(i) is not None}
            part = Shape.make(rank, dims)
        elif axis >= 0:
            part = Shape.make(rank, {a: v for a, v in s.left if a != axis}, None)
        else:
            part = Shape.make(rank, None, {a: v for a, v in s.right if a != axis})
        out = merge(out, part)
    if out is None:
        return None
    if total is not None:
        side = {axis: total}
        out = merge(out, Shape.make(rank, side if axis >= 0 else None, side if axis < 0 else None))
    return out


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
    """`x.shape[-1] == 3`, `x.shape == (n, 3)`, `a and b` -> (the Name read, Shape) facts."""
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
                yield lhs.value.value, (Shape.make(None, {axis: size}) if axis >= 0 else Shape.make(None, None, {axis: size}))
                return
        # x.shape == (n, 3)
        if isinstance(lhs, cst.Attribute) and lhs.attr.value == "shape" and isinstance(lhs.value, cst.Name):
            s = _literal_shape(rhs)
            if s is not None:
                yield lhs.value, s
                return
        # len(x) == n / x.ndim == 2
        if isinstance(lhs, cst.Attribute) and lhs.attr.value == "ndim" and isinstance(lhs.value, cst.Name):
            r = _int_literal(rhs)
            if r is not None:
                yield lhs.value, Shape.make(r)
                return

