"""JF405 fix: the product of a static shape computed with `jnp` -> `math.prod(shape)`.

`jnp.array(x.shape).prod()`, `jnp.prod(x.shape)` and `jnp.prod(jnp.array(x.shape))` (also
with `jnp.asarray`, `jnp.product`) become `math.prod(x.shape)`: a Python int, which is what the
`reshape`/`zeros`/`range` that consumes it needs under `jit`. `import math` is added if missing.

Dtype condition: `jnp.prod` of a shape is a strongly typed int32 (int64 with x64) that wraps past
2**31; `math.prod` an exact, weakly typed Python int. Safe when the product only reaches places
that need a Python int, or such a place always runs when the function does (either way the
original fails at trace time for every input); a variable that is also used in arithmetic where
the original could have worked makes the fix unsafe.
"""
from __future__ import annotations

import weakref

import libcst as cst

from jaxfuse_lint.codemods._names import module_name_for
from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods.plan import FixPlan, ImportSpec
from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.scopes import Function, Scope
from jaxfuse_lint.model.shape_arithmetic import ShapeArithmetic, sink_arguments

CODE = "JF405"

_ARRAY_OF = frozenset({"jax.numpy.array", "jax.numpy.asarray"})
_PROD = frozenset({"jax.numpy.prod", "jax.numpy.product"})
_SHAPE_OF = frozenset({"jax.numpy.shape", "numpy.shape"})


def build_fix(violation, model: SemanticModel, settings) -> FixPlan | None:
    node = violation.node
    scope: Scope = violation.data["owner"]
    shape = shape_product_operand(model, node, scope)
    if shape is None:
        return None
    for name in violation.data.get("via", ()):
        if not _used_only_as_a_number(model, name, scope):
            return None
    found = module_name_for(model, "math", scope, "math")
    if found is None:
        return None
    math_name, add_import = found
    new = cst.Call(cst.Attribute(cst.Name(math_name), cst.Name("prod")), [cst.Arg(shape)])
    via = violation.data.get("via", ())
    safe = _every_read_reaches_a_sink(model, via)
    message = f"Replace with `{math_name}.prod(...)` (a static Python int)"
    if not safe:
        message += (f"; unsafe: `{via[0].value}` is also used as a number: `jnp.prod` gave a strongly typed int32 "
                    "(int64 with x64) that wraps past 2**31, `math.prod` an exact, weakly typed Python int "
                    "(`int8_array * n` stays int8)")
    return FixPlan(
        Applicability.SAFE if safe else Applicability.UNSAFE,
        message,
        {node: new},
        (ImportSpec("math"),) if add_import else (),
    )


def _every_read_reaches_a_sink(model: SemanticModel, via) -> bool:
    """Dtype condition: the product only ever reaches places that need a Python int (a reshape, `zeros`,
    a slice bound), or one of those always runs. There the original fails at trace time for every
    input, so nothing that worked can change. A variable holding it that is also used in arithmetic would change from a strongly
    typed int32 (wrapping past 2**31) to an exact, weakly typed Python int: unsafe."""
    if not via:
        return True
    reached, always = _sink_names(model)
    if id(via[0]) in always:
        return True  # the function can never have worked: nothing that worked changes
    for name in via:
        found = model.lookup(name.value, model.scope_of(name))
        if found is None:
            return False
        for read in model.index.reads_named(name.value, found[0]):
            other = model.lookup(read.name.value, read.scope)
            if other is not None and other[0] is found[0] and id(read.name) not in reached:
                return False
    return True


_SINK_NAMES: "weakref.WeakKeyDictionary[SemanticModel, tuple[set[int], set[int]]]" = weakref.WeakKeyDictionary()


def _sink_names(model: SemanticModel) -> tuple[set[int], set[int]]:
    """(ids of the names whose value reaches a place that needs a Python int in traced code,
    those of them where that place always runs when its function does), once per model (every
    fix asking it of every traced function made fixes quadratic in a file's findings)."""
    known = _SINK_NAMES.get(model)
    if known is None:
        finder = ShapeArithmetic(model)
        reached: set[int] = set()
        always: set[int] = set()
        for fn in model.traced.reasons:
            for _, sink, arg in sink_arguments(model, fn):
                for _, _, names in finder.find(arg, fn):
                    reached.update(id(n) for n in names)
                    if names and _always_runs(model, sink, fn):
                        always.update(id(n) for n in names)
        known = _SINK_NAMES[model] = (reached, always)
    return known


def _always_runs(model: SemanticModel, node: cst.CSTNode, fn: Function) -> bool:
    """node is evaluated whenever fn runs: its statement is a top-level statement of fn's body, after
    simple statements only (no earlier `return`, no branch or loop that could return first), and not
    inside a lambda, conditional expression or boolean operator."""
    stmt = model.statement_of(node)
    if not isinstance(fn.node, cst.FunctionDef) or not isinstance(fn.node.body, cst.IndentedBlock):
        return False
    body = list(fn.node.body.body)
    if stmt not in body:
        return False
    for earlier in body[:body.index(stmt)]:
        if not isinstance(earlier, cst.SimpleStatementLine) or any(
                isinstance(small, (cst.Return, cst.Raise)) for small in earlier.body):
            return False
    for a in model.ancestors(node):
        if a is stmt:
            return True
        if isinstance(a, (cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.GeneratorExp,
                          cst.SetComp, cst.DictComp)):
            return False
    return False


def shape_product_operand(model: SemanticModel, node: cst.CSTNode, scope: Scope) -> cst.BaseExpression | None:
    """S for `jnp.array(S).prod()`, `jnp.prod(S)`, `jnp.prod(jnp.array(S))`; S a static shape tuple."""
    if not isinstance(node, cst.Call) or not _single_argument(node):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "prod" and not node.args:
        inner = func.value
        if isinstance(inner, cst.Call) and model.qn(inner.func, scope) in _ARRAY_OF and len(inner.args) == 1 \
                and _single_argument(inner):
            operand = inner.args[0].value
            return operand if _static_shape_tuple(model, operand, scope) else None
        return None
    if model.qn(func, scope) in _PROD and len(node.args) == 1:
        operand = node.args[0].value
        if isinstance(operand, cst.Call) and model.qn(operand.func, scope) in _ARRAY_OF:
            if len(operand.args) != 1 or not _single_argument(operand):
                return None
            operand = operand.args[0].value
        return operand if _static_shape_tuple(model, operand, scope) else None
    return None


def _single_argument(call: cst.Call) -> bool:
    """No keywords and no unpacking (`dtype=`, `axis=`, `*args` change the meaning)."""
    return all(a.keyword is None and not a.star for a in call.args) and len(call.args) <= 1


def _static_shape_tuple(model: SemanticModel, e: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """A static tuple of ints: `x.shape`, `x.shape[1:]`, `jnp.shape(x)`, `(a.shape[0], 3)`, or a
    local name assigned one of those."""
    if model.kind(e, scope) is not Kind.STATIC:
        return False
    if isinstance(e, cst.Attribute):
        return e.attr.value == "shape"
    if isinstance(e, cst.Subscript):
        return (len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Slice)
                and _static_shape_tuple(model, e.value, scope, depth))
    if isinstance(e, cst.Call):
        return model.qn(e.func, scope) in _SHAPE_OF
    if isinstance(e, (cst.Tuple, cst.List)):
        return all(not isinstance(el, cst.StarredElement) and _int_like(el.value) for el in e.elements)
    if isinstance(e, cst.Name) and depth < 4:
        found = model.lookup(e.value, scope)
        if found is None or not isinstance(found[0], Function):
            return False
        owner, bindings = found
        return (len(bindings) == 1 and bindings[0].kind == "assign" and bindings[0].index is None
                and bindings[0].value is not None and _static_shape_tuple(model, bindings[0].value, owner, depth + 1))
    return False


def _int_like(e: cst.BaseExpression) -> bool:
    """An element of a shape tuple: a literal int, `x.shape[i]`, `len(x)`, or arithmetic on them."""
    if isinstance(e, cst.Integer):
        return True
    if isinstance(e, cst.Subscript):
        return isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape"
    if isinstance(e, cst.Attribute):
        return e.attr.value in ("size", "ndim")
    if isinstance(e, cst.Call):
        return isinstance(e.func, cst.Name) and e.func.value == "len"
    if isinstance(e, cst.BinaryOperation):
        return isinstance(e.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)) and \
            _int_like(e.left) and _int_like(e.right)
    return False


def _used_only_as_a_number(model: SemanticModel, name: cst.Name, scope: Scope) -> bool:
    """Every read of the variable uses it as a number (not `n.astype(...)`, `n[0]`, `n.at`)."""
    found = model.lookup(name.value, scope)
    if found is None:
        return False
    owner, bindings = found
    for read in model.index.reads_named(name.value, owner):
        other = model.lookup(read.name.value, read.scope)
        if other is None or other[0] is not owner:
            continue
        parent = model.parent(read.name)
        if isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is read.name:
            return False
    return True
