"""Shape-only values and what XLA finds costly to repeat: the facts JF203 and JF204 read.

- `ShapeOnly.shape_only(expr, scope, {})`: the value is computed from array shapes, dtypes and
  Python values, never from array data (`jnp.arange(x.size).reshape(x.shape)`, the notebook's
  `get_kmesh(rho)` through the module's helpers): a grid XLA can rebuild from iota anywhere;
- `ShapeOnly.costly(expr, scope)`: the expression holds an operation XLA would rather compute
  once than repeat per use (a transcendental function, a select, a remainder, a non-integer
  power), spelled as written.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import JNP_CREATORS, JNP_ELEMENTWISE, JNP_STATIC_FUNCTIONS, STATIC_ATTRIBUTES
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model.scopes import Function, walk
from jaxfuse_lint.model.values import Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.semantic import SemanticModel

_LAYOUT = frozenset("jax.numpy." + n for n in (
    "where select reshape ravel transpose swapaxes moveaxis expand_dims squeeze broadcast_to stack "
    "concatenate zeros_like ones_like full_like real imag conj float32 float64 int32 int64 complex64 "
    "complex128 remainder mod fmod"
).split()) | frozenset({"jax.lax.iota", "jax.lax.broadcasted_iota", "jax.lax.broadcast_in_dim", "jax.lax.full"})
_STATIC_BUILTINS = frozenset("builtins." + n for n in "len int float complex abs min max round tuple range".split())
_SHAPE_METHODS = frozenset("reshape astype transpose squeeze ravel flatten conj conjugate swapaxes".split())
# Elementwise functions XLA treats as costly to repeat per use (transcendentals, selects, remainders).
_CHEAP_ARITH = frozenset("jax.numpy." + n for n in (
    "add subtract multiply divide true_divide negative positive asarray array astype abs absolute square "
    "real imag conj conjugate floor ceil round rint trunc fix sign maximum minimum"
).split())


class ShapeOnly:
    """Shape-only values: computed from array shapes, dtypes and Python values, never from array data."""

    # Deep enough for the notebook's `get_kmesh` (call -> helper -> where -> unpacked indices -> shapes).
    MAX_DEPTH = 40

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self._memo: dict[tuple, bool] = {}

    def shape_only(self, e: cst.CSTNode, scope, env: dict, depth: int = 0) -> bool:
        if depth > self.MAX_DEPTH:
            return False
        key = (id(e), id(scope), tuple(sorted(env.items())))
        if key in self._memo:
            return True
        found = self._shape_only(e, scope, env, depth)
        if found:  # (a False may come from the depth limit: not kept)
            self._memo[key] = True
        return found

    def _shape_only(self, e: cst.CSTNode, scope, env: dict, depth: int) -> bool:
        m = self.model
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)):
            return True
        if isinstance(e, cst.Name):
            if e.value in ("True", "False", "None"):
                return True
            found = m.bindings_at(e, scope)
            if found is None:
                return True  # a builtin
            owner, bindings = found
            if not isinstance(owner, Function):
                return True  # module constants are Python values at trace time
            if len(bindings) > 4:
                return False
            # Every binding that reaches this read (`if real: kz = ... else: kz = ...`).
            return all(self._binding_shape_only(b, owner, env, depth) for b in bindings)
        if isinstance(e, cst.Attribute):
            if e.attr.value in STATIC_ATTRIBUTES:
                return True
            if m.qn(e, scope) is not None:
                return True  # jnp.pi, jnp.float32
            return False
        if isinstance(e, cst.Subscript):
            if not self.shape_only(e.value, scope, env, depth + 1):
                return False
            for el in e.slice:
                s = el.slice
                parts = [s.value] if isinstance(s, cst.Index) else \
                    [p for p in (s.lower, s.upper, s.step) if p is not None]
                if not all(self.shape_only(p, scope, env, depth + 1) for p in parts):
                    return False
            return True
        if isinstance(e, cst.BinaryOperation):
            return self.shape_only(e.left, scope, env, depth + 1) and self.shape_only(e.right, scope, env, depth + 1)
        if isinstance(e, cst.UnaryOperation):
            return self.shape_only(e.expression, scope, env, depth + 1)
        if isinstance(e, cst.Comparison):
            return self.shape_only(e.left, scope, env, depth + 1) and all(
                self.shape_only(c.comparator, scope, env, depth + 1) for c in e.comparisons)
        if isinstance(e, (cst.Tuple, cst.List)):
            return all(not isinstance(el, cst.StarredElement) and self.shape_only(el.value, scope, env, depth + 1)
                       for el in e.elements)
        if isinstance(e, cst.IfExp):
            return all(self.shape_only(p, scope, env, depth + 1) for p in (e.test, e.body, e.orelse))
        if isinstance(e, cst.Call):
            return self._call(e, scope, env, depth)
        return False

    def _binding_shape_only(self, b, owner, env, depth) -> bool:
        m = self.model
        if b.kind == "param":
            key = (id(owner), b.name)
            if key in env:
                return env[key]
            return m.values.param_kind(owner, b.name) is Kind.STATIC
        if b.kind in ("assign", "annassign") and b.value is not None:
            value = b.value
            if b.index is not None:
                if not isinstance(value, (cst.Tuple, cst.List)) or b.index >= len(value.elements):
                    return self._unpacked_indices(value, owner, env, depth)
                value = value.elements[b.index].value
            return self.shape_only(value, owner, env, depth + 1)
        return False

    def _unpacked_indices(self, value, owner, env, depth) -> bool:
        # `ix, iy = jnp.indices(shape)`: every element of a shape-only array is shape-only.
        return isinstance(value, cst.Call) and self.shape_only(value, owner, env, depth + 1)

    def _args(self, call: cst.Call, scope, env, depth) -> bool:
        return all(not a.star and self.shape_only(a.value, scope, env, depth + 1) for a in call.args)

    def _call(self, e: cst.Call, scope, env, depth) -> bool:
        m = self.model
        qn = m.qn(e.func, scope)
        if qn is not None:
            if qn in JNP_STATIC_FUNCTIONS or qn in _STATIC_BUILTINS:
                return True
            if qn in JNP_CREATORS or qn in JNP_ELEMENTWISE or qn in _LAYOUT:
                return self._args(e, scope, env, depth)
            return False
        if isinstance(e.func, cst.Attribute):
            if e.func.attr.value in _SHAPE_METHODS:
                return self.shape_only(e.func.value, scope, env, depth + 1) and self._args(e, scope, env, depth)
            return False
        if isinstance(e.func, cst.Name):
            callee = m.function_named(e.func.value, scope)
            if callee is None or not callee.returns or callee.star_params:
                return False
            inner = dict(env)
            for name in callee.params:
                arg = m.argument_for(e, callee, name)
                if arg is not None:
                    inner[(id(callee), name)] = self._static_use_only(callee, name) or \
                        self.shape_only(arg, scope, env, depth + 1)
                else:
                    inner[(id(callee), name)] = name in callee.params_with_default
            return all(self.shape_only(r, callee, inner, depth + 1) for r in callee.returns)
        return False

    def _static_use_only(self, fn: Function, name: str) -> bool:
        """Every read of the parameter in fn is `p.shape`, `p.size`, `p.ndim`, `p.dtype` or `len(p)`."""
        m = self.model
        reads = [r for r in fn.reads if r.name.value == name]
        stack = list(fn.nested)
        while stack:
            g = stack.pop()
            reads.extend(r for r in g.reads if r.name.value == name and m.lookup(name, r.scope) is not None
                         and m.lookup(name, r.scope)[0] is fn)
            stack.extend(g.nested)
        for r in reads:
            parent = m.parent(r.name)
            if isinstance(parent, cst.Attribute) and parent.value is r.name and parent.attr.value in STATIC_ATTRIBUTES:
                continue
            if isinstance(parent, cst.Arg):
                call = m.parent(parent)
                if isinstance(call, cst.Call) and m.qn(call.func, r.scope) == "builtins.len":
                    continue
            return False
        return True

    # -- cost -------------------------------------------------------------------------------------
    def costly(self, e: cst.CSTNode, scope, depth: int = 0) -> str | None:
        """An operation XLA would rather compute once than repeat per use: a transcendental
        function, a select, a remainder or a non-integer power. Returns its spelling."""
        m = self.model
        if depth > self.MAX_DEPTH:
            return None
        for n in walk(e):
            if isinstance(n, cst.BinaryOperation):
                if isinstance(n.operator, cst.Modulo):
                    return "%"
                if isinstance(n.operator, cst.Power) and not isinstance(n.right, cst.Integer):
                    return "**"
            elif isinstance(n, cst.Call):
                n_scope = m.scope_of(n) if n in m.index.scope_of_node else scope
                qn = m.qn(n.func, n_scope)
                if qn is not None:
                    if (qn in JNP_ELEMENTWISE or qn in _LAYOUT) and qn not in _CHEAP_ARITH and qn not in (
                            "jax.numpy.reshape", "jax.numpy.ravel", "jax.numpy.transpose", "jax.numpy.swapaxes",
                            "jax.numpy.moveaxis", "jax.numpy.expand_dims", "jax.numpy.squeeze",
                            "jax.numpy.broadcast_to", "jax.numpy.stack", "jax.numpy.concatenate",
                            "jax.numpy.zeros_like", "jax.numpy.ones_like", "jax.numpy.full_like"):
                        return as_written(n, qn)
                    continue
                if isinstance(n.func, cst.Name):
                    callee = m.function_named(n.func.value, n_scope)
                    if callee is not None and isinstance(callee.node, cst.FunctionDef):
                        found = self.costly(callee.node.body, callee, depth + 1)
                        if found:
                            return found
                    elif callee is not None:
                        for r in callee.returns:
                            found = self.costly(r, callee, depth + 1)
                            if found:
                                return found
            elif isinstance(n, cst.Name) and n in m.index.scope_of_node:
                # Follow names bound once in a function to what they compute.
                parent = m.parent(n)
                if isinstance(parent, cst.Attribute) and parent.attr is n:
                    continue
                found_b = m.lookup(n.value, m.scope_of(n))
                if found_b is None or not isinstance(found_b[0], Function) or len(found_b[1]) != 1:
                    continue
                b = found_b[1][0]
                if b.kind in ("assign", "annassign") and b.value is not None and b.value is not e:
                    found = self.costly(b.value, found_b[0], depth + 1)
                    if found:
                        return found
        return None
