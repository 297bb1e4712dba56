"""JF301 jit-in-loop."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel, keyword, positional
from jaxfuse_lint.model.api import COMPILING, TRANSFORMS
from jaxfuse_lint.model.call_frequency import loop_repeats
from jaxfuse_lint.model.compile_cache import compiled_once_per_key, kept_for_reuse
from jaxfuse_lint.model.fresh_callables import (
    EAGER_COMPILING, array_data, compiles_per_application, describe_callable, lambda_bound_to, reaching_function,
)
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model.scopes import PYTHON_LOOPS, Function, Scope, iter_children
from jaxfuse_lint.model.traced import TracedAnalysis
from jaxfuse_lint.model.premises import assumed, disproved, proven
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, Claim, Evidence, tracing


def compiling_call(model: SemanticModel, call: cst.Call, scope: Scope) -> tuple[str, cst.BaseExpression | None] | None:
    """`jax.jit(f, ...)` or `partial(jax.jit, ...)(f)`: the transform and the callable it gets."""
    t = TracedAnalysis(model).transform_of(call.func, scope)
    if t is not None and t[0] in COMPILING and (t[1] is None or t[1] is not call):
        return t[0], positional(call, 0) or keyword(call, "fun")
    return None


def transform_name(node: cst.CSTNode, qualified: str) -> str:
    """How a message names the compiling transform at `node` (a call, its callee, or a decorator):
    as written (`jit` after `from jax import jit`), or the name the code calls it through where that
    name holds it (`pmap_for_my_devices = partial(jax.pmap, ...)`, a `maybe_jit` that returns
    `jit(fn)`)."""
    text = as_written(node, qualified, same_name=True)
    callee = node.func if isinstance(node, cst.Call) else node
    if isinstance(callee, cst.Name) and callee.value.rsplit(".", 1)[-1] != qualified.rsplit(".", 1)[-1]:
        return callee.value
    return text


def _inside(model: SemanticModel, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return any(a is container for a in model.ancestors(node))


def _loop_of_def(model: SemanticModel, fn: Function) -> cst.CSTNode | None:
    for a in model.ancestors(fn.node):
        if a is fn.parent.node:
            return None
        if isinstance(a, PYTHON_LOOPS):
            return a
    return None


def _loops_around(model: SemanticModel, node: cst.CSTNode, scope: Scope) -> list[cst.CSTNode]:
    """The Python loops and comprehensions around `node`, inside `scope`'s own code."""
    out = []
    for a in model.ancestors(node):
        if a is scope.node:
            break
        if isinstance(a, PYTHON_LOOPS):
            out.append(a)
    return out


def _function_reads(fn: Function) -> Iterator[tuple[str, Scope]]:
    yield from ((r.name.value, r.scope) for r in fn.reads)
    for inner in fn.nested:
        yield from _function_reads(inner)


def _expression_reads(model: SemanticModel, expr: cst.CSTNode, scope: Scope) -> Iterator[tuple[str, Scope]]:
    """(name, scope it is read in) for every name `expr` reads, lambdas and comprehensions included."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(expr, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, cst.Name):
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            yield node.value, scope
            continue
        inner = model.index.function_of.get(node)
        if inner is not None and inner.node is node:  # a lambda or comprehension: its own scope
            yield from _function_reads(inner)
            continue
        stack.extend((child, node) for _, child in iter_children(node))


def _bound_in(model: SemanticModel, name: str, scope: Scope, loops: list[cst.CSTNode]) -> bool:
    """Whether `name`, read in `scope`, refers to a binding the loops make (their targets, or an
    assignment or def in their bodies)."""
    found = model.lookup(name, scope)
    if found is None:
        return False
    return any(any(a is loop for a in model.ancestors(b.node)) or b.node is loop
               for b in found[1] for loop in loops)


def _calls_loop_bound(model: SemanticModel, fn_node: cst.CSTNode, loops: list[cst.CSTNode]) -> bool:
    """Whether a lambda or def calls something the loop binds (`lambda v: model.apply(params, v)`
    with `model = Dense(n)` built in the loop, `lambda v: kernel(v)` with `kernel` chosen by the
    loop, a `def` of the loop handed to `lax.scan`), or reads a loop variable that runs over
    literal Python constants (`for max_steps in (10, 100):`, values a program is specialised
    for): the program itself differs per iteration, so each iteration compiles whatever is
    done. (Other values it only reads, `lambda v: step(v, k)`, can become arguments: reported.)"""
    fn = model.index.function_of.get(fn_node)
    if fn is None:
        return False
    stack = [fn]
    while stack:
        f = stack.pop()
        stack.extend(f.nested)
        for site in f.calls:
            root = site.call.func
            while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                root = root.value if not isinstance(root, cst.Call) else root.func
            if isinstance(root, cst.Name) and _bound_in(model, root.value, site.scope, loops):
                return True
        for read in f.reads:
            found = model.lookup(read.name.value, read.scope)
            if found is None or not _bound_in(model, read.name.value, read.scope, loops):
                continue
            for b in found[1]:
                if b.kind == "def":
                    return True  # a function the loop defines, handed on (`lax.scan(step, ...)`)
                if b.kind == "for" and _literal_constants(b.value):
                    return True  # `for n in (10, 100):` Python constants the program is built for
    return False


def _literal_constants(e: cst.BaseExpression | None) -> bool:
    """`(10_000, 100_000)`, `["fft", "matrix"]`: a literal collection of Python constants."""
    if not isinstance(e, (cst.Tuple, cst.List, cst.Set)) or not e.elements:
        return False
    for el in e.elements:
        v = el.value
        if isinstance(v, cst.UnaryOperation):
            v = v.expression
        if not (isinstance(v, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString))
                or (isinstance(v, cst.Name) and v.value in ("True", "False", "None"))):
            return False
    return True


def varies_per_iteration(model: SemanticModel, target: cst.BaseExpression | None, scope: Scope,
                         loops: list[cst.CSTNode]) -> bool:
    """Whether the function being compiled is itself chosen by the loop: `jax.jit(fns[i])`,
    `jax.jit(solver.update)` over solvers, `jax.jit(make_fn(option=i))`, or a `partial` of one.
    Each iteration then compiles a different function whatever is done: jitting once outside
    the loop is not possible. (A lambda, a `partial`'s bound arguments or a `def` in the loop
    that read the loop's values are different: those values can become arguments.)"""
    if target is None or not loops:
        return False
    if isinstance(target, cst.Lambda):
        return _calls_loop_bound(model, target, loops)
    if isinstance(target, cst.Call) and model.qn(target.func, scope) == "functools.partial":
        return varies_per_iteration(model, positional(target, 0) or keyword(target, "func"), scope, loops)
    if isinstance(target, cst.Call) and model.qn(target.func, scope) in TRANSFORMS:
        # `jax.jit(jax.grad(loss))` with `loss` defined in the loop: as `loss` itself.
        inner = positional(target, 0) or keyword(target, "fun")
        others = [a.value for a in target.args if a.value is not inner]
        return varies_per_iteration(model, inner, scope, loops) or any(
            _bound_in(model, n, sc, loops) for o in others for n, sc in _expression_reads(model, o, scope))
    if isinstance(target, cst.Name):
        fn = reaching_function(model, target, scope)
        if fn is not None and any(_inside(model, fn.node, loop) for loop in loops):
            # a def written in the loop: a new function each time, but one that can move out
            return _calls_loop_bound(model, fn.node, loops)
        made = lambda_bound_to(model, target.value, scope, target)
        if made is not None and any(_inside(model, made, loop) for loop in loops):
            return _calls_loop_bound(model, made, loops)  # `f = lambda ...` in the loop: the same
    return any(_bound_in(model, n, sc, loops) for n, sc in _expression_reads(model, target, scope))


_JAX_COMPILING = frozenset({"jax.jit", "jax.pmap", "jax.experimental.pjit.pjit"})
_AHEAD_OF_TIME = frozenset({"lower", "trace", "eval_shape"})


def _ahead_of_time(model: SemanticModel, call: cst.Call) -> bool:
    parent = model.parent(call)
    return isinstance(parent, cst.Attribute) and parent.value is call and parent.attr.value in _AHEAD_OF_TIME


class JitInLoop(Rule):
    code = "JF301"
    premises = ("fresh-callable", "same-program", "called-repeatedly")
    name = "jit-in-loop"
    summary = "`jax.jit`/`jax.pmap` applied inside a Python loop or comprehension"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags `jax.jit` (and `jax.pmap`, `pjit`, `equinox.filter_jit`,
    `nnx.jit`) applied inside a Python `for`/`while` loop or a comprehension,
    in code that is not itself traced — including `@jax.jit` on a `def`
    written inside the loop — where every iteration would compile the same
    program again, or, for one function jitted again and again, where the loop
    repeats many times. The transform may be reached through a name that holds
    it (`pmap_for_my_devices = partial(jax.pmap, devices=...)`) or a helper of
    the module that returns it applied to its argument (`def maybe_jit(fn,
    **kw): return jax.jit(fn, **kw)`, or `fn` unchanged on another path).

    Also flags lax control flow (`lax.scan`, `lax.fori_loop`,
    `lax.while_loop`, `lax.cond`, `lax.map`) called in a host loop with a
    function that is a new object on every iteration (`lax.scan(obj.step,
    ...)`): outside a trace these compile too.

    ## Why is this bad?
    JAX caches compiled programs per callable object. A lambda, a
    `functools.partial` or a function defined inside the loop is a new object
    on every iteration, so every iteration traces and compiles again — often
    thousands of times slower than the computation (the JIT tutorial's
    `g_inner_jitted_lambda` and `g_inner_jitted_partial`). So is a transform
    of a function (`jax.jit(jax.grad(f))`, `jax.jit(jax.vmap(f))`), a wrapper
    that returns a new function (`chex.assert_max_traces(f, n)`), what a
    local factory returning a lambda or an inner def gives, and a bound method
    (`jax.jit(self.update)`: a new object on every read). With one function
    object — a module-level function, a function of an imported module or of
    a class, a `def`, lambda or `functools.partial` made once before the loop
    — the compiled program is found in the cache (the tutorial's
    `g_inner_jitted_normal`: "OK, JAX finds the cached function"), but every
    iteration still builds a new wrapper and takes the slower lookup path
    (measured on CPU: about 3x the dispatch time of a reused jitted function).
    The message says which case it is, from what the code shows.

    `nnx.jit` (and `nnx.pmap`) wrap the function in a new jitted function on
    every application, and no application shares another's compiled programs:
    `nnx.jit(step)` in a loop compiles on every iteration even for one
    module-level `step` (measured, flax 0.12.8: five applications, five
    compilations). Called outside a trace, `lax.scan` and the other lax
    control flow trace their functions and compile the loop, caching on the
    function objects: a bound method (a new object on every read, a
    `jax.jit`-decorated method too) or a lambda made in the loop compiles on
    every iteration (measured: five, against one for a module-level
    function); `lax.map` wraps its function in a new scan body on every call,
    so it compiles on every iteration whatever it is given.

    ## Premises
    Every finding states three premises (`--output-format full`, JSON/SARIF
    `premises`); it is reported by default only when all are proven, in the
    preview tier when one is assumed, and not at all when one is disproved.

    - `fresh-callable`: proven for a lambda, a `partial`, a transform, a `def`
      or a bound method built in the loop (a new object each iteration: the
      cache misses), for anything given to `nnx.jit` or to `lax.map` outside a
      trace (`own-cache`), for a new function object given to lax control
      flow outside a trace (`eager-control-flow`), and for one function jitted
      in the loop (a new *wrapper* each iteration: the cache hits, the message
      says so; given to lax control flow, one function is not reported: there
      is no wrapper to rebuild). Assumed where the
      code does not show what the callable is: the result of a call it cannot
      see into, an attribute of an unknown object (`jax.jit(solver.update)`:
      a bound method if it is one), another library's wrapper.
    - `same-program`: proven where the callable reads nothing the loop binds,
      or reads the loop's values only as data it could take as arguments and
      is used in its iteration only. Disproved where the loop picks the
      program (`jax.jit(fns[i])`, `jax.jit(solver.update)` for each solver,
      `jax.jit(make_fn(option=i))`, a lambda or `def` that *calls* what the
      loop binds, a value from a literal list of Python constants), and where
      the callable reads the item and is kept for later calls — stored in a
      dict or a list that outlives the loop, on an object, yielded, returned,
      the element of a comprehension: a program per item, each compiled once
      and reused. (Kept, but reading only arrays the loop computes, it stays
      proven: an argument would carry them.)
    - `called-repeatedly`: for a recompiling callable, any loop the code does
      not show to run at most once. For one function's new wrapper (a cache
      lookup per iteration), many iterations: proven by a `while` loop whose
      test is not against a literal, or `range(n)` of a variable (steps the
      code does not bound: the JIT documentation's `while i < n:`), a literal
      count of 100 or more, or a
      loop inside a function the project calls many times; disproved by a loop
      over a few literal items (`for dtype in (f32, bf16)`, `range(3)`);
      assumed for a loop over items whose number is not shown (`for x in
      xs`). Code under a trace (a jitted function's body) never compiles the
      inner jit on its own: it is not checked.

    ## Known problems
    A jit that a cache guards compiles once per key, not once per iteration,
    and is not reported: `if key not in cache: cache[key] = jax.jit(...)`
    (also through `fn = cache.get(key)` / `if fn is None:` and a local name
    stored afterwards, or a jit-decorated `def` stored the same way),
    `cache.setdefault(key, jax.jit(...))`, and any jit inside a function
    memoised with `functools.lru_cache` / `functools.cache`. The guard must
    test the same container and key the result is stored under. A store into
    a local that nothing reads after the loop is no reuse: reported.

    A name is resolved to the definition that reaches the jit: identical
    blocks that each bind `f = lambda ...` or `def loss` are each reported.
    How many times a loop runs is read from literals, and from a parameter
    for which every call in the project passes an int literal (`g(x, 3)`, or
    the parameter's literal default): the largest such value. A count passed
    any other way (a variable, a call from another module) is not followed.

    A callable made in the loop and passed as a static argument of a jitted
    function (`jit(f, static_argnums=0)(adam(lr))` per iteration) is not
    reported here; JF302 reports that case where the callable is made per
    call of a function.

    ## Example
    ```python
    def g(x, n):
        i = 0
        while i < n:
            i = jax.jit(lambda v: step(v))(i)
        return x + i
    ```

    ## Use instead
    ```python
    step_jit = jax.jit(step)

    def g(x, n):
        i = 0
        while i < n:
            i = step_jit(i)
        return x + i
    ```

    ## Fix safety
    Safe when the jitted callable (and the transform's options) read nothing
    bound in the loop, and everything they read is bound before it:
    `jax.jit(...)` is bound to a fresh name (`step_jit`) just before the loop —
    or, for a comprehension, before the statement holding it — and the loop
    calls that; `h = jax.jit(f)` written inside the loop is moved out as it is.
    `jax.jit(partial(f))` becomes `jax.jit(f)` and `jax.jit(lambda x: f(x))`
    becomes `jax.jit(f)`. Dtypes: no condition — the same function is traced
    with the same arguments (Python scalars stay weakly typed either way). Nested loops are hoisted one loop per pass, up to the
    outermost. When the callable reads a loop variable, or `@jax.jit` decorates
    a `def` inside the loop, there is no fix: hoisted, it would be traced once
    with the first iteration's value baked in — make that value an argument
    (static with `static_argnames` if it must be a Python value) and jit once
    outside the loop.

    A lambda, a `functools.partial` with arguments, or an inner `def` hoisted
    before the loop but still inside a function would be a new callable on
    every call of that function (a JF302 finding), and a fix never creates a
    finding of another rule: such a callable is jitted once at module level
    instead, just before the function — JF302's fix, unsafe for the same
    reasons (module-level values it reads are captured at its first trace) —
    when it reads nothing of the function; otherwise there is no fix.
    """
    backends = (
        Claim(
            "`jax.jit` of a fresh callable inside a loop misses JAX's compilation cache on every iteration",
            gpu=tracing("the cache is JAX's, keyed by the callable's identity, whatever the backend"),
            cpu=Evidence(True, CPU_MEASURED + ": `g_inner_jitted_lambda` 5 → 1 compilations per call"),
            tpu=tracing("the cache is JAX's, keyed by the callable's identity, whatever the backend"),
        ),
    )
    valid = (
        "import jax\ndef f(v):\n    return v + 1\ndef g(xs):\n    h = jax.jit(f)\n    return [h(x) for x in xs]\n",
        "import jax\n@jax.jit\ndef g(x):\n    for i in range(3):\n        x = jax.jit(lambda v: v * 2)(x)\n    return x\n",
        "import jax, functools\nCACHE = {}\ndef g(x, ks):\n    for k in ks:\n        if k not in CACHE:\n"
        "            CACHE[k] = jax.jit(functools.partial(pow, k))\n        x = CACHE[k](x)\n    return x\n",
        "import jax\ndef g(x, solvers):\n    for solver in solvers:\n        x = jax.jit(solver.update)(x)\n    return x\n",
        "import jax\ndef f(v):\n    return v + 1\ndef g(x):\n    for _ in range(3):\n        x = jax.jit(f)(x)\n    return x\n",
        "import jax, functools\ndef project(x, kind):\n    return kind.project(x)\ndef build(kinds):\n    out = {}\n"
        "    for kind in kinds:\n        out[kind.name] = jax.jit(functools.partial(project, kind=kind))\n    return out\n",
    )
    invalid = (
        "import jax\ndef g(x, n):\n    for _ in range(n):\n        x = jax.jit(lambda v: v * 2)(x)\n    return x\n",
        "import jax\ndef f(v):\n    return v + 1\ndef g(x, n):\n    i = 0\n    while i < n:\n        i = jax.jit(f)(i)\n"
        "    return x + i\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        for site in model.index.calls:
            if site.loop is None or model.is_traced_scope(site.scope):
                continue  # under a trace a jit is inlined into that trace: it never compiles on its own
            found = compiling_call(model, site.call, site.scope)
            if found is None:
                yield from self._eager_control_flow(model, site)
                continue
            if compiled_once_per_key(model, site.call, site.scope):
                continue  # `if key not in cache: cache[key] = jax.jit(...)`: once per key
            if _ahead_of_time(model, site.call):
                continue  # `jax.jit(f).lower(x)`: lowered explicitly, no cached dispatch to lose
            transform, target = found
            what, fresh = describe_callable(model, target, site.scope, site.loop)
            own = compiles_per_application(transform) and not fresh
            if own:
                fresh = True  # `nnx.jit(step)`: every application is a new jitted function that compiles on its own
            elif transform not in _JAX_COMPILING and (fresh is False or isinstance(target, cst.Call)):
                # Another library's wrapper: whether it caches per function, or compares a wrapper object
                # it is given by its contents (`eqx.filter_jit(eqx.filter_vmap(f))`), is its own affair.
                fresh = None
            loops = _loops_around(model, site.call, site.scope)
            yield self._violation(model, site.call, transform, what, fresh, loops, site.scope, target,
                                  {"site": site, "target": target, "own_cache": own})
        for fn in model.index.functions:
            if not isinstance(fn.node, cst.FunctionDef) or model.is_traced_scope(fn.parent):
                continue
            loop = _loop_of_def(model, fn)
            if loop is None or compiled_once_per_key(model, fn.node, fn.parent):
                continue
            for dec in fn.node.decorators:
                t = TracedAnalysis(model).transform_of(dec.decorator, fn.parent)
                if t is not None and t[0] in COMPILING:
                    yield self._violation(model, dec.decorator, t[0], f"`{fn.name}` (a `def` in the loop body)", True,
                                          _loops_around(model, fn.node, fn.parent), fn.parent, fn.node,
                                          {"decorated": fn})

    def _eager_control_flow(self, model: SemanticModel, site) -> Iterator[Violation]:
        """`lax.scan(obj.step, ...)` in a host loop: outside a trace, lax control flow traces its
        functions and compiles the loop, caching on their identity; a function that is a new object
        on every iteration (a bound method, a lambda) compiles on every iteration. (One function
        object is found in the cache, and there is no wrapper to rebuild: nothing to report.)"""
        qn = model.qn(site.call.func, site.scope)
        slots = EAGER_COMPILING.get(qn or "")
        if slots is None:
            return
        for position, name in slots:
            target = positional(site.call, position) or keyword(site.call, name)
            if target is None:
                continue
            what, fresh = describe_callable(model, target, site.scope, site.loop)
            own = compiles_per_application(qn) and not fresh
            if not (fresh or own or (fresh is None and isinstance(target, cst.Attribute))):
                continue  # one function object: found in the cache, and no wrapper to rebuild
            loops = _loops_around(model, site.call, site.scope)
            yield self._violation(model, target, qn, what, True if own else fresh, loops, site.scope, target,
                                  {"eager": site, "target": target, "own_cache": own})
            return  # one finding per call

    def _violation(self, model, node, qualified, what, fresh, loops, scope, target, data) -> Violation:
        loop = loops[0]
        kind = "loop" if isinstance(loop, (cst.For, cst.While)) else "comprehension"
        eager = data.get("eager")
        transform = transform_name(eager.call if eager is not None else node, qualified)  # `jit` after `from jax import jit`
        attribute = isinstance(target, cst.Attribute)
        if data.get("own_cache") and eager is not None:
            cost = (f"outside a trace `{transform}` wraps its function in a new one on every call, so every "
                    "iteration traces and compiles again")
        elif data.get("own_cache"):
            cost = (f"every iteration builds a new `{transform}` function, which shares no compiled program with "
                    "the others, so it traces and compiles again each time")
        elif eager is not None and fresh:
            cost = (f"outside a trace `{transform}` compiles its function, cached on the function object, and this "
                    "one is a new object on every iteration, so every iteration traces and compiles again")
        elif eager is not None:
            cost = (f"outside a trace `{transform}` compiles its function, cached on the function object, and a "
                    "bound method is a new object on every read, so every iteration would trace and compile again")
        elif fresh:
            cost = "it is a new object on every iteration, so JAX traces and compiles again each time"
        elif fresh is None and attribute and (qualified in _JAX_COMPILING or eager is not None):
            cost = "a bound method is a new object on every read, so JAX traces and compiles again each time"
        elif fresh is None and not isinstance(target, cst.Call):
            cost = (f"every iteration builds a new `{transform}` wrapper: compiled again each time unless "
                    f"`{transform}` shares compiled programs across wrappers of one function")
        elif fresh is None:
            cost = (f"every iteration builds a new wrapper of what {what} returns: compiled again each time if "
                    "that is a new function, found in the cache after a slower lookup if it is the same one")
        else:
            cost = ("the same function on every iteration, so the compiled program is cached, but every iteration "
                    "builds a new wrapper and re-hashes its arguments to find it")
        subject = f"`{transform}` of {what}"
        if fresh is None and attribute and (qualified in _JAX_COMPILING or eager is not None):
            text = model.module.code_for_node(target).strip()[:40]
            new = assumed("fresh-callable", subject, f"assumes `{text}` is a bound method (a new object on every read): "
                          "what it is, is not shown")
        elif fresh is None:
            # Whether another library's wrapper, or what a call returns, compiles again is not shown by the code.
            new = assumed("fresh-callable", subject, f"whether `{transform}` compiles again for a new wrapper depends "
                          "on how it caches" if not isinstance(target, cst.Call) else
                          f"assumes {what} is a new function each time")
        elif data.get("own_cache") and eager is not None:
            new = proven("fresh-callable", subject, "own-cache", f"outside a trace `{transform}` wraps its function in a "
                         f"new one on every call: a new program on every iteration of the {kind}")
        elif data.get("own_cache"):
            new = proven("fresh-callable", subject, "own-cache", f"`{transform}` builds a new jitted function on every "
                         f"iteration of the {kind}, and its applications share no compiled program")
        elif eager is not None:
            new = proven("fresh-callable", subject, "eager-control-flow", f"a new object on every iteration of the "
                         f"{kind}, and `{transform}`, called outside a trace, compiles per function object")
        elif fresh:
            new = proven("fresh-callable", subject, "built-in-loop", f"a new object on every iteration of the {kind}")
        else:
            new = proven("fresh-callable", f"the `{transform}` wrapper of {what}", "new-wrapper",
                         f"a new `{transform}` wrapper on every iteration of the {kind}; the function is the same "
                         "object, so the compiled program is found in the cache")
        same = _same_program(model, node if data.get("decorated") is None else target, target, scope, loops,
                             fresh, subject)
        repeated = loop_repeats(model, loops, scope, subject, many=fresh is False)
        return Violation(
            node,
            message(f"`{transform}` of {what} inside a {kind} (line ", LineOf(loop), f"): {cost}; "
                    + (f"jit once, outside the {kind}" if eager is None else
                       f"make the function once, outside the {kind}" if not data.get("own_cache") else
                       f"jit a function that calls `{transform}` once, outside the {kind}")),
            data={**data, "transform": qualified, "fresh": fresh, "loop": loop},
            premises=(new, same, repeated),
        )


def _same_program(model: SemanticModel, built: cst.CSTNode, target, scope: Scope, loops: list[cst.CSTNode],
                  fresh: bool | None, subject: str):
    """`same-program(subject)`: whether every iteration's jit would compile the same program.

    DISPROVED where the loop itself picks the program (`jax.jit(fns[i])`, a lambda that calls what the
    loop binds, a value from a literal list of Python constants: one compilation each, whatever is
    done), and where the callable reads values the loop binds and is kept for later calls (stored,
    returned, the element of a comprehension): a program per item, each compiled once and reused —
    unless those values are arrays, data an argument would carry. PROVEN otherwise: it reads nothing
    the loop binds (the same code and values), or reads the loop's values only as data it could take
    as arguments, and is used in its iteration only."""
    if isinstance(built, cst.FunctionDef):
        varies = _calls_loop_bound(model, built, loops)
    else:
        varies = varies_per_iteration(model, target, scope, loops)
    if varies:
        return disproved("same-program", subject, "chosen-by-loop", "the loop picks a different program on every "
                         "iteration (a different function, or one that calls what the loop binds): one compilation "
                         "each, whatever is done")
    values = _loop_values(model, target, scope, loops)
    if values:
        names = ", ".join(f"`{n}`" for n in sorted(values))
        keeper = kept_for_reuse(model, built, scope, loops)
        if keeper is not None and not all(array_data(model, bindings, owner) for owner, bindings in values.values()):
            return disproved("same-program", subject, "kept-for-reuse", f"it reads {names} from the loop and is kept "
                             "for later calls (line ", LineOf(keeper), "): a program per item, each compiled once and "
                             "reused")
        if keeper is not None:
            return proven("same-program", subject, "array-data", f"it reads {names} from the loop, arrays that an "
                          "argument would carry: one program would serve every item")
        return proven("same-program", subject, "loop-values-as-arguments", f"it reads {names} from the loop, values it "
                      "could take as arguments, and is used in its iteration only")
    if fresh is False:
        return proven("same-program", subject, "one-function", "the same function on every iteration")
    return proven("same-program", subject, "same-callable", "it reads nothing the loop binds: the same code and "
                  "values on every iteration")


def _loop_values(model: SemanticModel, target, scope: Scope, loops: list[cst.CSTNode]) -> dict:
    """The names the jitted callable reads that the loops bind (name -> its bindings): for a name
    of a lambda, a def or a call made in the loop, what that reads."""
    node = target
    if isinstance(target, cst.Name):
        fn = reaching_function(model, target, scope)
        made = lambda_bound_to(model, target.value, scope, target)
        if fn is not None and any(_inside(model, fn.node, loop) for loop in loops):
            node = fn.node
        elif made is not None and any(_inside(model, made, loop) for loop in loops):
            node = made
        else:
            found = model.bindings_at(target, scope)
            if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" \
                    and isinstance(found[1][0].value, cst.Call) \
                    and any(_inside(model, found[1][0].value, loop) for loop in loops):
                node = found[1][0].value
    if node is None:
        return {}
    inner = model.index.function_of.get(node)
    if isinstance(node, cst.FunctionDef) and inner is not None:
        reads = list(_function_reads(inner))
    else:
        reads = list(_expression_reads(model, node, scope))
    out: dict = {}
    for name, where in reads:
        found = model.lookup(name, where)
        if found is None or found[0].node is node or _inside(model, found[0].node, node):
            continue  # the callable's own parameters and locals
        if _bound_in(model, name, where, loops):
            out[name] = found
    return out


RULE = JitInLoop
