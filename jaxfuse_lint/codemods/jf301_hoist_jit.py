"""JF301: jit once, before the loop, instead of on every iteration.

    while i < n:                                     step_jit = jax.jit(step)
        i = jax.jit(lambda x: step(x))(i)     ->     while i < n:
                                                         i = step_jit(i)

`jax.jit(partial(f))` and `jax.jit(lambda x: f(x))` (a lambda that only forwards
its arguments) become `jax.jit(f)`. The jitted callable is bound to a fresh name
just before the loop (or before the statement holding a comprehension) and the
call inside the loop uses that name.

Safe when nothing the callable (and the transform's options) reads is bound
inside the loop, and every name it reads is already bound before the loop. A
callable that reads a loop variable gets no fix: hoisted, it would be traced
once, with the first iteration's value baked in.

Dtype condition: none. The same callable is traced with the same arguments; Python scalars
stay weakly typed, arrays keep their dtypes.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.codemods._lookups import containing_block, document_order, free_name_nodes, is_inside
from jaxfuse_lint.codemods._names import fresh_name
from jaxfuse_lint.codemods._statements import assign, remove_statement, replace_within
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.model.fresh_callables import call_bound_to, compiles_per_application, describe_callable
from jaxfuse_lint.model.scopes import PYTHON_LOOPS, Function

CODE = "JF301"


def build_fix(violation, model, settings):
    data = violation.data
    site = data.get("site")
    if site is None or "decorated" in data:
        return None  # `@jax.jit` on a def inside the loop: moving the def is a refactoring
    call: cst.Call = site.call
    loop = site.loop
    scope = site.scope
    target = data.get("target")
    if target is None or not isinstance(call, cst.Call) or any(a.star for a in call.args):
        return None
    if data.get("fresh", False) is None:
        return None  # `jax.jit(make())`: once before the loop, `make()` would run once, not every time
    # Where the hoisted binding goes: before the loop statement, or before the statement
    # that holds the comprehension.
    anchor = loop if isinstance(loop, (cst.For, cst.While)) else model.statement_of(loop)
    if anchor is None or containing_block(model, anchor) is None:
        return None
    if not isinstance(loop, (cst.For, cst.While)) and not _evaluated_unconditionally(model, loop, anchor):
        return None

    new_target, base = _simplify(model, target, scope)
    if new_target is None:
        return None
    if _would_be_jf302(model, new_target, scope, data.get("transform")):
        # Hoisted before the loop but still inside the function, the callable would be a new
        # object on every call of the function: a JF302 finding. A fix must not create a
        # finding of another rule: fix both (jit once at module level, JF302's unsafe fix)
        # or neither.
        if new_target is not target:
            return None  # (not reached: a simplified target is a plain name, never fresh)
        from jaxfuse_lint.codemods.jf302_hoist_jit_to_module import UNSAFE, hoist_to_module

        hoisted = hoist_to_module(model, call, scope)
        if hoisted is None:
            return None
        name, edits = hoisted
        return plan(False, f"Jit once at module level as `{name}` and call that; out of the loop and out of "
                           f"`{scope.display_name}`; {UNSAFE}", edits)
    jit_expr = replace_within(call, {target: new_target}) if new_target is not target else call
    # Every name the jit expression reads must be bound outside the loop, before it.
    order = document_order(model)
    names = _option_names(call, target)
    if isinstance(new_target, cst.Lambda):
        if not _lambda_free_names_stable(model, new_target, scope, loop, anchor, order):
            return None
    else:
        names += free_name_nodes(new_target)
    for n in names:
        if n.value == "<scope>" or not _stable_before(model, n.value, scope, loop, anchor, order):
            return None
    moved = _movable_assignment(model, call, scope, loop)
    if moved is not None:
        # `h = jax.jit(f)` inside the loop: move the statement itself out of the loop.
        stmt, name = moved
        edits: dict[cst.CSTNode, object] = {}
        if remove_statement(model, stmt, edits):
            new_stmt = stmt.with_changes(body=[stmt.body[0].with_changes(value=jit_expr)],
                                         leading_lines=[ln for ln in stmt.leading_lines if ln.comment is not None])
            what = "it" if new_target is target else "the callable it wraps"
            return plan(True, f"Move `{name} = ...` before the loop: jit once, call {what} many times",
                        {anchor: cst.FlattenSentinel([new_stmt, replace_within(anchor, edits)])})
    name = fresh_name(model, f"{base}_jit")
    new_stmt = assign(name, jit_expr)
    new_anchor = replace_within(anchor, {call: cst.Name(name)})
    what = "the lambda's target" if isinstance(target, cst.Lambda) and new_target is not target else "it"
    return plan(True, f"Jit once before the loop as `{name}` and call {what} there",
                {anchor: cst.FlattenSentinel([new_stmt, new_anchor])})


def _would_be_jf302(model, target, scope, transform: str | None = None) -> bool:
    """Whether `jax.jit(target)` in the body of `scope`, outside any loop, is a JF302 finding
    (the rule's own tests: a fresh callable in a plain function, or any callable given to a
    transform whose every application compiles on its own, `nnx.jit`)."""
    from jaxfuse_lint.model.compile_cache import memoised_function

    if not isinstance(scope, Function) or model.is_traced_scope(scope) or memoised_function(model, scope):
        return False
    if transform is not None and compiles_per_application(transform):
        return True
    if isinstance(target, cst.Name) and call_bound_to(model, target, scope) is not None:
        # `body = partial(f, k=k)` before the loop: `body_jit = jax.jit(body)` there is built once per call and
        # reused by the loop, which JF302 reports only where the function is shown to rebuild it.
        return False
    return describe_callable(model, target, scope, None)[1] is True


def _movable_assignment(model, call, scope, loop):
    """(statement, name) when the jit call is the whole value of `name = ...` in the loop, bound only there."""
    parent = model.parent(call)
    if not (isinstance(parent, cst.Assign) and parent.value is call and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return None
    stmt = model.parent(parent)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(loop, (cst.For, cst.While))):
        return None
    if not isinstance(model.parent(stmt), cst.IndentedBlock) or not is_inside(model, stmt, loop):
        return None
    # Directly in the loop body (not under an `if` inside it), so it runs on every iteration anyway.
    if model.parent(model.parent(stmt)) is not loop:
        return None
    name = parent.targets[0].target.value
    found = model.lookup(name, scope)
    if found is None or found[0] is not scope or len(found[1]) != 1:
        return None
    return stmt, name


def _evaluated_unconditionally(model, comp, anchor) -> bool:
    """The comprehension runs whenever its statement runs (not behind `if`/`and`/`or`/a lambda)."""
    for a in model.ancestors(comp):
        if a is anchor:
            return True
        if isinstance(a, (cst.IfExp, cst.BooleanOperation, cst.Lambda, cst.FunctionDef, *PYTHON_LOOPS)):
            return False
    return False


def _simplify(model, target, scope) -> tuple[cst.BaseExpression | None, str]:
    """`partial(f)` -> f; `lambda x: f(x)` -> f; otherwise the callable as it is. Plus a name stem."""
    if isinstance(target, cst.Call) and model.qn(target.func, scope) == "functools.partial":
        first = target.args[0] if target.args else None
        inner = first.value if first is not None and first.keyword is None and not first.star else None
        if inner is None:
            return None, ""
        if len(target.args) == 1:
            return inner, _stem(inner)
        return target, _stem(inner)
    if isinstance(target, cst.Lambda):
        fwd = _forwarded(target)
        if fwd is not None:
            return fwd, _stem(fwd)
        return target, "lambda"
    return target, _stem(target)


def _stem(e) -> str:
    if isinstance(e, cst.Name):
        return e.value
    if isinstance(e, cst.Attribute):
        return e.attr.value
    return "fn"


def _forwarded(lam: cst.Lambda) -> cst.BaseExpression | None:
    """`lambda a, b: f(a, b)` -> f (plain positional parameters forwarded in order, f not a parameter)."""
    p = lam.params
    if p.star_arg is not cst.MaybeSentinel.DEFAULT and p.star_arg is not None:
        return None
    if p.posonly_params or p.kwonly_params or p.star_kwarg is not None:
        return None
    params = list(p.params)
    if any(x.default is not None for x in params):
        return None
    body = lam.body
    if not isinstance(body, cst.Call) or not isinstance(body.func, (cst.Name, cst.Attribute)):
        return None
    if len(body.args) != len(params):
        return None
    for arg, param in zip(body.args, params):
        if (arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Name)
                or arg.value.value != param.name.value):
            return None
    names = {x.name.value for x in params}
    if any(n.value in names for n in free_name_nodes(body.func)):
        return None
    return body.func


def _option_names(call: cst.Call, target) -> list[cst.Name]:
    out = []
    for a in call.args:
        if a.value is target:
            continue
        out.extend(free_name_nodes(a.value))
    out.extend(free_name_nodes(call.func))
    return out


def _stable_before(model, name: str, scope, loop, anchor, order) -> bool:
    """`name`, read at the jit call, refers to bindings made outside the loop and before it."""
    found = model.lookup(name, scope)
    if found is None:
        return True  # a builtin
    owner, bindings = found
    for b in bindings:
        if is_inside(model, b.node, loop):
            return False  # the loop variable, or assigned in the loop body
        if b.kind == "param":
            continue
        if owner is scope and order.get(b.node, 0) > order.get(anchor, 0):
            return False  # bound only after the loop
    if owner is model.index.scope and owner is not scope:
        # A module variable read from a function: it must not be reassigned while the loop runs.
        if any(b.kind not in ("import", "def", "class") for b in bindings) and _rebound_elsewhere(model, name):
            return False
    if isinstance(owner, Function) and owner is not scope and len(bindings) > 1:
        return False
    return True


def _rebound_elsewhere(model, name: str) -> bool:
    return any(name in fn.globals for fn in model.index.functions)


def _lambda_free_names_stable(model, lam: cst.Lambda, scope, loop, anchor, order) -> bool:
    fn = model.index.function_of.get(lam)
    if fn is None:
        return False
    for r in fn.reads:
        found = model.lookup(r.name.value, r.scope)
        if found is not None and found[0] is fn:
            continue  # its own parameter
        if not _stable_before(model, r.name.value, scope, loop, anchor, order):
            return False
    return not fn.nested
