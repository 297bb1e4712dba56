"""Shapes the source declares about names: jaxtyping annotations (`Float[Array, "n 3"]`),
`assert x.shape[-1] == 3`, tuple unpacking (`w, x, y, z = q`: q's leading axis is 4;
`a, b = p.T`: p's last is 2), the shape every call of a nested function passes for a parameter, a
parameter's shape seen by a recorded run (model/runtime_facts.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import libcst as cst

from jaxfuse_lint.model.shape_literals import _int_literal, _literal_shape
from jaxfuse_lint.model.shapes import SCALAR, Shape, merge

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.shape_view import ShapeView


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


class DeclaredShapes:
    """What statements and annotations say about names' shapes (a base of ShapeAnalysis)."""

    model: "ShapeView"
    _param_facts: dict[int, dict[str, Shape]]
    _call_site_facts: dict
    shape: "Callable[..., Shape | None]"

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
        if shape is None:
            found = self.call_site_shape(fn, name)
            shape = found[0] if found is not None else None
        # What the source does not say, a recorded run may have seen (model/runtime_facts.py).
        return shape if shape is not None else self.model.runtime_param_shape(fn, name)

    def call_site_shape(self, fn: "Function", name: str) -> "tuple[Shape, list[cst.Call]] | None":
        """The shape every call of a nested function (a `def` inside another function) passes for
        its parameter `name`, and those calls: where the function is only called by its name (never
        passed, returned or stored: every call is in its enclosing function, so the module shows all
        of them) and every call's argument has the same known shape."""
        from jaxfuse_lint.model.scopes import Function

        if fn.is_lambda or not isinstance(fn.parent, Function) or name in fn.star_params:
            return None
        cached = self._call_site_facts.get((id(fn), name), False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        self._call_site_facts[(id(fn), name)] = None  # (a recursive call reads no fact)
        result = None
        calls: list[cst.Call] = []
        shapes = []
        called = set()
        for site in self.model.index.calls_named(fn.name):
            func = site.call.func
            if not (isinstance(func, cst.Name) and self.model.function_named(func.value, site.scope) is fn):
                continue
            called.add(id(func))
            arg = self.model.argument_for(site.call, fn, name)
            if arg is None:
                break  # the default, or a `*args` spread: not an array this module shows
            shapes.append(self.shape(arg, site.scope))
            calls.append(site.call)
        else:
            escapes = any(id(r.name) not in called and self.model.function_named(r.name.value, r.scope) is fn
                          for r in self.model.index.reads_named(fn.name))
            if calls and not escapes and shapes[0] is not None and all(s == shapes[0] for s in shapes):
                result = (shapes[0], calls)
        self._call_site_facts[(id(fn), name)] = result
        return result

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
