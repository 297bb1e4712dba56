"""JF302 jit-of-fresh-callable."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.traced import TracedAnalysis
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.rules.jf301_jit_in_loop import _loop_of_def, compiling_call, describe_callable
from jaxfuse_lint.targets import CPU_MEASURED, Claim, Evidence, tracing


class JitOfFreshCallable(Rule):
    code = "JF302"
    name = "jit-of-fresh-callable"
    summary = "`jax.jit` of a lambda/partial/inner def inside a function, called or returned (recompiles per call)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, inside a function body (not in a loop — that is JF301), `jax.jit`
    applied to a lambda, a `functools.partial`, or a function defined in that
    body, when the jitted result is called, returned, or bound to a local name
    that is called or returned.

    ## Why is this bad?
    JAX caches compiled programs per callable object. A lambda, a partial or an
    inner function is a new object every time the enclosing function runs, so
    every call of the enclosing function traces and compiles from scratch.
    Compilation takes milliseconds to minutes; the computation often takes
    microseconds.

    A function memoised with `functools.cache`/`lru_cache` builds its jitted
    callable once per key and is not reported. Test functions run once too; if
    their inline `jax.jit(lambda ...)` calls are noise for you, silence the rule
    there with `per-file-ignores` (`"tests/*" = ["JF302"]`).

    ## Example
    ```python
    def apply_once(x):
        return jax.jit(lambda v: v * 2 + 1)(x)
    ```

    ## Use instead
    ```python
    @jax.jit
    def _double_plus_one(v):
        return v * 2 + 1

    def apply_once(x):
        return _double_plus_one(x)
    ```
    Values the inner function closed over become arguments (with
    `static_argnames` for Python values that select code paths).

    ## Fix safety
    An unsafe fix (applied with `--unsafe-fixes`) when the jitted callable is a
    lambda or a `functools.partial` that reads nothing of the enclosing function
    (only its own parameters, module-level names and builtins): the jitted
    callable is bound once at module level, just before the function
    (`_apply_once_jit = jax.jit(lambda v: v * 2 + 1)`), and the function calls
    that. Unsafe because module-level values the callable reads are then
    captured at its first trace instead of on every call, and the compiled
    program lives as long as the module. (Dtypes do not change: the same
    callable is traced with the same arguments.) An inner `def`, or a callable that
    closes over the function's locals, gets no fix: moving it is a refactoring
    (make those values arguments, static ones with `static_argnames`).
    """
    backends = (
        Claim(
            "`jax.jit` of a callable created on every call (a lambda, a closure, a `partial`) recompiles on "
            "every call",
            gpu=tracing("the cache is JAX's, keyed by the callable's identity, whatever the backend"),
            cpu=Evidence(True, CPU_MEASURED + ": counted with `verify --call`"),
            tpu=tracing("the cache is JAX's, keyed by the callable's identity, whatever the backend"),
        ),
    )
    valid = (
        "import jax, functools\n@functools.lru_cache\ndef make(k):\n    return jax.jit(lambda v: v * k)\n",
        "import jax\ndef f(v):\n    return v + 1\ndef g(x):\n    return jax.jit(f)(x)\n",
        "import jax\nclass M:\n    def __init__(self):\n        self.apply = jax.jit(lambda v: v * 2)\n",
        "import jax\nsquare = jax.jit(lambda v: v * v)\n",
    )
    invalid = (
        "import jax\ndef g(x):\n    return jax.jit(lambda v: v * 2)(x)\n",
        "import jax\nfrom functools import partial\ndef g(x, k):\n    def inner(v):\n        return v * k\n"
        "    f = jax.jit(inner)\n    return f(x)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        for site in model.index.calls:
            scope = site.scope
            if site.loop is not None or not isinstance(scope, Function) or model.is_traced_scope(scope):
                continue
            found = compiling_call(model, site.call, scope)
            if found is None or _memoised(model, scope):
                continue
            transform, target = found
            what, fresh = describe_callable(model, target, scope, None)
            if not fresh:
                continue
            if not _used_per_call(model, site.call, scope):
                continue
            yield self._violation(site.call, transform, what, scope)
        for fn in model.index.functions:
            parent = fn.parent
            if not isinstance(fn.node, cst.FunctionDef) or not isinstance(parent, Function):
                continue
            if model.is_traced_scope(parent) or _loop_of_def(model, fn) is not None or _memoised(model, parent):
                continue
            for dec in fn.node.decorators:
                t = TracedAnalysis(model).transform_of(dec.decorator, parent)
                if t is not None and t[0] in COMPILING and _name_used_per_call(model, fn.name, parent):
                    yield self._violation(dec.decorator, t[0], f"`{fn.name}`, defined inside `{parent.display_name}`", parent)

    def _violation(self, node, transform, what, scope) -> Violation:
        return Violation(
            node,
            message(
                f"`{transform}` of {what}: a new callable on every call of `{scope.display_name}`, so each call "
                "traces and compiles again; jit a module-level function once and call that",
            ),
            data={"transform": transform, "scope": scope},
        )


_CACHING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache", "functools.cached_property"})


def _memoised(model: SemanticModel, scope: Function) -> bool:
    """A function behind `functools.cache`/`lru_cache` builds its jitted callable once per key."""
    node = scope.node
    if not isinstance(node, cst.FunctionDef):
        return False
    for dec in node.decorators:
        expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
        qn = model.qn(expr, scope.parent)
        if qn in _CACHING_DECORATORS or (qn or "").endswith(("lru_cache", ".cache", "cached_property")):
            return True
    return False


def _used_per_call(model: SemanticModel, call: cst.Call, scope: Function) -> bool:
    parent = model.parent(call)
    if isinstance(parent, cst.Call) and parent.func is call:
        return True
    if isinstance(parent, cst.Return):
        return True
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return _name_used_per_call(model, parent.targets[0].target.value, scope)
    return False


def _name_used_per_call(model: SemanticModel, name: str, scope: Function) -> bool:
    for read in scope.reads:
        if read.name.value != name:
            continue
        parent = model.parent(read.name)
        if isinstance(parent, cst.Call) and parent.func is read.name:
            return True
        if isinstance(parent, cst.Return):
            return True
    return False


RULE = JitOfFreshCallable
