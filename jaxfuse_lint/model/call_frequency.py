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
    unknown  nothing calls it in the module, or it escapes (passed, stored, returned) where
             what runs it is not shown, or its only caller's count is itself unknown

A function that escapes is followed one step: handed to a mapping function
(`jax.tree_util.tree_map(f, tree)`, `map(f, xs)`) it runs once per leaf or element, `many`;
handed to a function of the module whose parameter is only ever called while tracing (`step =
make_train_step(net)` where `make_train_step` jits an inner function that calls its `model_fn`),
it runs only under that trace, `once` per compilation.

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
from jaxfuse_lint.model.premises import LineOf, assumed, disproved, proven
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
    # The evidence for `many`: the loop around a call, or the second call site; for `once` and
    # `unknown`, the line that shows it (the one call, the escape), where there is one.
    node: cst.CSTNode | None = None
    # "in a loop" / "from 2 places"; `via` names the caller when the evidence is one call away.
    # For `once` / `unknown`: why, as a phrase ("it runs while tracing", "nothing in the project
    # calls it").
    how: str = ""
    via: Function | None = None
    # Evidence from another module: a loop there calls it with the same arguments every time.
    same_arguments: bool = False
    # `once` because every call runs while tracing (the jit inside is inlined into that trace).
    traced: bool = False
    # `unknown` because nothing in the project calls it and it does not escape: its callers, if
    # any, are outside the project.
    uncalled: bool = False


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
    if fn.name == "__call__" and fn.cls is not None:
        # Calling an instance (`pipeline(latents)`, `Model(w)(x)`) calls its class's `__call__`.
        for site in model.index.calls:
            func = site.call.func
            if id(func) not in callees and isinstance(func, (cst.Name, cst.Attribute, cst.Call)) \
                    and inst.instance_class(func, site.scope) is fn.cls:
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
        return Frequency(UNKNOWN, how="the chain of its callers is not followed that far")
    is_traced = (lambda f: f in traced) if traced is not None else model.is_traced
    sites, escapes = call_sites(model, fn)
    live = [s for s in sites if not _traced_scope(s.scope, is_traced)]
    if is_traced(fn) and (not live or traced is not None or always_traced(model, fn)):
        return Frequency(ONCE, how="it runs while tracing (a jit inside it is inlined into that trace)",
                         traced=True)
    # (A function traced only because traced code calls it runs eagerly where host code calls it.)
    for s in live:
        if s.loop is not None and not compiled_once_per_key(model, s.call, s.scope):
            return Frequency(MANY, s.loop, "in a loop")
    elsewhere = external_calls(model, fn) if project else None
    if elsewhere is not None and elsewhere.kind == MANY:
        return elsewhere
    if escapes:
        handed = _escapes_followed(model, fn, is_traced)
        if handed is None:
            node = next(iter(escape_reads(model, fn)), None)
            return Frequency(UNKNOWN, node, f"`{fn.name}` is passed or stored, and what runs it is not shown")
        if handed.kind == MANY:
            return handed
        # Handed only to code that runs it while tracing: what counts are the other calls.
        if not live and elsewhere is None:
            return handed
    if len(live) >= 2:
        return Frequency(MANY, live[1].call, f"from {len(live)} places")
    if len(live) == 1 and elsewhere is not None:
        return Frequency(MANY, live[0].call, f"here and {elsewhere.how}")
    if len(live) == 1:
        caller = live[0].scope
        if isinstance(caller, Function):
            if memoised_function(model, caller):
                return Frequency(ONCE, live[0].call, f"its only caller `{caller.display_name}` is memoised")
            outer = frequency(model, caller, depth + 1, seen | {fn}, traced, project)
            if outer.kind == MANY:
                return Frequency(MANY, outer.node, outer.how, outer.via or caller)
            if outer.kind == ONCE:
                return Frequency(ONCE, live[0].call, f"its only caller `{caller.display_name}` runs once: "
                                 f"{outer.how}", traced=outer.traced)
            return Frequency(UNKNOWN, live[0].call, f"`{caller.display_name}` calls it once, and how often "
                             f"`{caller.display_name}` runs is not shown", caller)
        return Frequency(ONCE, live[0].call, "it is called once, at module level")
    if elsewhere is not None:
        return elsewhere
    if sites:
        return Frequency(ONCE, sites[0].call, "it is called only while tracing (inlined into that trace)",
                         traced=True)
    if _runs_once_by_convention(model, fn):
        return Frequency(ONCE, None, "its framework runs it once (a constructor, a test, a set-up hook)")
    return Frequency(UNKNOWN, None, "nothing in the project calls it", uncalled=True)


def escape_reads(model: "SemanticModel", fn: Function) -> list[cst.CSTNode]:
    """The reads of `fn` other than as a callee (`tree_map(fn, ...)`, `make_step(fn)`,
    `self.fn` handed on): where it escapes."""
    sites, _ = call_sites(model, fn)
    callees = {id(s.call.func) for s in sites}
    out: list[cst.CSTNode] = []
    if fn.cls is None:
        for read in model.index.reads_named(fn.name):
            if id(read.name) not in callees and model.function_named(read.name.value, read.scope) is fn:
                out.append(read.name)
    else:
        out.extend(node for node in model.index.attributes_named(fn.name) if id(node) not in callees)
    return out


# Functions that call the function they are given once per leaf or element of a collection.
MAPPING_FUNCTIONS = frozenset({
    "jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map", "jax.tree_util.tree_map_with_path",
    "jax.tree.map_with_path", "builtins.map", "tree.map_structure", "optax.tree_utils.tree_map",
})


def _escapes_followed(model: "SemanticModel", fn: Function, is_traced) -> Frequency | None:
    """Where every escape of `fn` is followed: `many` when a mapping function runs it per leaf or
    element; `once` (per trace) when each escape hands it to a function of the module whose
    parameter is called only while tracing; None when an escape goes where the model cannot
    follow."""
    reads = escape_reads(model, fn)
    if not reads:
        return None
    traced_only: cst.CSTNode | None = None
    for node in reads:
        arg = model.parent(node)
        call = model.parent(arg) if isinstance(arg, cst.Arg) and arg.value is node else None
        if not isinstance(call, cst.Call):
            return None
        scope = model.scope_of(call)
        if model.qn(call.func, scope) in MAPPING_FUNCTIONS and call.args and call.args[0] is arg:
            return Frequency(MANY, call, f"once per element, by `{_text(model, call.func)}`")
        callee = model.function_named(call.func.value, scope) if isinstance(call.func, cst.Name) else None
        if callee is None or callee.is_lambda or arg.star:
            return None
        param = arg.keyword.value if arg.keyword is not None else _parameter_at(callee, call, arg)
        if param is None or not _parameter_called_only_traced(model, callee, param, is_traced):
            return None
        traced_only = traced_only or call
    return Frequency(ONCE, traced_only, "it is handed to code that calls it only while tracing (inlined into "
                     "that trace)", traced=True)


def _parameter_at(fn: Function, call: cst.Call, arg: cst.Arg) -> str | None:
    """The parameter of `fn` a positional argument of `call` binds."""
    positional = [a for a in call.args if a.keyword is None]
    if arg not in positional or any(a.star for a in positional):
        return None
    params = list(fn.params)
    star = [i for i, p in enumerate(params) if p in fn.star_params]
    if star:
        params = params[:star[0]]  # what follows `*args` is keyword-only
    if fn.cls is not None and params and params[0] in ("self", "cls"):
        params = params[1:]
    i = positional.index(arg)
    return params[i] if i < len(params) else None


def _parameter_called_only_traced(model: "SemanticModel", fn: Function, param: str, is_traced) -> bool:
    """Every read of `fn`'s parameter `param` is a call made while tracing (in a nested function
    that is traced, or in `fn` itself when it is): the function passed for it runs only there."""
    reads = [r for r in model.index.reads_named(param, fn)
             if (found := model.lookup(param, r.scope)) is not None and found[0] is fn]
    if not reads:
        return False
    for r in reads:
        parent = model.parent(r.name)
        if not (isinstance(parent, cst.Call) and parent.func is r.name) or not _traced_scope(r.scope, is_traced):
            return False
    return True


def _text(model: "SemanticModel", node: cst.CSTNode) -> str:
    return model.module.code_for_node(node).strip()


# How a function is traced on every call, not only where traced code calls it: its name holds the
# transformed function (a decorator, `f = jax.jit(f)`), or a framework or another module traces it.
_ALWAYS = frozenset({"decorator", "framework", "assumed", "external", "driver"})


def always_traced(model: "SemanticModel", fn: Function) -> bool:
    """Every call of `fn` runs it under a trace (a jit inside it is inlined), not only the calls
    traced code makes: a host call of a function traced only because traced code calls it (or a
    transform is applied to it elsewhere) runs its body eagerly."""
    reasons = model.traced.reasons.get(fn) if hasattr(model, "traced") else None
    if not reasons:
        return False
    return any(r.kind in _ALWAYS or (r.kind == "transform" and r.rebound is not None) for r in reasons)


def runs_only_traced(model: "SemanticModel", fn: Function) -> bool:
    """`fn` runs under a trace on every call that reaches it: traced always, or traced and called
    from no host code."""
    if not model.is_traced(fn):
        return False
    if always_traced(model, fn):
        return True
    sites, _ = call_sites(model, fn)
    return all(_traced_scope(s.scope, model.is_traced) for s in sites)


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


# -- how often a loop body runs -----------------------------------------------------------------------

# A loop that runs fewer times than this builds too few jit wrappers for their cost (a cache lookup each,
# tens of microseconds) to matter; a recompilation costs far more and counts from the second iteration.
MANY_ITERATIONS = 100


@dataclass(frozen=True)
class Iterations:
    """How many times a loop's body runs per run of the code around it, as the code shows it."""

    loop: cst.CSTNode
    # The count where the code shows it: a literal collection, `range` of literals (or of a
    # parameter every call passes a literal for), a literal tuple bound to a name once (`for dtype
    # in DTYPES`); None otherwise.
    count: int | None = None
    # A loop that steps a number of times the code does not bound: `while` (not against a literal:
    # `while i < 3`), `range(n)` of a variable, `itertools.count()`: written to repeat, as many times
    # as its data says.
    stepping: bool = False
    # What it iterates, as a message quotes it: "over `range(n)`", "over `xs`", "while `i < n` holds".
    what: str = ""


def iterations(model: "SemanticModel", loop: cst.CSTNode, scope) -> Iterations:
    """How many times the body of `loop` (a `for`, `while` or comprehension) runs."""
    if isinstance(loop, cst.While):
        what = f"while `{' '.join(_text(model, loop.test).split())[:40]}` holds"
        test = loop.test
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and any(
                _count_literal(model, e, scope) is not None for e in (test.left, test.comparisons[0].comparator)):
            # `while i < 3`, or `while i < n` where every call passes a literal `n`: a bound the code writes,
            # its count not shown
            return Iterations(loop, None, False, what)
        return Iterations(loop, None, True, what)
    if isinstance(loop, cst.For):
        return _iterating(model, loop, loop.iter, scope)
    if isinstance(loop, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
        total, stepping, what = 1, False, ""
        clause = loop.for_in
        while clause is not None:
            it = _iterating(model, loop, clause.iter, scope)
            stepping = stepping or it.stepping
            total = total * it.count if (total is not None and it.count is not None) else None
            what = what or it.what
            clause = clause.inner_for_in
        return Iterations(loop, total, stepping, what)
    return Iterations(loop)


_STEPPING = frozenset({"itertools.count", "itertools.cycle", "itertools.repeat"})
_SAME_LENGTH = frozenset({"builtins.enumerate", "builtins.reversed", "builtins.sorted", "builtins.list",
                          "builtins.tuple", "builtins.iter"})


def _iterating(model: "SemanticModel", loop: cst.CSTNode, it: cst.BaseExpression, scope, depth: int = 0) -> Iterations:
    what = f"over `{' '.join(_text(model, it).split())[:40]}`"
    n = _literal_length(model, it, scope)
    if n is not None:
        return Iterations(loop, n, False, what)
    if isinstance(it, cst.Call) and depth < 3:
        qn = model.qn(it.func, scope)
        if qn == "builtins.range":
            args = [a.value for a in it.args]
            values = [_count_literal(model, a, scope) for a in args]
            if args and all(v is not None for v in values):
                return Iterations(loop, len(range(*values)), False, what)
            if any(isinstance(a, cst.Call) and model.qn(a.func, scope) == "builtins.len" for a in args):
                return Iterations(loop, None, False, what)  # `range(len(xs))`: one per item of `xs`
            return Iterations(loop, None, True, what)
        if qn in _STEPPING:
            return Iterations(loop, None, True, what)
        if (qn in _SAME_LENGTH or qn == "builtins.zip") and it.args:
            parts = [_iterating(model, loop, a.value, scope, depth + 1) for a in
                     (it.args if qn == "builtins.zip" else it.args[:1])]
            counts = [p.count for p in parts if p.count is not None]
            if counts:
                return Iterations(loop, min(counts), False, what)
            return Iterations(loop, None, all(p.stepping for p in parts), what)
        if isinstance(it.func, cst.Attribute) and it.func.attr.value in ("items", "keys", "values") and not it.args:
            n = _literal_length(model, it.func.value, scope)
            return Iterations(loop, n, False, what)
    return Iterations(loop, None, False, what)


def _count_literal(model: "SemanticModel", e: cst.BaseExpression, scope) -> int | None:
    """An int literal, or a parameter of the function `scope` for which every call in the project
    passes one (`g(x, 3)`; the parameter's literal default where a call leaves it out): the largest
    such value. None where a call passes anything else, the function escapes, another module calls
    it, or nothing calls it."""
    v = _int_literal(e)
    if v is not None or not isinstance(e, cst.Name) or not isinstance(scope, Function):
        return v
    found = model.lookup(e.value, scope)
    if found is None or found[0] is not scope or e.value not in scope.params or e.value in scope.star_params \
            or any(b.kind != "param" for b in found[1]):
        return None
    sites, escapes = call_sites(model, scope)
    if not sites or escapes or external_calls(model, scope) is not None:
        return None
    default = scope.param_nodes.get(e.value).default if e.value in scope.param_nodes else None
    values = []
    for site in sites:
        if any(a.star for a in site.call.args):
            return None
        arg = model.argument_for(site.call, scope, e.value)
        v = _int_literal(arg if arg is not None else default) if (arg is not None or default is not None) else None
        if v is None:
            return None
        values.append(v)
    return max(values)


def _int_literal(e: cst.BaseExpression) -> int | None:
    neg = False
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
        neg, e = True, e.expression
    if isinstance(e, cst.Integer):
        try:
            v = int(e.value.replace("_", ""), 0)
        except ValueError:
            return None
        return -v if neg else v
    return None


def _literal_length(model: "SemanticModel", e: cst.BaseExpression, scope, depth: int = 0) -> int | None:
    """The length of a literal tuple/list/set/dict (no starred element), directly or through a name
    bound once to one and never changed in place."""
    if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
        if any(isinstance(el, cst.StarredElement) for el in e.elements):
            return None
        return len(e.elements)
    if isinstance(e, cst.Dict):
        if any(isinstance(el, cst.StarredDictElement) for el in e.elements):
            return None
        return len(e.elements)
    if isinstance(e, cst.Name) and depth < 2:
        found = model.lookup(e.value, scope)
        if found is None or len(found[1]) != 1:
            return None
        b = found[1][0]
        if b.kind != "assign" or b.index is not None or b.value is None:
            return None
        if not isinstance(b.value, cst.Tuple) and any(
                isinstance(model.parent(r.name), (cst.Attribute, cst.Subscript))
                and model.parent(r.name).value is r.name
                for r in model.index.reads_named(e.value) if model.lookup(e.value, r.scope) == found):
            return None  # a list or dict that may change in place (`xs.append(...)`, `d[k] = ...`)
        return _literal_length(model, b.value, found[0], depth + 1)
    return None


# -- the premise `called-repeatedly` ------------------------------------------------------------------

def function_repeats(model: "SemanticModel", fn: Function, freq: Frequency, subject: str):
    """`called-repeatedly(subject)` for code that runs once per call of `fn`, from `freq`
    (`frequency(model, fn)` or stronger evidence):

    - PROVEN where the project shows `fn` runs many times (a loop, several callers, a caller that
      runs many times, a mapping function);
    - DISPROVED where it shows `fn` runs once (at module level, from a caller that runs once, by
      its framework's convention) or only while tracing (a jit there is inlined, never compiled on
      its own);
    - otherwise ASSUMED, naming why the count is unknown, with one exception (`entry-point`): a
      public top-level function of a standalone script or notebook that nothing calls and nothing
      is handed (the JIT documentation's `apply_once`). Its calls are its users' and are not in
      the code, so this one is the rule's convention rather than a proof: see JF302's page."""
    at = (" (line ", LineOf(freq.node), ")") if freq.node is not None else ()
    if freq.kind == MANY:
        who = "" if freq.via is None else f"from `{freq.via.display_name}`, which is called "
        return proven("called-repeatedly", subject, "call-frequency", f"called {who}{freq.how}", *at)
    if freq.kind == ONCE:
        return disproved("called-repeatedly", subject, "runs-under-trace" if freq.traced else "runs-once",
                         freq.how, *at)
    if freq.uncalled and entry_point(model, fn):
        return proven("called-repeatedly", subject, "entry-point",
                      f"`{fn.display_name}` is a public function of a script that the script never calls: it runs "
                      "once per call its users make, each compiling again")
    if freq.uncalled and library_function(model, fn):
        return assumed("called-repeatedly", subject, f"assumes that the library's users call `{fn.display_name}` "
                       "more than once (nothing in the project calls it)")
    return assumed("called-repeatedly", subject, f"assumes `{fn.display_name}` runs more than once: {freq.how}", *at)


def entry_point(model: "SemanticModel", fn: Function) -> bool:
    """A public top-level function of a standalone script or notebook (not a package's module), or a
    public method (not a dunder) of a public top-level class there: what it is for is to be called
    by its users (`trainer.eval_step(batch)`)."""
    from jaxfuse_lint.model.scopes import ClassInfo

    if fn.name.startswith("_"):
        return False
    if fn.cls is not None:
        if fn.parent is not fn.cls or fn.cls.name.startswith("_") or fn.cls.parent is not model.index.scope:
            return False
    elif isinstance(fn.parent, (Function, ClassInfo)):
        return False
    name = getattr(model, "module_name", None)
    module = name() if callable(name) else name
    return not (module and "." in module)


def loop_repeats(model: "SemanticModel", loops: list[cst.CSTNode], scope, subject: str, many: bool):
    """`called-repeatedly(subject)` for code inside `loops` (innermost first) of `scope`.

    With `many` False (each run compiles again) it needs a second iteration: PROVEN by the loop
    unless the code shows it runs at most once (DISPROVED). With `many` True (each run only builds a
    new wrapper and looks the compiled program up in the cache) it needs many iterations: PROVEN
    where the code shows `MANY_ITERATIONS` or more, a loop that steps a number of times the code
    does not bound (`while`, `range(n)` of a variable), or a function around it that runs many
    times; DISPROVED where it shows fewer; ASSUMED for a loop over items whose number is not shown
    (`for x in xs`)."""
    its = [iterations(model, loop, scope) for loop in loops]
    inner = its[0]
    kind = "loop" if isinstance(inner.loop, (cst.For, cst.While)) else "comprehension"
    total: int | None = 1
    for it in its:
        total = total * it.count if (total is not None and it.count is not None) else None
    where = (f"the {kind} on line ", LineOf(inner.loop))
    if total is not None and total <= 1:
        return disproved("called-repeatedly", subject, "loop-count", *where, f" runs {total} time"
                         f"{'' if total == 1 else 's'} ({inner.what})")
    if not many:
        if total is not None:
            return proven("called-repeatedly", subject, "loop-count", *where, f" runs {total} times ({inner.what})")
        return proven("called-repeatedly", subject, "loop", *where, f" repeats ({inner.what})")
    if total is not None and total >= MANY_ITERATIONS:
        return proven("called-repeatedly", subject, "loop-count", *where, f" runs {total} times ({inner.what})")
    stepping = next((it for it in its if it.stepping), None)
    if stepping is not None:
        skind = "loop" if isinstance(stepping.loop, (cst.For, cst.While)) else "comprehension"
        return proven("called-repeatedly", subject, "stepping-loop", f"the {skind} on line ", LineOf(stepping.loop),
                      f" steps a number of times the code does not bound ({stepping.what})")
    if isinstance(scope, Function):
        outer = frequency(model, scope)
        if outer.kind == MANY:
            at = (" (line ", LineOf(outer.node), ")") if outer.node is not None else ()
            who = f"`{scope.display_name}`" + ("" if outer.via is None else f", through `{outer.via.display_name}`,")
            return proven("called-repeatedly", subject, "call-frequency", *where, f" runs on every call of {who} "
                          f"which is called {outer.how}", *at)
    if total is not None:
        return disproved("called-repeatedly", subject, "loop-count", *where, f" runs {total} times ({inner.what}): "
                         "a few new wrappers, each a cache lookup, cost too little to matter")
    return assumed("called-repeatedly", subject, "assumes ", *where, f" runs many times ({inner.what}, whose "
                   "length is not shown): each iteration only builds a new wrapper and looks the compiled program up")
