"""JF301 jit-in-loop."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel, keyword, positional
from jaxfuse_lint.model.api import COMPILING, TRANSFORMS
from jaxfuse_lint.model.compile_cache import compiled_once_per_key
from jaxfuse_lint.model.fresh_callables import describe_callable, lambda_bound_to, reaching_function
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model.scopes import PYTHON_LOOPS, Function, Scope, iter_children
from jaxfuse_lint.model.traced import TracedAnalysis
from jaxfuse_lint.model.premises import assumed, proven
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, Claim, Evidence, tracing


def compiling_call(model: SemanticModel, call: cst.Call, scope: Scope) -> tuple[str, cst.BaseExpression | None] | None:
    """`jax.jit(f, ...)` or `partial(jax.jit, ...)(f)`: the transform and the callable it gets."""
    t = TracedAnalysis(model).transform_of(call.func, scope)
    if t is not None and t[0] in COMPILING and (t[1] is None or t[1] is not call):
        return t[0], positional(call, 0) or keyword(call, "fun")
    return None


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
    premises = ("fresh-callable", "called-repeatedly")
    name = "jit-in-loop"
    summary = "`jax.jit`/`jax.pmap` applied inside a Python loop or comprehension"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags `jax.jit` (and `jax.pmap`, `pjit`, `equinox.filter_jit`) applied
    inside a Python `for`/`while` loop or a comprehension, in code that is not
    itself traced — including `@jax.jit` on a `def` written inside the loop.

    ## Why is this bad?
    JAX caches compiled programs per callable object. A lambda, a
    `functools.partial` or a function defined inside the loop is a new object
    on every iteration, so every iteration traces and compiles again — often
    thousands of times slower than the computation (the JIT tutorial's
    `g_inner_jitted_lambda` and `g_inner_jitted_partial`). So is a transform
    of a function (`jax.jit(jax.grad(f))`, `jax.jit(jax.vmap(f))`), a wrapper
    that returns a new function (`chex.assert_max_traces(f, n)`), or what a
    local factory returning a lambda or an inner def gives. With one function
    object — a module-level function, or a `def`/lambda made once before the
    loop — the compiled program is found in the cache, but every iteration
    still builds a new wrapper and takes the slower lookup path (measured on
    CPU: about 3x the dispatch time of a reused jitted function;
    `g_inner_jitted_normal`). When the callable is the result of a call the
    model cannot see into, the message says both outcomes. The message says
    which case it is.

    ## Known problems
    A jit that a cache guards compiles once per key, not once per iteration,
    and is not reported: `if key not in cache: cache[key] = jax.jit(...)`
    (also through `fn = cache.get(key)` / `if fn is None:` and a local name
    stored afterwards, or a jit-decorated `def` stored the same way),
    `cache.setdefault(key, jax.jit(...))`, and any jit inside a function
    memoised with `functools.lru_cache` / `functools.cache`. The guard must
    test the same container and key the result is stored under.

    Nor is a jit of a function the loop itself chooses — `jax.jit(fns[i])`,
    `jax.jit(solver.update)` for each solver, `jax.jit(make_fn(option=i))`,
    or a `partial` of one: every iteration compiles a different function
    whatever is done, so there is nothing to move out of the loop. The same
    holds for a lambda or a `def` in the loop that *calls* something the loop
    binds (`lambda v: model.apply(params, v)` with `model = Dense(n)` built in
    the loop, or a `def` of the loop it hands to `lax.scan`), or reads a loop
    variable running over literal Python constants (`for n in (10, 100):`,
    values a program is specialised for): the program differs per iteration.
    A lambda, a `partial`'s bound
    arguments or a `def` in the loop that only read loop values as data are
    still reported: those values can become arguments — also under a
    transform (`jax.jit(jax.grad(loss))` of a `loss` the loop defines). A name
    is resolved to the definition that reaches the jit: identical blocks that
    each bind `f = lambda ...` or `def loss` are each reported.

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
    )
    invalid = (
        "import jax\ndef g(x, n):\n    for _ in range(n):\n        x = jax.jit(lambda v: v * 2)(x)\n    return x\n",
        "import jax\ndef f(v):\n    return v + 1\ndef g(xs):\n    return [jax.jit(f)(x) for x in xs]\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        for site in model.index.calls:
            if site.loop is None or model.is_traced_scope(site.scope):
                continue
            found = compiling_call(model, site.call, site.scope)
            if found is None:
                continue
            if compiled_once_per_key(model, site.call, site.scope):
                continue  # `if key not in cache: cache[key] = jax.jit(...)`: once per key
            transform, target = found
            if varies_per_iteration(model, target, site.scope, _loops_around(model, site.call, site.scope)):
                continue  # a different function on every iteration: one compilation each, whatever is done
            if _ahead_of_time(model, site.call):
                continue  # `jax.jit(f).lower(x)`: lowered explicitly, no cached dispatch to lose
            what, fresh = describe_callable(model, target, site.scope, site.loop)
            if transform not in _JAX_COMPILING and (fresh is False or isinstance(target, cst.Call)):
                # Another library's wrapper: whether it caches per function, or compares a wrapper object
                # it is given by its contents (`eqx.filter_jit(eqx.filter_vmap(f))`), is its own affair.
                fresh = None
            yield self._violation(site.call, transform, what, fresh, site.loop, {"site": site, "target": target})
        for fn in model.index.functions:
            if not isinstance(fn.node, cst.FunctionDef) or model.is_traced_scope(fn.parent):
                continue
            loop = _loop_of_def(model, fn)
            if loop is None or compiled_once_per_key(model, fn.node, fn.parent):
                continue
            if _calls_loop_bound(model, fn.node, _loops_around(model, fn.node, fn.parent)):
                continue  # the program differs per iteration: one compilation each, whatever is done
            for dec in fn.node.decorators:
                t = TracedAnalysis(model).transform_of(dec.decorator, fn.parent)
                if t is not None and t[0] in COMPILING:
                    yield self._violation(dec.decorator, t[0], f"`{fn.name}` (a `def` in the loop body)", True, loop,
                                          {"decorated": fn})

    def _violation(self, node, qualified, what, fresh, loop, data) -> Violation:
        kind = "loop" if isinstance(loop, (cst.For, cst.While)) else "comprehension"
        transform = as_written(node, qualified, same_name=True)  # `jit` after `from jax import jit`
        if fresh:
            cost = "it is a new object on every iteration, so JAX traces and compiles again each time"
        elif fresh is None and not isinstance(data.get("target"), cst.Call):
            cost = (f"every iteration builds a new `{transform}` wrapper: compiled again each time unless "
                    f"`{transform}` shares compiled programs across wrappers of one function")
        elif fresh is None:
            cost = (f"every iteration builds a new wrapper of what {what} returns: compiled again each time if "
                    "that is a new function, found in the cache after a slower lookup if it is the same one")
        elif isinstance(data.get("target"), cst.Attribute):
            cost = ("if it is a method, every read makes a new bound-method object and JAX traces and compiles "
                    "again each time; if not, the compiled program is cached, but every iteration builds a new "
                    "wrapper and re-hashes its arguments to find it")
        else:
            cost = ("the compiled program is cached, but every iteration builds a new wrapper and re-hashes "
                    "its arguments to find it")
        # Whether another library's wrapper compiles again is not shown by the code: assumed.
        subject = f"`{transform}` of {what}"
        if fresh is None:
            new = assumed("fresh-callable", subject, f"whether `{transform}` compiles again for a new wrapper depends "
                          "on how it caches")
        elif fresh:
            new = proven("fresh-callable", subject, "built-in-loop", f"a new object on every iteration of the {kind}")
        else:
            new = proven("fresh-callable", subject, "new-wrapper", f"a new `{transform}` wrapper on every iteration of "
                         f"the {kind}, which re-hashes its arguments to find the cached program")
        repeated = proven("called-repeatedly", subject, kind, f"inside the {kind} on line ", LineOf(loop))
        return Violation(
            node,
            message(f"`{transform}` of {what} inside a {kind} (line ", LineOf(loop), f"): {cost}; jit once, outside the {kind}"),
            data={**data, "transform": qualified, "fresh": fresh, "loop": loop},
            premises=(new, repeated),
        )


RULE = JitInLoop
