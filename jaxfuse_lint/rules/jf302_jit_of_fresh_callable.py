"""JF302 jit-of-fresh-callable."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.traced import TracedAnalysis
from jaxfuse_lint.model.call_frequency import (
    MANY, ONCE, UNKNOWN, Frequency, call_sites, external_calls, frequency, library_function,
)
from jaxfuse_lint.model.compile_cache import compiled_once_per_key, memoised_function
from jaxfuse_lint.model.fresh_callables import describe_callable
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model.premises import assumed, proven
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.rules.jf301_jit_in_loop import (
    _bound_in, _expression_reads, _function_reads, _loop_of_def, _loops_around, compiling_call,
)
from jaxfuse_lint.core.targets import CPU_MEASURED, Claim, Evidence, tracing


class JitOfFreshCallable(Rule):
    code = "JF302"
    premises = ("fresh-callable", "called-repeatedly")
    name = "jit-of-fresh-callable"
    summary = "`jax.jit` of a lambda/partial/inner def inside a function, called or returned (recompiles per call)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, inside a function body (not in a loop — that is JF301), `jax.jit`
    applied to a callable that is a new object on every call of the function —
    a lambda, a `functools.partial`, a function defined in that body, or a
    transform of a function (`jax.grad(f)`, `jax.vmap(f)`) — when the module
    shows that the program is compiled more than once per process:

    - the jitted callable is called once in the same call of the function
      (`jax.jit(lambda v: ...)(x)`, or through a local name) and closes over
      nothing of the function (the same program on every call), and the
      function is called in a loop or comprehension, from two or more places,
      or by a function that is — or nothing in the module shows how often it
      runs (a library function: its callers compile on every call);
    - the same, closing over the function's arguments (`lambda v: v * k`): the
      same program only for the same values, so reported only when the
      function is called in a loop that does not change those arguments
      (nor the arguments an `if` around the jit tests: `if use_pjit:`);
    - the jitted callable is called in a loop inside the function (compiled
      once per call, reused by the loop: a train step made in `main()`), and
      the function itself is called in a loop, again for the same program
      (the arguments it closes over do not change in that loop: a
      `train_epoch()` per epoch, not a `fit(optimizer)` per optimizer);
    - the function returns it (a factory), and the factory is called in a loop
      with arguments the loop does not change (those the callable closes over),
      or from a function that runs many times with arguments that do not depend
      on that function's call (`basis = get_basis(3)` in a `render_frame` run
      per frame).

    How often a function runs is read from the whole project: a call in a loop,
    or from a function that runs many times, in another checked module counts
    (the message names it). Values the callable closes over that are arrays
    (`R = rotation(phase)`) are data, not program structure: passed as
    arguments they would give one program, so a loop that changes them is no
    excuse. The instance a method's callable closes over (`self`, a bound
    method) is one program per object: calls on new objects (`Model(w).predict`
    per model, `jax.pmap(sim.step)` per simulation) compile as they must, calls
    on one object again are reported.

    ## Why is this bad?
    JAX caches compiled programs per callable object. A lambda, a partial, an
    inner function or `jax.grad(f)` is a new object every time the enclosing
    function runs, so every call of the enclosing function traces and compiles
    from scratch. Compilation takes milliseconds to minutes; the computation
    often takes microseconds.

    ## Known problems
    The harm needs a second compilation, so these are not reported:
    a factory (`def make_step(...): return jax.jit(step)`) called once — in
    `__init__`, once per `train()` — or once per distinct argument (one program
    per configuration, whatever is done); a factory behind a cache
    (`functools.cache`/`lru_cache`, a project's own `@compile_cache`-like
    decorator, `if k not in cache: cache[k] = make(k)` also one call away, or
    `if _fn is None: _fn = jax.jit(...)` into a global or an attribute); a
    jitted callable reused by a loop in a function not known to run again; a function the module calls once (at module level,
    under `if __name__ == "__main__":`, from `__init__`), pytest `test*`
    functions and unittest/pytest set-up hooks (the framework runs them once);
    and a jit called while tracing (from a traced function, a numpyro model
    under `NUTS`/`SVI`, an `init` traced by `jax.pmap(self.init)`: it is
    inlined into that trace). A function of a package's module that nothing in
    the checked project calls is a library's: whether its users call it more
    than once is assumed, so that finding is in the preview tier (a standalone
    script's or notebook's function stays reported). A jitted callable stored elsewhere (`self.f = jax.jit(...)`)
    is not followed. In test files performance rules are off by default (see
    the configuration docs, `per-file-ignores`).

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
    lambda, a `functools.partial` or a transform of a function (`jax.grad(f)`)
    that reads nothing of the enclosing function
    (only its own parameters, module-level names and builtins): the jitted
    callable is bound once at module level, just before the function
    (`_apply_once_jit = jax.jit(lambda v: v * 2 + 1)`), and the function calls
    that. The name is bound nowhere else in the module and never starts with
    two underscores (Python would mangle it inside a class body). Unsafe because module-level values the callable reads are then
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
        "import jax\ndef make(k):\n    return jax.jit(lambda v: v * k)\nclass T:\n    def __init__(self, k):\n"
        "        self.f = make(k)\n",
        "import jax\ndef once(x):\n    return jax.jit(lambda v: v * 2)(x)\nY = once(1.0)\n",
        "import jax\ndef scaled(x, k):\n    return jax.jit(lambda v: v * k)(x)\n",
    )
    invalid = (
        "import jax\ndef g(x):\n    return jax.jit(lambda v: v * 2)(x)\n",
        "import jax\ndef g(x):\n    def inner(v):\n        return v * 2\n    f = jax.jit(inner)\n    return f(x)\n",
        "import jax\ndef g(x, k):\n    return jax.jit(lambda v: v * k)(x)\ndef run(x):\n    for _ in range(9):\n"
        "        x = g(x, 3)\n    return x\n",
        "import jax\ndef make(k):\n    return jax.jit(lambda v: v * k)\ndef run(x, k):\n    for _ in range(9):\n"
        "        x = make(k)(x)\n    return x\n",
        "import jax\ndef loss(p):\n    return p * p\ndef step(p):\n    return p - jax.jit(jax.grad(loss))(p)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        for site in model.index.calls:
            scope = site.scope
            if site.loop is not None or not isinstance(scope, Function) or model.is_traced_scope(scope):
                continue
            found = compiling_call(model, site.call, scope)
            if found is None or compiled_once_per_key(model, site.call, scope):
                continue
            transform, target = found
            what, fresh = describe_callable(model, target, scope, None)
            if not fresh:
                continue
            found_use = self._harm(model, _use_of_call(model, site.call, scope), scope, target, site.call)
            if found_use is not None:
                yield self._violation(site.call, transform, what, scope, *found_use, assumes=_library(model, scope, found_use))
        for fn in model.index.functions:
            parent = fn.parent
            if not isinstance(fn.node, cst.FunctionDef) or not isinstance(parent, Function):
                continue
            if model.is_traced_scope(parent) or _loop_of_def(model, fn) is not None \
                    or compiled_once_per_key(model, fn.node, parent):
                continue
            for dec in fn.node.decorators:
                t = TracedAnalysis(model).transform_of(dec.decorator, parent)
                if t is None or t[0] not in COMPILING:
                    continue
                found_use = self._harm(model, _use_of_name(model, fn.name, parent), parent, fn.node, fn.node)
                if found_use is not None:
                    yield self._violation(dec.decorator, t[0], f"`{fn.name}`, defined inside `{parent.display_name}`",
                                          parent, *found_use, assumes=_library(model, parent, found_use))

    @staticmethod
    def _harm(model: SemanticModel, use: str | None, scope: Function, target: cst.CSTNode | None,
              node: cst.CSTNode) -> tuple[str, Frequency] | None:
        """(use, evidence) when the fresh callable is compiled more than once per process, or
        None: called in `scope` while `scope` is not known to run once, or returned by a
        factory that is called again for the same callable (in a loop, with arguments the
        loop does not change)."""
        if use == "called":
            # Used once per call of `scope`: worth compiling only if `scope` runs again, when it
            # compiles again. A callable that closes over nothing of `scope` is the same program
            # on every call; one that closes over arguments is the same program only when they
            # are the same: then only a loop that does not change them is evidence.
            relevant = _closure_params(model, scope, target)
            if relevant is not None:
                # `if use_pjit: pjit(lambda ...)(x)`: built only for some values of a parameter.
                relevant |= _guard_params(model, node, scope)
            if relevant == set():
                freq = frequency(model, scope)
                return None if freq.kind == ONCE else (use, freq)
            if scope.cls is not None and relevant == set(scope.params[:1]):
                # Closes over the instance only (`jax.jit(self.forward)(x)`): one program per
                # object. A method nothing calls is a library's (its users call it on their
                # objects); where the module calls it, only calls on one object again count (a
                # new `Model(w)` per iteration compiles once per model, as it must).
                freq = frequency(model, scope)
                if freq.kind == UNKNOWN:
                    return use, freq
            freq = _factory_rebuilt(model, scope, relevant)
            return None if freq is None else (use, freq)
        if use == "reused":
            # Called in a loop inside `scope`: compiled once per call and reused (the recommended
            # pattern, e.g. a train step made in `main()`), unless `scope` itself runs again for
            # the same program: called in a loop with arguments the loop does not change (a
            # `fit(optimizer)` per optimizer compiles a different program each time anyway).
            freq = _factory_rebuilt(model, scope, _closure_params(model, scope, target))
            return None if freq is None else ("called", freq)
        if use == "returned":
            freq = _factory_rebuilt(model, scope, _closure_params(model, scope, target))
            return None if freq is None else (use, freq)
        return None

    def _violation(self, node, qualified, what, scope, use, freq, assumes=None) -> Violation:
        transform = as_written(node, qualified, same_name=True)  # `jit` after `from jax import jit`
        name = scope.display_name
        if use == "returned":
            via = f"`{name}` returns it and is called" if freq.via is None else \
                f"`{name}` returns it to `{freq.via.display_name}`, which is called"
            where = (" (line ", LineOf(freq.node), ")") if freq.node is not None else ()
            parts = message(f"`{transform}` of {what}: {via} again {freq.how}", *where,
                            " with the same arguments, so every call gets a new callable that traces and "
                            "compiles again; build it once, or jit a module-level function once")
        else:
            evidence: tuple = ()
            if freq.kind == MANY:
                who = ", which is" if freq.via is None else f", which `{freq.via.display_name}` calls, and that is"
                evidence = (f"{who} called {freq.how}",) + ((" (line ", LineOf(freq.node), ")")
                                                           if freq.node is not None else ())
            parts = message(f"`{transform}` of {what}: a new callable on every call of `{name}`", *evidence,
                            "; each call traces and compiles again; jit a module-level function once and call that")
        subject = f"`{transform}` of {what}"
        fresh = proven("fresh-callable", subject, "built-per-call", f"built anew on every call of `{name}`")
        if assumes is not None:
            repeated = assumed("called-repeatedly", f"`{name}`", f"assumes {assumes}")
        elif freq.kind == MANY:
            repeated = proven("called-repeatedly", f"`{name}`", "call-frequency", f"called {freq.how}",
                              *((" (line ", LineOf(freq.node), ")") if freq.node is not None else ()))
        else:
            repeated = proven("called-repeatedly", f"`{name}`", "entry-point", f"a function of a script that the "
                              "script does not call runs as often as its users call it")
        return Violation(node, parts, data={"transform": qualified, "scope": scope}, premises=(fresh, repeated))


def _library(model: SemanticModel, scope: Function, found_use) -> str | None:
    """The preview tier's assumption for a library's function that nothing in the checked project
    calls: that its users call it more than once."""
    if found_use[1].kind == UNKNOWN and library_function(model, scope):
        return f"that the library's users call `{scope.display_name}` more than once (nothing in the project calls it)"
    return None


def _use_of_call(model: SemanticModel, call: cst.Call, scope: Function) -> str | None:
    """"called" when the jitted callable is called in this call of `scope` (immediately, or
    through a local name), "returned" when `scope` returns it, else None (stored: not seen)."""
    parent = model.parent(call)
    if isinstance(parent, cst.Call) and parent.func is call:
        return "called"
    if isinstance(parent, cst.Return):
        return "returned"
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        return _use_of_name(model, parent.targets[0].target.value, scope)
    return None


def _use_of_name(model: SemanticModel, name: str, scope: Function) -> str | None:
    """"reused" when the local name is called in a loop of `scope` (or in a nested function),
    "called" when it is called only outside loops, "returned", or None."""
    returned = called = reused = False
    for fn in (scope, *scope.nested):
        for read in fn.reads:
            if read.name.value != name or model.lookup(name, read.scope) is None \
                    or model.lookup(name, read.scope)[0] is not scope:
                continue
            parent = model.parent(read.name)
            if isinstance(parent, cst.Call) and parent.func is read.name:
                if fn is not scope or _loops_around(model, parent, scope):
                    reused = True
                else:
                    called = True
            elif isinstance(parent, cst.Return) and fn is scope:
                returned = True
    if reused:
        return "reused"
    if called:
        return "called"
    return "returned" if returned else None


def _closure_params(model: SemanticModel, scope: Function, target: cst.CSTNode | None) -> set[str] | None:
    """The parameters of `scope` the jitted callable reads (its program depends on them);
    None when it reads another local of `scope` (then every argument may matter)."""
    if target is None:
        return None
    if isinstance(target, cst.Name):
        fn = model.function_named(target.value, scope)
        if fn is None or fn.parent is not scope:
            return None
        target = fn.node
    if isinstance(target, cst.FunctionDef):
        fn = model.index.function_of.get(target)
        if fn is None:
            return None
        reads = list(_function_reads(fn))
    else:
        reads = list(_expression_reads(model, target, scope))
    out: set[str] = set()
    for name, where in reads:
        found = model.lookup(name, where)
        if found is None or found[0] is not scope:
            continue
        if name not in scope.params:
            if _array_data(model, found[1], scope):
                continue  # `R = rotation(phase)`: an array the program reads as data (it could be an argument)
            return None
        # The instance too (`lambda v: v @ self.w`, `jax.pmap(self.step)`): a program per object.
        out.add(name)
    return out


def _array_data(model: SemanticModel, bindings, scope: Function) -> bool:
    """A local bound only to arrays (NumPy or jax, computed in the function): baked into the
    program as data, which an argument would carry as well; the program's structure does not
    depend on it."""
    if model.numpy_arrays.binding_is_array(bindings, scope) or model.device_arrays.binding_is_array(bindings, scope):
        return True
    return bool(bindings) and all(b.kind in ("assign", "annassign") and b.index is None
                                  and _array_value(model, b.value, scope) for b in bindings)


_ARRAY_CONSTRUCTORS = frozenset({"numpy.array", "numpy.asarray", "jax.numpy.array", "jax.numpy.asarray",
                                 "numpy.stack", "jax.numpy.stack"})


def _array_value(model: SemanticModel, e: cst.BaseExpression | None, scope, depth: int = 0) -> bool:
    """`np.array([[c, -s], [s, c]])`, or a call of the module's helper that returns one."""
    if not isinstance(e, cst.Call) or depth > 3:
        return False
    qn = model.qn(e.func, scope)
    if qn in _ARRAY_CONSTRUCTORS:
        return True
    callee = model.function_named(e.func.value, scope) if isinstance(e.func, cst.Name) else None
    return callee is not None and not callee.is_lambda and bool(callee.returns) and all(
        _array_value(model, r, callee, depth + 1) or model.numpy_arrays.is_array(r, callee) for r in callee.returns)


def _guard_params(model: SemanticModel, node: cst.CSTNode, scope: Function) -> set[str]:
    """Parameters of `scope` read by the tests of the `if`/`while` statements around `node`."""
    out: set[str] = set()
    for anc in model.ancestors(node):
        if anc is scope.node:
            break
        if isinstance(anc, (cst.If, cst.While)):
            for n in free_names(anc.test):
                if n in scope.params:
                    out.add(n)
    return out


def free_names(expr: cst.CSTNode) -> set[str]:
    from jaxfuse_lint.model.scopes import walk

    return {n.value for n in walk(expr) if isinstance(n, cst.Name)}


def _factory_rebuilt(model: SemanticModel, factory: Function, relevant: set[str] | None) -> Frequency | None:
    """A call of the function in a Python loop (not guarded by a cache) whose arguments for
    the parameters the jitted callable closes over (`relevant`; all of them when None) the loop
    does not change: every iteration builds, and compiles, the same program again. A factory
    called once (in `__init__`, once per `train()`) or once per distinct argument is the
    recommended pattern: None."""
    sites, _ = call_sites(model, factory)
    elsewhere = external_calls(model, factory)
    if elsewhere is not None and elsewhere.kind == MANY and (elsewhere.same_arguments or relevant == set()):
        return elsewhere  # another module's loop calls it with the same arguments (or they do not matter)
    for site in sites:
        if model.is_traced_scope(site.scope) or compiled_once_per_key(model, site.call, site.scope):
            continue
        args = _relevant_arguments(model, site.call, factory, relevant)
        loops = _loops_around(model, site.call, site.scope)
        if not loops:
            # `f = get_basis(3)` in a function that runs many times (`render_frame` per frame): the
            # same program again on every call, when the arguments do not depend on that call.
            if not isinstance(site.scope, Function) or memoised_function(model, site.scope):
                continue
            if any(_bound_in_function(model, n, sc, site.scope) for arg in args
                   for n, sc in _expression_reads(model, arg, site.scope)):
                continue
            outer = frequency(model, site.scope)
            if outer.kind == MANY:
                return Frequency(MANY, outer.node, outer.how, outer.via or site.scope)
            continue
        if any(_bound_in(model, n, sc, loops) for arg in args for n, sc in _expression_reads(model, arg, site.scope)):
            continue  # a different program per iteration: one compilation each, whatever is done
        return Frequency(MANY, loops[0], "in a loop")
    return None


def _relevant_arguments(model: SemanticModel, call: cst.Call, factory: Function,
                        relevant: set[str] | None) -> list[cst.BaseExpression]:
    """What the call passes for the parameters the jitted callable depends on (all of them when
    None); for the instance of a method, the object it is called on (`Model(w).predict(x)`)."""
    if relevant is None or any(a.star for a in call.args):
        args = [a.value for a in call.args]
        relevant = set(factory.params[:1]) if factory.cls is not None else set()
    else:
        args = [a for a in (model.argument_for(call, factory, p) for p in relevant) if a is not None]
    if factory.cls is not None and factory.params and factory.params[0] in relevant \
            and isinstance(call.func, cst.Attribute):
        args.append(call.func.value)
    return args


def _bound_in_function(model: SemanticModel, name: str, scope, fn: Function) -> bool:
    """Whether `name` (read in `scope`) is a parameter or local of fn: it may differ per call."""
    found = model.lookup(name, scope)
    return found is not None and found[0] is fn


RULE = JitOfFreshCallable
