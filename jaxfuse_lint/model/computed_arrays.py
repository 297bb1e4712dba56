"""Which expressions are arrays the program computes (`computed_array`), which are known to hold a
shape-`()` value (`known_scalar`), and which run work far above the size of their value
(`costly_to_recompute`): the facts JF203 and its codemod decide on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, walk
from jaxfuse_lint.model.traced import keyword
from jaxfuse_lint.model.values import Kind
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.shapes import Shape


class ComputedArrayView(ModelView, Protocol):
    """What these facts read of the model besides its structure and names: the kind (static or
    traced) and the shape of an expression."""

    def kind(self, expr: cst.CSTNode, scope: Scope) -> Kind: ...

    def shape(self, expr: cst.CSTNode, scope: Scope) -> Shape | None: ...


# jax functions whose result is an array computed by the program (not a function, not a pytree).
_OP_ROUTES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.", "jax.ops.")
_NOT_OPS = frozenset({"jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "jax.numpy.result_type",
                      "jax.numpy.iinfo", "jax.numpy.finfo", "jax.numpy.issubdtype", "jax.random.key_data"})
# Calls that hand back their argument's buffer (no new array): computed only when the argument is.
_PASS_THROUGH = frozenset({"jax.numpy.asarray", "jax.numpy.array", "jax.lax.stop_gradient", "jax.device_put", "jax.numpy.squeeze",
                           "jax.lax.with_sharding_constraint"})
_WHOLE_REDUCTIONS = frozenset("jax.numpy." + n for n in (
    "sum prod mean max min amax amin any all argmax argmin std var median count_nonzero ptp linalg.norm "
    "linalg.det vdot nansum nanmean nanmax nanmin trace allclose array_equal"
).split())


def computed_array(model: "ComputedArrayView", e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
    """`e` is an array the program computes in `scope`: the result of a jnp/lax operation, of
    arithmetic or indexing on one, of a transformed function's call, or of one of the module's
    functions whose every `return` is one. Not a parameter or its alias (`h = potential`), not a
    field read off an input (`state.params`, `params["w"]`), not a Python number, not a function."""
    if depth > 6:
        return False
    m = model
    if isinstance(e, cst.Call):
        qn = m.qn(e.func, scope)
        if qn is not None:
            if qn in _PASS_THROUGH:
                first = e.args[0].value if e.args and not e.args[0].star else None
                return first is not None and computed_array(m, first, scope, depth + 1)  # the same buffer
            return qn.startswith(_OP_ROUTES) and qn not in _NOT_OPS and not qn.startswith("jax.numpy.dtype")
        func = e.func
        if isinstance(func, cst.Call):
            from jaxfuse_lint.model.api import TRANSFORMS
            return m.qn(func.func, scope) in TRANSFORMS  # `jax.vmap(f)(x)`: an array the program computes
        if isinstance(func, cst.Attribute):
            if func.attr.value in STATIC_ATTRIBUTES:
                return False
            if computed_array(m, func.value, scope, depth + 1):
                return True  # a method of a computed array (`y.reshape(...)`, `y.sum(0)`)
        callee = None
        if isinstance(func, cst.Name):
            callee = m.function_named(func.value, scope)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value in ("self", "cls"):
            callee = m.method_of(scope, func.attr.value)
        if callee is not None and callee.returns and not callee.is_lambda:
            return all(computed_array(m, r, callee, depth + 1) for r in callee.returns)
        if callee is not None and callee.is_lambda:
            return computed_array(m, callee.node.body, callee, depth + 1)
        return False
    if isinstance(e, cst.BinaryOperation):
        if isinstance(e.operator, cst.MatrixMultiply):
            return any(m.kind(x, scope) is Kind.TRACED for x in (e.left, e.right))
        sides = (e.left, e.right)
        return any(computed_array(m, x, scope, depth + 1) or m.kind(x, scope) is Kind.TRACED and
                   _plain_array_operand(m, x, scope) for x in sides) and \
            any(m.kind(x, scope) is Kind.TRACED for x in sides)
    if isinstance(e, cst.UnaryOperation):
        return not isinstance(e.operator, cst.Not) and computed_array(m, e.expression, scope, depth + 1)
    if isinstance(e, cst.Subscript):
        if any(isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.SimpleString) for el in e.slice):
            return False  # `params["w"]`: a field read
        return computed_array(m, e.value, scope, depth + 1)
    if isinstance(e, cst.Attribute):
        return e.attr.value in ("T", "mT", "real", "imag") and computed_array(m, e.value, scope, depth + 1)
    if isinstance(e, cst.IfExp):
        return computed_array(m, e.body, scope, depth + 1) and computed_array(m, e.orelse, scope, depth + 1)
    if isinstance(e, cst.Name):
        found = m.bindings_at(e, scope)
        if found is None or not found[1]:
            return False
        owner, bindings = found
        for b in bindings:
            if b.kind not in ("assign", "annassign", "augassign", "walrus") or b.value is None:
                return False
            value = b.value
            if b.index is not None:
                if not isinstance(value, (cst.Tuple, cst.List)):
                    if not computed_array(m, value, owner, depth + 1):
                        return False  # `a, b = f(x)`: both parts when f's result is an array tuple
                    continue
                value = value.elements[b.index].value
            if b.kind == "augassign":
                continue
            if not computed_array(m, value, owner, depth + 1):
                return False
        return any(b.kind != "augassign" for b in bindings)
    return False


def _plain_array_operand(model: "ComputedArrayView", e: cst.CSTNode, scope: "Scope") -> bool:
    """A traced operand of arithmetic that is an array value in its own right (a parameter, a
    subscript of one): `x * 2.0` computes a new array of x's size."""
    return isinstance(e, (cst.Name, cst.Subscript, cst.Attribute, cst.Call))


def known_scalar(model: "ComputedArrayView", e: cst.CSTNode, scope: "Scope", depth: int = 0) -> bool:
    """`e` is known to hold a shape-`()` value: its shape says so, or it is a whole-array
    reduction (`jnp.sum(x)`, `jnp.linalg.norm(v)`, `y.mean()`)."""
    shape = model.shape(e, scope)
    if shape is not None and shape.rank == 0:
        return True
    if isinstance(e, cst.Call):
        qn = model.qn(e.func, scope)
        has_axis = keyword(e, "axis") is not None or (len(e.args) > 1 and e.args[1].keyword is None)
        if qn in _WHOLE_REDUCTIONS and not has_axis:
            return True
        if qn is None and isinstance(e.func, cst.Attribute) and not e.args and \
                e.func.attr.value in ("sum", "mean", "max", "min", "prod", "any", "all", "std", "var", "item"):
            return True
    return _scalar_value(model, e, scope, depth)


# jax functions that build an array of a given size from scalar arguments (not elementwise).
_SIZED_CREATORS = frozenset("jax.numpy." + n for n in (
    "zeros ones full empty arange linspace logspace geomspace eye identity tri tril triu indices meshgrid "
    "broadcast_to tile repeat diag vander mgrid ogrid"
).split())
_SCALAR_ANNOTATIONS = frozenset({"int", "float", "bool", "complex"})


def _scalar_value(model: "ComputedArrayView", e: cst.CSTNode, scope: "Scope", depth: int) -> bool:
    """A Python number, or jax math of scalars only (`jnp.array(eos_id)`, `lgamma(jnp.asarray(n + 1))`)."""
    if depth > 8:
        return False
    if isinstance(e, (cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.UnaryOperation):
        return _scalar_value(model, e.expression, scope, depth + 1)
    if isinstance(e, cst.BinaryOperation):
        return _scalar_value(model, e.left, scope, depth + 1) and _scalar_value(model, e.right, scope, depth + 1)
    shape = model.shape(e, scope)
    if shape is not None and shape.rank == 0:
        return True
    if isinstance(e, cst.Call):
        qn = model.qn(e.func, scope)
        if qn is None or qn in _SIZED_CREATORS or qn.startswith("jax.random.") or \
                not qn.startswith(("jax.numpy.", "jax.scipy.special.", "jax.lax.", "jax.nn.")):
            return False
        values = [a.value for a in e.args if a.keyword is None or a.keyword.value in ("x", "a", "object")]
        return bool(values) and not any(a.star for a in e.args) and \
            all(_scalar_value(model, v, scope, depth + 1) for v in values)
    if isinstance(e, cst.Name):
        found = model.bindings_at(e, scope)
        if found is None or not found[1]:
            return False
        owner = found[0]
        for b in found[1]:
            if b.kind == "param":
                if not isinstance(owner, Function) or not _python_number_param(owner, b.name):
                    return False
                continue
            if b.kind != "assign" or b.index is not None or b.value is None:
                return False
            if not known_scalar(model, b.value, owner, depth + 1):
                return False
        return True
    return False


def _python_number_param(fn: Function, name: str) -> bool:
    """A parameter annotated `int`/`float`/`bool` or defaulting to a number literal."""
    node = fn.param_nodes.get(name)
    if node is None:
        return False
    ann = node.annotation.annotation if node.annotation is not None else None
    if isinstance(ann, cst.Name):
        return ann.value in _SCALAR_ANNOTATIONS
    default = node.default
    if isinstance(default, cst.UnaryOperation):
        default = default.expression
    return ann is None and isinstance(default, (cst.Integer, cst.Float))


# Work far above the size of the value (sorting, searching, factorisations and solves): recomputing
# it in every iteration of a loop costs more than keeping it (JF203 stays silent, its codemod offers
# no fix).
COSTLY = frozenset("jax.numpy." + n for n in (
    "sort argsort lexsort unique unique_values unique_counts unique_inverse unique_all searchsorted "
    "partition argpartition median percentile quantile nanmedian nanpercentile nanquantile digitize "
    "histogram sort_complex setdiff1d intersect1d union1d isin in1d"
).split()) | frozenset({"jax.lax.sort", "jax.lax.sort_key_val", "jax.lax.top_k", "jax.lax.approx_max_k",
                        "jax.lax.approx_min_k"})
COSTLY_PREFIXES = ("jax.numpy.linalg.", "jax.scipy.linalg.", "jax.lax.linalg.", "jax.scipy.sparse.")


def costly_to_recompute(model: "ComputedArrayView", value: cst.CSTNode, scope: "Scope") -> bool:
    """`value` runs a sort, search, factorisation or solve (a norm is a reduction: not costly)."""
    for n in walk(value):
        if isinstance(n, cst.Call):
            qn = model.qn(n.func, scope)
            if qn is not None and (qn in COSTLY or qn.startswith(COSTLY_PREFIXES)) and \
                    qn not in ("jax.numpy.linalg.norm", "jax.numpy.linalg.vector_norm"):
                return True
    return False


__all__ = ["ComputedArrayView", "computed_array", "known_scalar", "costly_to_recompute", "COSTLY", "COSTLY_PREFIXES"]
