"""Memoised compilation: a `jax.jit(...)` evaluated once per key of a cache.

    if key not in cache:                      fn = cache.get(key)
        cache[key] = jax.jit(make(key))       if fn is None:
                                                  fn = jax.jit(make(key)); cache[key] = fn
    cache.setdefault(key, jax.jit(...))       @functools.lru_cache
                                              def compiled(key): ... jax.jit(...) ...

Inside a loop these compile once per key, not once per iteration: the loop rules
(JF301) must not report them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.scopes import walk

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.view import ModelView

CACHING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})


def memoised_function(model: "ModelView", fn: "Function") -> bool:
    """A def behind `functools.cache` / `lru_cache` (or a project's `*lru_cache` / `*.cache`)."""
    node = fn.node
    if not isinstance(node, cst.FunctionDef):
        return False
    for dec in node.decorators:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        qn = model.qn(expr, fn.parent) if fn.parent is not None else None
        if qn in CACHING_DECORATORS or (qn or "").endswith(("lru_cache", ".cache", "cached_property")):
            return True
        # A project's own memoising decorator: `@compile_cache`, `@cached`, `@memoize`.
        last = (qn or (expr.value if isinstance(expr, cst.Name) else "")).rsplit(".", 1)[-1].lower()
        if "cache" in last or last.startswith("memoi"):
            return True
    return False


def _is_unset_test(test: cst.BaseExpression, target: str) -> bool:
    """`X is None`, `not X`, `X is None or ...` for the target's text X."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _is_unset_test(test.left, target) or _is_unset_test(test.right, target)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _text(test.expression) == target
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        return isinstance(comp.operator, cst.Is) and isinstance(comp.comparator, cst.Name) \
            and comp.comparator.value == "None" and _text(test.left) == target
    return False


def _text(e: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(e).strip()


def _built_once_into_state(model: "ModelView", call: cst.Call, scope: "Scope") -> bool:
    """`if _fn is None: _fn = jax.jit(...)` where `_fn` is a `global`/`nonlocal` of the
    function or an attribute (`self._fn`): built on the first call only, a cache."""
    from jaxfuse_lint.model.scopes import Function

    parent = model.parent(call)
    if not isinstance(parent, cst.Assign) or parent.value is not call or len(parent.targets) != 1:
        return False
    target = parent.targets[0].target
    if isinstance(target, cst.Name):
        if not (isinstance(scope, Function) and (target.value in scope.globals or target.value in scope.nonlocals)):
            return False
    elif not isinstance(target, cst.Attribute):
        return False
    text = _text(target)
    for anc in model.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(anc, cst.If) and _is_unset_test(anc.test, text):
            return True
    return False


def _same(model: "ModelView", a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return model.module.code_for_node(a).strip() == model.module.code_for_node(b).strip()


def _missing_tests(model: "ModelView", test: cst.BaseExpression) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(container, key) pairs for tests that hold when the key is not cached yet:
    `key not in cache`, `not (key in cache)`, `cache.get(key) is None`, `fn is None`
    (with `fn = cache.get(key)` before), joined with `or`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _missing_tests(model, test.left) + _missing_tests(model, test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and isinstance(test.expression, cst.Comparison) and len(test.expression.comparisons) == 1 \
            and isinstance(test.expression.comparisons[0].operator, cst.In):
        return [(_container(test.expression.comparisons[0].comparator), test.expression.left)]
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        if isinstance(comp.operator, cst.NotIn):
            return [(_container(comp.comparator), test.left)]
        if isinstance(comp.operator, cst.Is) and isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None":
            got = _get_call(test.left)
            if got is not None:
                return [got]
            if isinstance(test.left, cst.Name):
                return [("name", test.left)]  # resolved against `name = cache.get(key)` by the caller
    return []


def _container(e: cst.BaseExpression) -> cst.BaseExpression:
    """`cache.keys()` -> `cache`."""
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "keys" and not e.args:
        return e.func.value
    return e


def _get_call(e: cst.BaseExpression):
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "get" and e.args:
        return e.func.value, e.args[0].value
    return None


def compiled_once_per_key(model: "ModelView", call: cst.Call | cst.FunctionDef, scope: "Scope") -> bool:
    """Whether this jit call (or jit-decorated def) runs once per key of a cache rather than
    once per evaluation."""
    from jaxfuse_lint.model.scopes import Function

    parent = model.parent(call)
    # cache.setdefault(key, jax.jit(...)): a new wrapper per iteration at most, compiled only
    # when it is the one stored (the first time a key is seen).
    if isinstance(parent, cst.Arg):
        outer = model.parent(parent)
        if isinstance(outer, cst.Call) and isinstance(outer.func, cst.Attribute) and \
                outer.func.attr.value == "setdefault" and len(outer.args) >= 2 and outer.args[1] is parent:
            return True
    if isinstance(call, cst.Call) and _built_once_into_state(model, call, scope):
        return True
    # Inside a memoised function (at any depth of local functions).
    s = scope
    while s is not None:
        if isinstance(s, Function) and memoised_function(model, s):
            return True
        s = s.parent
    # if step is None: step = jax.jit(...)   (built on the first pass only, then reused)
    if isinstance(call, cst.Call) and _built_once_under_none_guard(model, call):
        return True
    # if key not in cache: cache[key] = jax.jit(...)   (directly, or through a local name)
    stored = _stored_in(model, call)
    if not stored:
        return False
    for anc in model.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) and anc is not call:
            return False
        if isinstance(anc, cst.If):
            for container, key in _missing_tests(model, anc.test):
                if container == "name":
                    pair = _name_from_get(model, anc, key)
                    if pair is None:
                        continue
                    container, key = pair
                if any(_same(model, container, c) and _same(model, key, k) for c, k in stored):
                    return True
    return False


def _built_once_under_none_guard(model: "ModelView", call: cst.Call) -> bool:
    """`name = jax.jit(...)` inside `if name is None:` (or `if not name:`), or under a flag the branch
    clears (`if need_compile: ...; need_compile = False`), in a loop body: the wrapper is built on the
    first iteration (or when the flag asks for a new program) and the name holds it for the others."""
    parent = model.parent(call)
    if not isinstance(parent, cst.Assign) or parent.value is not call or len(parent.targets) != 1 \
            or not isinstance(parent.targets[0].target, cst.Name):
        return False
    name = parent.targets[0].target.value
    guarded = False
    for anc in model.ancestors(call):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False  # a local of the function: unset again on its next call
        if isinstance(anc, (cst.For, cst.While)):
            # The name outlives the loop's iterations: set on the first, kept by the others (unless the
            # loop body unsets it again).
            return guarded and not any(
                isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name) and n.target.value == name
                and n is not parent.targets[0] for n in walk(anc.body))
        if isinstance(anc, cst.If) and (_tests_unset(anc.test, name) or _clears_its_flag(anc)):
            guarded = True
    return False


def _clears_its_flag(branch: cst.If) -> bool:
    """`if need_compile: step = jax.jit(...); need_compile = False`: the branch runs when its flag asks for
    a new program (the static values it closes over changed) and clears the flag, so the wrapper is
    rebuilt only when a new compilation is due anyway."""
    if not isinstance(branch.test, cst.Name) or not isinstance(branch.body, cst.IndentedBlock):
        return False
    flag = branch.test.value
    for stmt in branch.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == flag \
                        and isinstance(small.value, cst.Name) and small.value.value == "False":
                    return True
    return False


def _tests_unset(test: cst.BaseExpression, name: str) -> bool:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return isinstance(test.expression, cst.Name) and test.expression.value == name
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        c = test.comparisons[0]
        return isinstance(c.operator, cst.Is) and isinstance(test.left, cst.Name) and test.left.value == name \
            and isinstance(c.comparator, cst.Name) and c.comparator.value == "None"
    return False


def _stored_in(model: "ModelView", call: cst.Call | cst.FunctionDef) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(container, key) of `container[key] = <call>`, or `name = <call>` (or a decorated
    `def name`) followed in the same block by `container[key] = name`."""
    out = []
    names = []
    if isinstance(call, cst.FunctionDef):
        names.append(call.name.value)
        stmt = call
    else:
        parent = model.parent(call)
        if not isinstance(parent, cst.Assign):
            return []
        for t in parent.targets:
            target = t.target
            if isinstance(target, cst.Subscript) and len(target.slice) == 1 and \
                    isinstance(target.slice[0].slice, cst.Index):
                out.append((target.value, target.slice[0].slice.value))
            elif isinstance(target, cst.Name):
                names.append(target.value)
        stmt = model.parent(parent)
    if names:
        block = model.parent(stmt) if stmt is not None else None
        if block is not None and hasattr(block, "body"):
            stmts = list(block.body)
            if stmt in stmts:
                for later in stmts[stmts.index(stmt) + 1:]:
                    if not isinstance(later, cst.SimpleStatementLine):
                        continue
                    for small in later.body:
                        if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) \
                                and small.value.value in names:
                            for t in small.targets:
                                target = t.target
                                if isinstance(target, cst.Subscript) and len(target.slice) == 1 and \
                                        isinstance(target.slice[0].slice, cst.Index):
                                    out.append((target.value, target.slice[0].slice.value))
    return out


def _name_from_get(model: "ModelView", if_node: cst.If, name: cst.Name):
    """`fn = cache.get(key)` in the statement right before `if fn is None:`."""
    block = model.parent(if_node)
    if block is None or not hasattr(block, "body"):
        return None
    stmts = list(block.body)
    if if_node not in stmts:
        return None
    i = stmts.index(if_node)
    if i == 0 or not isinstance(stmts[i - 1], cst.SimpleStatementLine):
        return None
    for small in stmts[i - 1].body:
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
                and small.targets[0].target.value == name.value:
            return _get_call(small.value)
    return None


# -- a jitted callable kept for reuse ---------------------------------------------------------------

_STORING_METHODS = frozenset({"append", "add", "insert", "appendleft", "put", "setdefault", "update"})


def kept_for_reuse(model: "ModelView", node: cst.Call | cst.FunctionDef, scope: "Scope",
                   loops: list[cst.CSTNode]) -> cst.CSTNode | None:
    """Where a jitted callable built inside `loops` (a `jax.jit(...)` call, or a jit-decorated def)
    is kept beyond its iteration for later calls, or None (called and dropped): the element of a
    comprehension (`[jax.jit(partial(f, c)) for c in cs]`), yielded, returned, stored on an object
    (`self.fns[k] = ...`), or stored into a container that outlives the loop (a global, an
    attribute, a local the function returns or reads after the loop) — directly or through a local
    name (`f = jax.jit(...); fns.append(f)`)."""
    names: list[str] = []
    if isinstance(node, cst.FunctionDef):
        names.append(node.name.value)
        stmt: cst.CSTNode | None = node
    else:
        keeper = _keeps(model, node, scope, loops)
        if keeper is not None:
            return keeper
        parent = model.parent(node)
        if isinstance(parent, cst.Assign) and parent.value is node:
            names.extend(t.target.value for t in parent.targets if isinstance(t.target, cst.Name))
        stmt = model.parent(parent) if isinstance(parent, cst.Assign) else None
    if not names or stmt is None or not loops:
        return None
    from jaxfuse_lint.model.scopes import Function

    outer = loops[-1]
    for name in names:
        for read in model.index.reads_named(name, scope if isinstance(scope, Function) else None):
            reaching = model.bindings_at(read.name, read.scope)
            if reaching is None or not any(b.node is stmt or b.node is model.parent(node) for b in reaching[1]):
                continue  # another binding of the name (an identical block's own)
            if not any(a is outer for a in model.ancestors(read.name)):
                return read.name  # read after the loop (returned, handed on): the last one built is kept
            keeper = _keeps(model, read.name, scope, loops)
            if keeper is not None:
                return keeper
    return None


def _keeps(model: "ModelView", value: cst.CSTNode, scope: "Scope", loops: list[cst.CSTNode]) -> cst.CSTNode | None:
    """The node that keeps `value` beyond its iteration, where one does."""
    parent = model.parent(value)
    if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) and parent.elt is value:
        return parent
    if isinstance(parent, cst.DictComp) and parent.value is value:
        return parent
    if isinstance(parent, (cst.Yield, cst.Return)):
        return parent
    if isinstance(parent, cst.Arg) and parent.value is value:
        call = model.parent(parent)
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value in _STORING_METHODS and _outlives(model, call.func.value, scope, loops):
            return call
    if isinstance(parent, cst.Element) or isinstance(parent, cst.DictElement) and parent.value is value:
        outer = model.parent(parent)  # `fns.append((name, jax.jit(...)))`, `d[k] = {"f": jax.jit(...)}`
        if isinstance(outer, (cst.Tuple, cst.List, cst.Dict)):
            return _keeps(model, outer, scope, loops)
    if isinstance(parent, cst.Assign) and parent.value is value:
        for t in parent.targets:
            target = t.target
            if isinstance(target, cst.Attribute):
                return parent  # `self.step = jax.jit(...)`: on an object
            if isinstance(target, cst.Subscript) and _outlives(model, target.value, scope, loops):
                return parent
    return None


def _outlives(model: "ModelView", container: cst.BaseExpression, scope: "Scope", loops: list[cst.CSTNode]) -> bool:
    """A container that lives beyond the loop: an attribute (`self.cache`), a name bound outside
    the function, or a local read after the loop (returned, handed on)."""
    from jaxfuse_lint.model.scopes import Function

    while isinstance(container, cst.Subscript):
        container = container.value  # `tables[i][k] = ...`
    if isinstance(container, cst.Attribute):
        return True
    if not isinstance(container, cst.Name):
        return False
    found = model.lookup(container.value, scope)
    if found is None:
        return False
    if found[0] is not scope or not isinstance(scope, Function):
        return True  # a global or an enclosing function's
    outer = loops[-1] if loops else None
    for read in model.index.reads_named(container.value, scope):
        if model.lookup(container.value, read.scope) != found:
            continue
        if outer is not None and not any(a is outer for a in model.ancestors(read.name)):
            return True
    return False
