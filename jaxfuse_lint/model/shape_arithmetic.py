"""Arithmetic on static values done with `jnp`: where a traced function needs static Python ints
(reshape sizes, creation shapes, slice bounds, an index into a Python sequence: the sinks) and which
`jnp`/`lax` computations on static values reach them, through local variables and loop targets.

The fact: under a staging trace every jax array operation is staged out (omnistaging), so
`jnp.array(x.shape).prod()`, `jnp.ceil(T / dt)` or `jnp.arange(5)` is a tracer even though every
input is a Python value the host could compute with (a shape, a size, a number, a static
attribute); a place that needs a Python int rejects it. A computation fed by a traced argument is
not this pattern (JF402's: the value depends on the data)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import Kind, keyword, positional
from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, Scope, walk
from jaxfuse_lint.model.omnistaging import omnistaged_function
from jaxfuse_lint.model.source_text import code_of
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
        indexes_python = None
        for el in node.slice:
            if isinstance(el.slice, cst.Slice):
                for bound in (el.slice.lower, el.slice.upper, el.slice.step):
                    if bound is not None:
                        yield "a slice bound", node, bound
            elif isinstance(el.slice, cst.Index):
                if indexes_python is None:
                    # A Python value (a tuple, list, dict, NumPy array) indexed: its index must be
                    # a Python int (`__index__`), which a tracer refuses.
                    indexes_python = shape_arithmetic(model).python_value(node.value, fn)
                if indexes_python:
                    yield f"the index into `{code_of(model, node.value, 30)}`", node, el.slice.value


class ShapeArithmetic:
    """Finds `jnp` computations on static values inside an expression."""

    MAX_DEPTH = 4

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self.read_names = {r.name for r in model.index.reads}
        self._python_memo: dict[tuple[int, int], bool] = {}

    def find(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0, via: tuple[cst.Name, ...] = ()):
        """(outermost jnp-on-static node, its scope, the variables it came through) inside expr."""
        if isinstance(expr, (cst.Tuple, cst.List)):
            for el in expr.elements:
                yield from self.find(el.value, scope, depth, via)
            return
        if isinstance(expr, cst.StarredElement):
            yield from self.find(expr.value, scope, depth, via)
            return
        if self.is_static_jnp(expr, scope):
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
                return
            items, owner = self.loop_items(expr, scope)
            if items is not None:
                # `for i in jnp.arange(5)`: each item of a tracer is a tracer
                yield from self.find(items, owner, depth + 1, via + (expr,))

    def local_value(self, name: cst.Name, scope: Scope) -> tuple[cst.BaseExpression | None, Scope]:
        """The value of a function-local name where one assignment reaches the read (`n = ...`;
        `d = d.astype(int)` reads the assignment before it)."""
        found = self._reaching(name, scope)
        if found is None:
            return None, scope
        owner, b = found
        if b.kind not in ("assign", "annassign") or b.index is not None:
            return None, scope
        return b.value, owner

    def loop_items(self, name: cst.Name, scope: Scope) -> tuple[cst.BaseExpression | None, Scope]:
        """What a function-local loop variable iterates over, where one `for` binds it whole
        (`for i in jnp.arange(5)[::-1]`: `jnp.arange(5)[::-1]`)."""
        found = self._reaching(name, scope)
        if found is None:
            return None, scope
        owner, b = found
        if b.kind != "for" or b.index is not None or not isinstance(b.node, cst.For) \
                or not isinstance(b.node.target, cst.Name):
            return None, scope
        return b.value, owner

    def _reaching(self, name: cst.Name, scope: Scope):
        found = self.model.bindings_at(name, scope) if name in self.read_names else self.model.lookup(name.value, scope)
        if found is None or not isinstance(found[0], Function):
            return None
        owner, bindings = found
        if len(bindings) != 1:
            return None
        return owner, bindings[0]

    def is_static_jnp(self, e: cst.BaseExpression, scope: Scope) -> bool:
        """A jax array operation staged out under the trace (omnistaging) whose inputs are all
        static Python values (shapes, sizes, numbers, static attributes) or such operations: a
        tracer of a value the host could compute."""
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None:
                if not omnistaged_function(qn):
                    return False
                args = [a.value for a in e.args]
                return bool(args) and all(self._static_input(a, scope) for a in args)
            if isinstance(e.func, cst.Attribute):
                # `jnp.array(x.shape).prod()`, `.astype(int)`
                return self.is_static_jnp(e.func.value, scope) and all(
                    m.kind(a.value, scope) is Kind.STATIC for a in e.args)
            return False
        if isinstance(e, cst.Subscript):
            return self.is_static_jnp(e.value, scope) and all(
                self._static_index(el.slice, scope) for el in e.slice)
        return False

    # Kept for callers that name the original pattern (shape arithmetic is one case of it).
    is_shape_jnp = is_static_jnp

    def _static_index(self, s: cst.BaseSlice, scope: Scope) -> bool:
        if isinstance(s, cst.Index):
            return self.model.kind(s.value, scope) is Kind.STATIC
        if isinstance(s, cst.Slice):
            return all(b is None or self.model.kind(b, scope) is Kind.STATIC for b in (s.lower, s.upper, s.step))
        return False

    def _static_input(self, e: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
        if self.python_value(e, scope):
            return True
        if self.is_static_jnp(e, scope):
            return True
        if isinstance(e, cst.BinaryOperation):
            return self._static_input(e.left, scope, depth) and self._static_input(e.right, scope, depth)
        if isinstance(e, cst.UnaryOperation):
            return self._static_input(e.expression, scope, depth)
        if isinstance(e, (cst.Tuple, cst.List)):
            return all(self._static_input(el.value, scope, depth) for el in e.elements)
        if isinstance(e, cst.Name) and depth < self.MAX_DEPTH:
            # `n_fine = jnp.ceil(1.0 / c)` then `jnp.max(n_fine + 1)`: a name holding such a computation
            value, owner = self.local_value(e, scope)
            return value is not None and self._static_input(value, owner, depth + 1)
        return False

    # -- Python values ---------------------------------------------------------------------------
    def python_value(self, e: cst.BaseExpression | None, scope: Scope, depth: int = 0) -> bool:
        """Whether the code shows that e holds a Python value computed on the host (a number, a
        string, a tuple of them, a NumPy value), never an array of the traced program: literals;
        shape reads (`x.shape`, `x.ndim`, `len(x)`); a static argument of the trace and what is
        read from it; names, parameters and instance attributes every assignment (every call of
        the module, defaults included) gives such a value; Python arithmetic, builtins, `math`
        and NumPy of such values. Positive evidence only: an attribute of unknown origin (a
        Module's parameters) is not one."""
        if e is None or depth > _MAX_PYTHON_DEPTH:
            return False
        key = (id(e), id(scope))
        memo = self._python_memo
        if key in memo:
            return memo[key]
        memo[key] = False  # a cycle (`n = n + 1` in a loop) reads as unknown
        result = self._python_value(e, scope, depth)
        memo[key] = result
        return result

    def _python_value(self, e: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        m = self.model
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                          cst.FormattedString)):
            return True
        if isinstance(e, cst.Name):
            if e.value in ("None", "True", "False"):
                return True
            return self._name_python(e, scope, depth)
        if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
            return all(self.python_value(el.value, scope, depth + 1) for el in e.elements)
        if isinstance(e, cst.Dict):
            return all(isinstance(el, cst.DictElement) and self.python_value(el.value, scope, depth + 1)
                       for el in e.elements)
        if isinstance(e, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            return self.python_value(e.elt, m.scope_of(e.elt), depth + 1)
        if isinstance(e, cst.Attribute):
            if e.attr.value in STATIC_ATTRIBUTES:
                return True  # `x.shape`, `x.ndim`, `x.dtype`: Python values of any array
            if self.python_value(e.value, scope, depth + 1) and not isinstance(e.value, cst.Name):
                return True  # `cfg.sizes.count` of a Python value
            return self._attribute_python(e, scope, depth)
        if isinstance(e, cst.Subscript):
            return self.python_value(e.value, scope, depth + 1) and all(
                self._python_slice(el.slice, scope, depth) for el in e.slice)
        if isinstance(e, cst.BinaryOperation):
            return self.python_value(e.left, scope, depth + 1) and self.python_value(e.right, scope, depth + 1)
        if isinstance(e, cst.UnaryOperation):
            return self.python_value(e.expression, scope, depth + 1)
        if isinstance(e, cst.IfExp):
            return self.python_value(e.body, scope, depth + 1) and self.python_value(e.orelse, scope, depth + 1)
        if isinstance(e, cst.BooleanOperation):
            return self.python_value(e.left, scope, depth + 1) and self.python_value(e.right, scope, depth + 1)
        if isinstance(e, cst.Comparison):
            return self.python_value(e.left, scope, depth + 1) and all(
                self.python_value(c.comparator, scope, depth + 1) for c in e.comparisons)
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn in _SHAPE_FUNCTIONS or qn in _CONVERSIONS:
                return True  # `len(x)`, `jnp.shape(x)`, `int(...)`: a Python value whatever the argument
            if qn is not None and (qn in _PYTHON_FUNCTIONS or qn.startswith(("math.", "numpy."))):
                return all(not a.star and self.python_value(a.value, scope, depth + 1) for a in e.args)
        return False

    def _python_slice(self, s: cst.BaseSlice, scope: Scope, depth: int) -> bool:
        if isinstance(s, cst.Index):
            return self.python_value(s.value, scope, depth + 1)
        return isinstance(s, cst.Slice) and all(
            b is None or self.python_value(b, scope, depth + 1) for b in (s.lower, s.upper, s.step))

    def _name_python(self, name: cst.Name, scope: Scope, depth: int) -> bool:
        m = self.model
        found = m.bindings_at(name, scope) if name in self.read_names else m.lookup(name.value, scope)
        if found is None or not found[1]:
            return False
        owner, bindings = found
        for b in bindings:
            if b.kind == "param":
                if not (isinstance(owner, Function) and self._param_python(owner, b.name, depth)):
                    return False
            elif b.kind in ("assign", "annassign", "augassign", "for", "walrus"):
                # (a tuple unpacked, `_, _, df = x.shape`, or iterated: its items are Python values too)
                if not self.python_value(b.value, owner, depth + 1):
                    return False
            else:
                return False
        return True

    def _param_python(self, fn: Function, name: str, depth: int) -> bool:
        """A parameter holds a Python value: the trace marks it static (`static_argnums`,
        `static_argnames`), or it is not traced and every call of the module passes one (its
        default where a call leaves it out)."""
        from jaxfuse_lint.model.instances import instances
        from jaxfuse_lint.model.staged_values import staged_values

        if fn.cls is not None and fn.params and fn.params[0] == name:
            return False  # the object itself
        if self.static_param(fn, name):
            return True
        if name in fn.star_params or staged_values(self.model).param_kind(fn, name) is Kind.TRACED:
            return False
        passed = instances(self.model).arguments_for(fn, name)
        return bool(passed) and all(self.python_value(arg, where, depth + 1) for arg, where in passed)

    def static_param(self, fn: Function, name: str) -> bool:
        """Whether a staging transform of fn marks parameter `name` static."""
        params = [p for p in fn.params if p not in fn.star_params]
        for r in self.model.traced.reasons.get(fn, ()):
            if r.kind not in ("decorator", "transform"):
                continue
            if name in r.static_argnames:
                return True
            ps = params[1:] if r.bound_method and params and params[0] in ("self", "cls") else params
            if name in ps and ps.index(name) in r.static_argnums:
                return True
        return False

    def _attribute_python(self, e: cst.Attribute, scope: Scope, depth: int) -> bool:
        """`hilb.n_particles` of a static argument `hilb`; `self.low` where every assignment of
        the attribute in its class gives a Python value (`self.low = low`, `Uniform(1, 4)`)."""
        from jaxfuse_lint.model.instances import instances

        m = self.model
        base = e.value
        if isinstance(base, cst.Name):
            found = m.lookup(base.value, scope)
            if found is not None and isinstance(found[0], Function) and [b.kind for b in found[1]] == ["param"] \
                    and self.static_param(found[0], base.value):
                return True  # an attribute of a static argument (hashed, part of the cache key)
        inst = instances(m)
        ci = inst.instance_class(base, scope)
        if ci is None:
            return False
        values = inst.attribute_values(ci).get(e.attr.value)
        if not values:
            return False
        for v in values:
            if isinstance(v, cst.Annotation):
                if m.qn(v.annotation, ci.parent or m.index.scope) not in _PYTHON_ANNOTATIONS:
                    return False
            elif not self.python_value(v, m.scope_of(v), depth + 1):
                return False
        return True


_MAX_PYTHON_DEPTH = 12
# Builtins that compute Python values from Python values.
_PYTHON_FUNCTIONS = frozenset("builtins." + n for n in (
    "int float complex bool str round abs min max sum tuple list range divmod pow sorted reversed enumerate zip "
    "dict set frozenset".split()))
# Conversions whose result is a Python value (or that raise).
_CONVERSIONS = frozenset("builtins." + n for n in "int float complex bool str repr".split())
# Annotations of dataclass fields that hold Python values.
_PYTHON_ANNOTATIONS = frozenset("builtins." + n for n in "int float bool str tuple complex".split())


def shape_arithmetic(model: "SemanticModel") -> ShapeArithmetic:
    """The model's ShapeArithmetic (built once per model, kept with it)."""
    found = model.__dict__.get("_shape_arithmetic")
    if found is None:
        found = model.__dict__["_shape_arithmetic"] = ShapeArithmetic(model)
    return found


# The conversions JF402 also judges that are sinks of this pattern: `int(...)`, `float(...)`, `range(...)`.
PYTHON_NUMBER_SINKS = frozenset({"int", "float", "range"})


def static_values_staged(model: "SemanticModel", fn: Function, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The `jnp` computation on static values that `expr` holds, where fn is staged (JF405's
    pattern: `int(jnp.ceil(T / dt))`): the value is a tracer only because jax staged out an
    operation the host could compute; None where it is not that (a traced argument feeds it, or
    fn is not staged)."""
    from jaxfuse_lint.model.staging import staging

    if not staging(model).is_staged(fn):
        return None
    return next((node for node, _, _ in shape_arithmetic(model).find(expr, fn)), None)
