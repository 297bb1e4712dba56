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

Over a project, the other modules' calls of the module's top-level functions count too (the
external map's `calls:` entries, project/summary.py and project/index.py): a call in a loop, or
from a function that runs many times, in another module is `many`; so are calls from two
places anywhere in the project.

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
    # Evidence from another module: a loop there calls it with the same arguments every time.
    same_arguments: bool = False


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


def frequency(model: "SemanticModel", fn: Function, depth: int = 0, seen: frozenset = frozenset(),
              traced=None, project: bool = True) -> Frequency:
    """How often `fn` runs per process, from the module's evidence and, with `project`, what the
    other modules of the project show (`model.external_calls`: their calls of this module's
    top-level functions). `traced`: the functions taken as traced (default: the model's)."""
    if fn.is_lambda or depth > MAX_DEPTH or fn in seen:
        return Frequency(UNKNOWN)
    is_traced = (lambda f: f in traced) if traced is not None else model.is_traced
    if is_traced(fn):
        return Frequency(ONCE)  # runs while tracing: once per compilation
    sites, escapes = call_sites(model, fn)
    live = [s for s in sites if not _traced_scope(s.scope, is_traced)]
    for s in live:
        if s.loop is not None and not compiled_once_per_key(model, s.call, s.scope):
            return Frequency(MANY, s.loop, "in a loop")
    elsewhere = external_calls(model, fn) if project else None
    if elsewhere is not None and elsewhere.kind == MANY:
        return elsewhere
    if escapes:
        return Frequency(UNKNOWN)
    if len(live) >= 2:
        return Frequency(MANY, live[1].call, f"from {len(live)} places")
    if len(live) == 1 and elsewhere is not None:
        return Frequency(MANY, live[0].call, f"here and {elsewhere.how}")
    if len(live) == 1:
        caller = live[0].scope
        if isinstance(caller, Function):
            if memoised_function(model, caller):
                return Frequency(ONCE)
            outer = frequency(model, caller, depth + 1, seen | {fn}, traced, project)
            if outer.kind == MANY:
                return Frequency(MANY, outer.node, outer.how, outer.via or caller)
            return outer
        return Frequency(ONCE)
    if elsewhere is not None:
        return elsewhere
    if sites:
        return Frequency(ONCE)  # called only while tracing
    return Frequency(ONCE) if _runs_once_by_convention(model, fn) else Frequency(UNKNOWN)


def _traced_scope(scope, is_traced) -> bool:
    """The nearest function around `scope` is traced (`model.is_traced_scope`)."""
    s = scope
    while s is not None and not isinstance(s, Function):
        s = s.parent
    return s is not None and is_traced(s)


def external_calls(model: "SemanticModel", fn: Function) -> Frequency | None:
    """What the project's other modules show of how often they call fn (a top-level function or
    `Class.method` of this module): `many` (in a loop, from a function that runs many times, or
    from several places), `once`, `unknown`; None when no other module calls it."""
    found = getattr(model, "external_calls", {}).get(fn.display_name)
    if not found:
        return None
    kind, _, how = found.partition("\n")
    if kind == "same":
        return Frequency(MANY, None, how, same_arguments=True)
    return Frequency(kind if kind in (MANY, ONCE, UNKNOWN) else UNKNOWN, None, how)


def library_function(model: "SemanticModel", fn: Function) -> bool:
    """A library's function that nothing in the checked project calls: its module is part of a
    package (`model.module_name`, set by the engine from the file's path), and neither the
    module nor another checked module calls it: how often it runs is up to the library's users."""
    name = getattr(model, "module_name", None)
    module = name() if callable(name) else name
    return bool(module) and "." in module and fn.display_name not in getattr(model, "external_calls", {})
