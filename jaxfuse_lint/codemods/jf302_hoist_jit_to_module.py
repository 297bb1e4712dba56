"""JF302 (unsafe): jit a fresh callable once, at module level, instead of on every call.

    def apply_once(x):                            _apply_once_jit = jax.jit(lambda v: v * 2 + 1)
        return jax.jit(lambda v: v * 2 + 1)(x)
                                           ->
                                                  def apply_once(x):
                                                      return _apply_once_jit(x)

Only when the jitted callable (a lambda, a `functools.partial`, or a module-level
function given to `nnx.jit`, which compiles per application) and the
transform's options read nothing of the enclosing function — only module-level
names and builtins — so the same object can be built once at import time. Inner
`def`s are not moved (that is a refactoring). Unsafe: the module-level names the
callable reads are captured at its first trace instead of on every call, and the
compiled program now lives as long as the module.

Dtype condition: none (the same callable, the same arguments); unsafe for when module values
are read, not for dtypes.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.codemods._lookups import document_order, free_name_nodes
from jaxfuse_lint.codemods._names import fresh_name
from jaxfuse_lint.codemods._statements import assign, replace_within
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.model import keyword, positional
from jaxfuse_lint.model.api import TRANSFORMS

CODE = "JF302"


def build_fix(violation, model, settings):
    node = violation.node
    scope = violation.data.get("scope")
    if not isinstance(node, cst.Call) or scope is None or any(a.star for a in node.args):
        return None
    hoisted = hoist_to_module(model, node, scope)
    if hoisted is None:
        return None
    name, edits = hoisted
    return plan(False, f"Jit once at module level as `{name}` and call that; {UNSAFE}", edits)


# Why a callable jitted once at import time is not the same program as one jitted per call.
UNSAFE = ("unsafe: the module-level values the callable reads are taken when it is first traced, not on "
          "every call (a module value changed later is not seen), and the compiled program lives as long "
          "as the module")


def hoist_to_module(model, node: cst.Call, scope):
    """(name, edits): the jit call `node`, inside the function `scope`, bound once at module
    level just before the function's top-level statement, and `node` replaced by the name;
    None when the callable or the options read anything of the function. Also used by the
    JF301 fix, whose hoist out of a loop would otherwise leave a JF302 finding behind."""
    target = positional(node, 0) or keyword(node, "fun")
    if target is None:
        return None
    # A `partial` or a transform of a function (`jax.grad(f)`): built from names evaluated at import time.
    is_partial = isinstance(target, cst.Call) and (
        model.qn(target.func, scope) == "functools.partial" or model.qn(target.func, scope) in TRANSFORMS)
    # A module-level function given to a transform that compiles per application (`nnx.jit(step)`).
    named = isinstance(target, cst.Name)
    if not isinstance(target, cst.Lambda) and not is_partial and not named:
        return None
    anchor = _top_level_statement(model, node)
    if anchor is None:
        return None
    module_scope = model.index.scope
    order = document_order(model)
    # The jit call's own names (jax, partial, options, partial's arguments) are evaluated at import time.
    eager = [n for a in node.args if a.value is not target for n in free_name_nodes(a.value)]
    eager += free_name_nodes(node.func)
    if is_partial or named:
        eager += free_name_nodes(target)
    for n in eager:
        if n.value == "<scope>" or not _module_level(model, n.value, scope, module_scope, order, anchor, eager=True):
            return None
    if isinstance(target, cst.Lambda):
        fn = model.index.function_of.get(target)
        if fn is None or fn.nested:
            return None
        for r in fn.reads:
            found = model.lookup(r.name.value, r.scope)
            if found is not None and found[0] is fn:
                continue
            if not _module_level(model, r.name.value, r.scope, module_scope, order, anchor, eager=False):
                return None
    base = scope.name.replace("<lambda>", "lambda")
    if base.startswith("__") and base.endswith("__") and getattr(scope, "cls", None) is not None:
        base = f"{scope.cls.name.lower()}_{base.strip('_')}"  # `__call__` of `Pipeline`: `_pipeline_call_jit`
    name = fresh_name(model, f"_{base}_jit")
    new_stmt = assign(name, node)
    lines = list(anchor.leading_lines)
    # The comment block right above the def (no blank line between) stays with it; blank lines,
    # detached comments and a notebook's cell boundary stay above the new statement.
    k = len(lines)
    while k > 0 and lines[k - 1].comment is not None and not is_cell_boundary(lines[k - 1].comment.value):
        k -= 1
    above = lines[:k]
    body = list(model.module.body)
    previous = body[body.index(anchor) - 1] if anchor in body and body.index(anchor) > 0 else None
    starts_cell = bool(above) and above[-1].comment is not None and is_cell_boundary(above[-1].comment.value)
    if isinstance(previous, (cst.FunctionDef, cst.ClassDef)) and not starts_cell:
        # PEP 8: two blank lines between a function or class and the statement after it.
        trailing = 0
        while trailing < len(above) and above[len(above) - 1 - trailing].comment is None:
            trailing += 1
        above += [cst.EmptyLine(indent=False)] * max(0, 2 - trailing)
    new_stmt = new_stmt.with_changes(leading_lines=above)
    blank = [cst.EmptyLine(indent=False), cst.EmptyLine(indent=False)]
    new_anchor = replace_within(anchor, {node: cst.Name(name)}).with_changes(leading_lines=blank + lines[k:])
    return name, {anchor: cst.FlattenSentinel([new_stmt, new_anchor])}


def is_cell_boundary(comment: str) -> bool:
    """Whether a comment is the line a notebook's joined module has between two cells."""
    from jaxfuse_lint.parse.notebook import is_boundary_line

    return is_boundary_line(comment)


def _top_level_statement(model, node):
    n = node
    while n is not None:
        parent = model.parent(n)
        if isinstance(parent, cst.Module):
            return n if isinstance(n, (cst.FunctionDef, cst.ClassDef)) else None
        n = parent
    return None


def _module_level(model, name, scope, module_scope, order, anchor, eager: bool) -> bool:
    found = model.lookup(name, scope)
    if found is None:
        return True  # a builtin
    owner, bindings = found
    if owner is not module_scope:
        return False
    if eager:
        # Evaluated when the module runs the new statement: it must already be bound then.
        return all(order.get(b.node, 0) < order.get(anchor, 0) for b in bindings)
    return True
