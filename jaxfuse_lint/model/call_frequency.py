"""How often a function of the module runs, as far as the module shows it.

A jit of a fresh callable costs a compilation per call of the function that makes
it; that is harm only when the function runs more than once. The evidence, read
from the module's own call sites:

    many     a call in a Python loop or comprehension (not one a cache guards),
             calls from two or more places, or the only caller is itself `many`
    once     the only call is at module or class level, or in a function that runs
             once; a function nothing calls that its framework runs once
             (`__init__` of a class instantiated nowhere in a loop, pytest's
             `test*` functions, methods of a `TestCase` subclass, and
             unittest/pytest set-up hooks)
    unknown  nothing calls it in the module, or it escapes (passed, stored, returned)

A call made while tracing (from a traced function) runs once per trace, not per
step: it is no evidence of `many`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.compile_cache import compiled_once_per_key, memoised_function
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.scopes import CallSite, ClassInfo, Function

if TYPE_CHECKING:
    from jaxfuse_lint.model.semantic import SemanticModel

MANY, ONCE, UNKNOWN = "many", "once", "unknown"
MAX_DEPTH = 4

# Run once by the framework that calls them (unittest / pytest set-up and tear-down hooks).
_HOOKS = frozenset({
    "setUp", "setUpClass", "setUpModule", "tearDown", "tearDownClass", "tearDownModule",
    "setup_method", "setup_class", "setup_module", "setup_function", "teardown_method",
    "teardown_class", "teardown_module", "teardown_function",
})


@dataclass(frozen=True)
class Frequency:
    kind: str
    # The evidence for `many`: the loop around a call, or the second call site.
    node: cst.CSTNode | None = None
    # "in a loop" / "from 2 places"; `via` names the caller when the evidence is one call away.
    how: str = ""
    via: Function | None = None


def call_sites(model: "SemanticModel", fn: Function) -> tuple[list[CallSite], bool]:
    """The module's calls of `fn` (by name, `self.method(...)`, `instance.method(...)`, and
    `Class(...)` for `__init__`), and whether `fn` escapes: read other than as the callee."""
    sites: list[CallSite] = []
    callees: set[int] = set()
    inst = instances(model)
    named = (fn.cls.name, fn.name) if fn.name == "__init__" and fn.cls is not None else (fn.name,)
    for site in model.index.calls_named(*named):  # a call of fn is spelled with one of these names
        func = site.call.func
        hit = False
        if isinstance(func, cst.Name):
            if fn.name == "__init__" and fn.cls is not None:
                hit = inst.class_named(func, site.scope) is fn.cls
            else:
                hit = func.value == fn.name and model.function_named(func.value, site.scope) is fn
        elif isinstance(func, cst.Attribute) and fn.cls is not None and func.attr.value == fn.name:
            hit = inst.instance_class(func.value, site.scope) is fn.cls or inst.class_named(func.value, site.scope) is fn.cls
        if hit:
            sites.append(site)
            callees.add(id(func))
    escapes = False
    for read in model.index.reads_named(fn.name):
        if id(read.name) in callees:
            continue
        if fn.cls is None and model.function_named(read.name.value, read.scope) is fn:
            escapes = True
            break
    if fn.cls is not None and not escapes:
        for node in model.index.attributes_named(fn.name):
            if id(node) not in callees:
                escapes = True  # `self.method` read, not called: passed or stored somewhere
                break
    return sites, escapes


def _runs_once_by_convention(model: "SemanticModel", fn: Function) -> bool:
    if fn.name in _HOOKS:
        return True
    if fn.name == "__init__":
        return True
    top = isinstance(fn.parent, ClassInfo) or not isinstance(fn.parent, Function)
    return top and (fn.name.startswith("test") or _in_test_case(model, fn.cls))


def _in_test_case(model: "SemanticModel", ci: ClassInfo | None, depth: int = 0) -> bool:
    """A method of a `unittest`/`absltest`/`parameterized`/`chex` `TestCase` subclass (its
    helpers included: the framework runs each test once)."""
    if ci is None or depth > 4 or not isinstance(ci.node, cst.ClassDef):
        return False
    inst = instances(model)
    for base in ci.node.bases:
        qn = model.qn(base.value, ci.parent) if ci.parent is not None else None
        text = qn or cst.Module([]).code_for_node(base.value)
        if text.endswith("TestCase") or _in_test_case(model, inst.class_named(base.value, ci.parent), depth + 1):
            return True
    return False


def frequency(model: "SemanticModel", fn: Function, depth: int = 0, seen: frozenset = frozenset()) -> Frequency:
    """How often `fn` runs per process, from the module's evidence."""
    if fn.is_lambda or depth > MAX_DEPTH or fn in seen:
        return Frequency(UNKNOWN)
    if model.is_traced(fn):
        return Frequency(ONCE)  # runs while tracing: once per compilation
    sites, escapes = call_sites(model, fn)
    live = [s for s in sites if not model.is_traced_scope(s.scope)]
    for s in live:
        if s.loop is not None and not compiled_once_per_key(model, s.call, s.scope):
            return Frequency(MANY, s.loop, "in a loop")
    if escapes:
        return Frequency(UNKNOWN)
    if len(live) >= 2:
        return Frequency(MANY, live[1].call, f"from {len(live)} places")
    if len(live) == 1:
        caller = live[0].scope
        if isinstance(caller, Function):
            if memoised_function(model, caller):
                return Frequency(ONCE)
            outer = frequency(model, caller, depth + 1, seen | {fn})
            if outer.kind == MANY:
                return Frequency(MANY, outer.node, outer.how, outer.via or caller)
            return outer
        return Frequency(ONCE)
    if sites:
        return Frequency(ONCE)  # called only while tracing
    return Frequency(ONCE) if _runs_once_by_convention(model, fn) else Frequency(UNKNOWN)
