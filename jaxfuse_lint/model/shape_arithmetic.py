"""Shape arithmetic done with `jnp`: where a traced function needs static Python ints (reshape
sizes, creation shapes, slice bounds: the sinks) and which `jnp`/`lax` computations on static shape
values (`jnp.array(x.shape).prod()`) reach them, through local variables."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import Kind, keyword, positional
from jaxfuse_lint.model.api import JNP_STATIC_FUNCTIONS, STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, Scope, walk
from jaxfuse_lint.model.omnistaging import STATIC_RESULT_FUNCTIONS
from jaxfuse_lint.model.staging import own_nodes

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


ALL = "all"
# Where a Python int (or a tuple of them) is required: argument positions and keywords.
_SHAPE = ((0, "shape"),)
_SINK_TABLE: dict[str, object] = {
    "reshape": ((1, "newshape"), (1, "shape")),
    "zeros": _SHAPE, "ones": _SHAPE, "empty": _SHAPE, "full": _SHAPE,
    "zeros_like": ((None, "shape"),), "ones_like": ((None, "shape"),), "empty_like": ((None, "shape"),),
    "full_like": ((None, "shape"),),
    "arange": ALL, "linspace": ((2, "num"),), "logspace": ((2, "num"),), "geomspace": ((2, "num"),),
    # (`eye`'s and `tri`'s diagonal offset `k` may be traced: jax 0.10.2 compiles `jnp.eye(3, k=n)`)
    "eye": ((0, "N"), (1, "M")), "identity": ((0, "n"),), "tri": ((0, "N"), (1, "M")),
    "broadcast_to": ((1, "shape"),), "tile": ((1, "reps"),), "split": ((1, "indices_or_sections"),),
    "array_split": ((1, "indices_or_sections"),), "pad": ((1, "pad_width"),),
    "resize": ((1, "new_shape"),),
}
SINKS: dict[str, object] = {}
for _name, _pos in _SINK_TABLE.items():
    SINKS[f"jax.numpy.{_name}"] = _pos
    SINKS[f"numpy.{_name}"] = _pos
SINKS.update({
    "jax.lax.reshape": ((1, "new_sizes"),), "jax.lax.broadcast": ((1, "sizes"),),
    "jax.lax.broadcast_in_dim": ((1, "shape"),), "jax.lax.full": ((0, "shape"),), "jax.lax.iota": ((1, "size"),),
    "jax.lax.broadcasted_iota": ((1, "shape"),), "jax.lax.dynamic_slice": ((2, "slice_sizes"),),
    "jax.lax.dynamic_slice_in_dim": ((2, "slice_size"),),
    "jax.random.normal": ((1, "shape"),), "jax.random.uniform": ((1, "shape"),),
    "jax.random.randint": ((1, "shape"),), "jax.random.bernoulli": ((2, "shape"),),
    "jax.random.truncated_normal": ((3, "shape"),), "jax.random.choice": ((2, "shape"),),
    "jax.random.split": ((1, "num"),),
    "builtins.range": ALL, "builtins.int": ((0, None),), "builtins.float": ((0, None),),
})
_RANDOM_SHAPE = ((None, "shape"),)
# Methods of arrays that need static ints.
METHOD_SINKS = {"reshape": ALL}
# Array methods whose result is an array computed from the array (a tracer of a tracer).
_ARRAY_RESULT_METHODS = frozenset({"astype", "prod", "sum", "max", "min", "cumsum", "cumprod", "round", "reshape",
                                   "squeeze", "ravel", "flatten", "clip"})
_SHAPE_FUNCTIONS = frozenset({"jax.numpy.shape", "numpy.shape", "jax.numpy.size", "numpy.size", "jax.numpy.ndim",
                              "numpy.ndim", "builtins.len"})


def sink_arguments(model: "SemanticModel", fn: Function):
    """(description, node, argument expression) for every place in fn that needs static ints."""
    for node in own_nodes(fn):
        yield from node_sinks(model, node, fn)


def node_sinks(model: "SemanticModel", node: cst.CSTNode, fn: Function):
    """(description, node, argument expression) for each argument of this node that needs a static
    int (a call's shape or size arguments, a slice's bounds)."""
    if isinstance(node, cst.Call):
        qn = model.qn(node.func, fn)
        positions = None
        label = None
        if qn is not None and qn in SINKS:
            positions, label = SINKS[qn], as_written(node, qn)
        elif qn is not None and qn.startswith("jax.random."):
            positions, label = _RANDOM_SHAPE, qn.replace("jax.random.", "random.")
        elif qn is None and isinstance(node.func, cst.Attribute) and node.func.attr.value in METHOD_SINKS:
            positions, label = METHOD_SINKS[node.func.attr.value], f".{node.func.attr.value}"
        if positions is None:
            return
        label = f"`{label.replace('builtins.', '')}(...)`"
        if positions == ALL:
            for a in node.args:
                yield label, node, a.value
            return
        seen: set[int] = set()
        for index, kw in positions:
            arg = None
            if kw is not None:
                arg = keyword(node, kw)
            if arg is None and index is not None:
                arg = positional(node, index)
            if arg is not None and id(arg) not in seen:
                seen.add(id(arg))
                yield label, node, arg
    elif isinstance(node, cst.Subscript):
        for el in node.slice:
            if isinstance(el.slice, cst.Slice):
                for bound in (el.slice.lower, el.slice.upper, el.slice.step):
                    if bound is not None:
                        yield "a slice bound", node, bound


class ShapeArithmetic:
    """Finds `jnp` computations on static shape values inside an expression."""

    MAX_DEPTH = 4

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self.read_names = {r.name for r in model.index.reads}

    def find(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0, via: tuple[cst.Name, ...] = ()):
        """(outermost jnp-on-shape node, its scope, the variables it came through) inside expr."""
        if isinstance(expr, (cst.Tuple, cst.List)):
            for el in expr.elements:
                yield from self.find(el.value, scope, depth, via)
            return
        if isinstance(expr, cst.StarredElement):
            yield from self.find(expr.value, scope, depth, via)
            return
        if self.is_shape_jnp(expr, scope):
            yield expr, scope, via
            return
        if isinstance(expr, cst.BinaryOperation):
            yield from self.find(expr.left, scope, depth, via)
            yield from self.find(expr.right, scope, depth, via)
        elif isinstance(expr, cst.UnaryOperation):
            yield from self.find(expr.expression, scope, depth, via)
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and self.model.qn(expr.func, scope) is None \
                and expr.func.attr.value in _ARRAY_RESULT_METHODS:
            # `depth.astype(jnp.int32)`: a method of a tracer gives a tracer
            yield from self.find(expr.func.value, scope, depth, via)
        elif isinstance(expr, cst.Name) and depth < self.MAX_DEPTH:
            value, owner = self.local_value(expr, scope)
            if value is not None:
                yield from self.find(value, owner, depth + 1, via + (expr,))

    def local_value(self, name: cst.Name, scope: Scope) -> tuple[cst.BaseExpression | None, Scope]:
        """The value of a function-local name where one assignment reaches the read (`n = ...`;
        `d = d.astype(int)` reads the assignment before it)."""
        found = self.model.bindings_at(name, scope) if name in self.read_names else self.model.lookup(name.value, scope)
        if found is None or not isinstance(found[0], Function):
            return None, scope
        owner, bindings = found
        if len(bindings) != 1 or bindings[0].kind not in ("assign", "annassign") or bindings[0].index is not None:
            return None, scope
        return bindings[0].value, owner

    def is_shape_jnp(self, e: cst.BaseExpression, scope: Scope) -> bool:
        """A jax computation whose inputs are static and include a shape."""
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None:
                if (not qn.startswith(("jax.numpy.", "jax.lax.")) or qn in JNP_STATIC_FUNCTIONS
                        or qn in STATIC_RESULT_FUNCTIONS):
                    return False
                args = [a.value for a in e.args]
                return bool(args) and all(self._static_input(a, scope) for a in args) and any(
                    self._mentions_shape(a, scope) for a in args)
            if isinstance(e.func, cst.Attribute):
                # `jnp.array(x.shape).prod()`, `.astype(int)`
                return self.is_shape_jnp(e.func.value, scope) and all(
                    m.kind(a.value, scope) is Kind.STATIC for a in e.args)
            return False
        if isinstance(e, cst.Subscript):
            return self.is_shape_jnp(e.value, scope)
        return False

    def _static_input(self, e: cst.BaseExpression, scope: Scope) -> bool:
        if self.model.kind(e, scope) is Kind.STATIC:
            return True
        if self.is_shape_jnp(e, scope):
            return True
        if isinstance(e, cst.BinaryOperation):
            return self._static_input(e.left, scope) and self._static_input(e.right, scope)
        if isinstance(e, (cst.Tuple, cst.List)):
            return all(self._static_input(el.value, scope) for el in e.elements)
        if isinstance(e, (cst.ListComp, cst.GeneratorExp)):
            # `[b.shape[0] for b in biases]`: static items, whatever they are read from
            return self._static_input(e.elt, scope)
        return False

    def _mentions_shape(self, e: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        """Whether e reads a shape: `.shape`/`.size`/`.ndim`, `len()`, `jnp.shape()`, or a local
        variable assigned from one."""
        for node in walk(e):
            if isinstance(node, cst.Attribute) and node.attr.value in STATIC_ATTRIBUTES and node.attr.value != "dtype":
                return True
            if isinstance(node, cst.Call) and self.model.qn(node.func, scope) in _SHAPE_FUNCTIONS:
                return True
            if isinstance(node, cst.Name) and node in self.read_names and depth < self.MAX_DEPTH:
                value, owner = self.local_value(node, scope)
                if value is not None and self._mentions_shape(value, owner, depth + 1):
                    return True
        return False
