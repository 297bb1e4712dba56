"""The calls that run a function through a transform route: `jax.jit(f)(x)`; `g = jax.jit(f)` then
every `g(...)`; a decorated `f` called by name. What a route's calls pass decides what the transform
traces (jit traces every argument a call passes, by position or by keyword, and none it leaves to
its default), and whether the route runs at all (model/evidence.py judges each call against the
function's signature)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.routes import ROUTES
from jaxfuse_lint.model.traced import positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.traced import TraceReason

# Transforms whose result takes the arguments the function takes (a call of it can be checked
# against the function's signature).
SAME_SIGNATURE = frozenset({
    "jax.jit", "jax.experimental.pjit.pjit", "jax.pmap", "jax.vmap", "jax.grad", "jax.value_and_grad",
    "jax.jacfwd", "jax.jacrev", "jax.hessian", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint",
    "jax.named_call", "jax.make_jaxpr", "jax.experimental.shard_map.shard_map", "jax.shard_map",
    "equinox.filter_jit", "equinox.filter_vmap", "equinox.filter_pmap", "equinox.filter_grad",
    "equinox.filter_value_and_grad", "equinox.filter_checkpoint",
})
_PARTIALS = frozenset(n for n, r in ROUTES.items() if r.kind == "partial")


def route_calls(model, fn: "Function", r: "TraceReason") -> list[tuple[cst.Call, "Scope", bool]] | None:
    """The calls that run fn through transform route r (a decorator or a transform call), each with
    whether it binds `self`; None when they are not all known (the transformed callable escapes:
    passed, returned, stored) or the transform changes the signature."""
    m = model
    if r.kind == "decorator":
        if not isinstance(fn.node, cst.FunctionDef):
            return None
        if any(m.qn(decorator_func(d.decorator), fn.parent or m.index.scope) not in SAME_SIGNATURE | _PARTIALS
               for d in fn.node.decorators):
            return None
        if fn.cls is None and _escapes(m, fn):
            return None
        return [(c, s, b) for c, s, b in _calls_of(m, fn) if not any(a is fn.node for a in m.ancestors(c))]
    if r.kind != "transform":
        return None
    found = transform_calls(m, r.node)
    return None if found is None else [(c, s, r.bound_method) for c, s in found]


def _escapes(model, fn: "Function") -> bool:
    """Whether the module reads fn's name other than to call it (passes, returns, stores it)."""
    m = model
    for read in m.index.reads_named(fn.name):
        parent = m.parent(read.name)
        if isinstance(parent, cst.Call) and parent.func is read.name:
            continue
        fns = m.functions_at(read.name, read.scope)
        if fns is None:
            one = m.function_named(read.name.value, read.scope)
            fns = [one] if one is not None else []
        if fn in fns:
            return True
    return False


def _calls_of(model, fn: "Function") -> list[tuple[cst.Call, "Scope", bool]]:
    """The module's calls of fn itself, each with whether it binds `self` (resolved once per model)."""
    calls = model.__dict__.get("_route_calls_of")
    if calls is None:
        calls = model.__dict__["_route_calls_of"] = {}
        analysis = model.traced_analysis()
        for site in model.index.calls:
            for callee, bound in analysis.callables(site.call.func, site.scope, direct_only=True):
                calls.setdefault(id(callee), []).append((site.call, site.scope, bound))
    return calls.get(id(fn), [])


def transform_calls(model, call: cst.CSTNode) -> list[tuple[cst.Call, "Scope"]] | None:
    """The calls that run what a transform call makes (`jax.jit(f)(x)`; `g = jax.jit(f)` then every
    `g(...)`; through `jax.jit(jax.vmap(f))`): None when they are not all known (the result is
    passed, returned or stored, or the transform changes the signature)."""
    m = model
    if not isinstance(call, cst.Call) or m.qn(call.func, m.scope_of(call)) not in SAME_SIGNATURE:
        return None
    outer = call
    while True:  # `jax.jit(jax.vmap(f))`: the outermost transform is what is called
        arg = m.parent(outer)
        holder = m.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(holder, cst.Call) and holder.func is not outer and positional(holder, 0) is outer and \
                m.qn(holder.func, m.scope_of(holder)) in SAME_SIGNATURE:
            outer = holder
            continue
        break
    parent = m.parent(outer)
    if isinstance(parent, cst.Call) and parent.func is outer:
        return [(parent, m.scope_of(parent))]
    if not (isinstance(parent, cst.Assign) and parent.value is outer and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return None
    name = parent.targets[0].target.value
    out = []
    for read in m.index.reads_named(name):
        found = m.bindings_at(read.name, read.scope)
        if found is None or not any(b.node is parent for b in found[1]):
            continue
        holder = m.parent(read.name)
        if isinstance(holder, cst.Call) and holder.func is read.name:
            out.append((holder, read.scope))
        else:
            return None  # passed, returned, stored: called where this module cannot see
    return out


def decorator_func(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`jax.jit` for `@jax.jit`, `@jax.jit(...)` and `@partial(jax.jit, ...)`."""
    if isinstance(expr, cst.Call):
        inner = positional(expr, 0)
        if isinstance(expr.func, (cst.Name, cst.Attribute)) and \
                (expr.func.value if isinstance(expr.func, cst.Name) else expr.func.attr.value) == "partial" \
                and inner is not None:
            return inner
        return expr.func
    return expr


__all__ = ["SAME_SIGNATURE", "decorator_func", "route_calls", "transform_calls"]
