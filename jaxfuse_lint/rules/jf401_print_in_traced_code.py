"""JF401 print-in-traced-code."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.scopes import Function, Scope, walk
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import ASSUMED, PROVEN, assumed
from jaxfuse_lint.model.traced_premise import traced_premise
from jaxfuse_lint.rules.base import Rule, Violation, message, reason_parts, staged_reason
from jaxfuse_lint.core.targets import Claim, tracing


def printed_values(call: cst.Call) -> Iterator[cst.BaseExpression]:
    """The values a `print(...)` call shows: its positional arguments, and the expressions
    interpolated into f-string arguments."""
    for a in call.args:
        if a.keyword is not None:
            continue
        if isinstance(a.value, (cst.FormattedString, cst.ConcatenatedString)):
            for node in walk(a.value):
                if isinstance(node, cst.FormattedStringExpression):
                    yield node.expression
        else:
            yield a.value


class PrintInTracedCode(Rule):
    code = "JF401"
    premises = ("runs-traced", "traced")
    name = "print-in-traced-code"
    summary = "`print()` of a traced value inside traced code (runs once, at trace time, and prints tracers)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags a call of the builtin `print` inside staged code (a function under
    `jax.jit`, `pmap`, `vmap`, `checkpoint`, a lax loop body or branch, or
    called from one) when one of the printed values — an argument or an
    expression inside an f-string argument — is traced: derived from a
    non-static argument through array operations, or computed by a jax array
    operation in staged code whatever its inputs (`jnp.ones(x.shape)`,
    `jnp.arange(3)`: under a trace every `jax.numpy`/`lax` result is a tracer,
    except inside `with jax.ensure_compile_time_eval():`), or a row of a traced
    array (`for v in x:`). Functions rebound to a transform of themselves
    (`f = jax.jit(f)`) count, and so do framework bodies, which their
    frameworks run only under their transforms: a flax linen Module's
    `__call__`/`setup`/`@nn.compact` methods, an nnx or equinox Module's
    `__call__`, haiku Module methods and `hk.transform`ed functions (their
    input is a tracer; flags like `train` are not). Calls are followed through
    objects and wrappers: a handler's method held in an attribute
    (`self.handler.rhs(t, y)`, the handler passed to the constructor), a
    function stored in an attribute (`self.grad_fn = jax.value_and_grad(
    self.loss)`), a name bound to `jax.grad(f)`, `jax.checkpoint(f)` or a
    lambda, and the values methods reached that way return. The functions
    jax's example libraries return (`opt_init, opt_update, get_params =
    optimizers.adam(...)`, stax's `init_fun, apply_fun`) compute with jax:
    `get_params(opt_state)` of a traced state is a tracer. What JF402 shows
    traced counts here too: a field of a traced NamedTuple or flax struct
    (`print(state.error)` in a `while_loop` condition whose carry is built
    from such a record), a value an object was built with (`self.value`),
    a value stored in a dict under a literal key.

    Under an eager differentiating transform (`jax.grad(f)(x)`, not jitted)
    `print` runs on every call, but a value computed from the differentiated
    argument by differentiable operations is a JVP tracer there: `print`
    shows `GradTracer(primal=..., ...)` (jax 0.10), not the number. Such a
    print is flagged; a value with no tangent (another argument, a
    comparison, a shape) prints as it is and is not.

    Code run under `with jax.disable_jit():` is not traced: a `print` in a
    jitted function every call of which runs there shows values and is not
    flagged. Under `jax.disable_jit(flag)` with a configuration flag (a debug
    mode: values when it is on, tracers when it is off) the finding is in the
    preview tier.

    ## Premises
    `runs-traced(f)`, proven by the route that traces `f` (assumed under
    `jax.disable_jit(flag)`), and `traced(value)` for one printed value: proven
    where the code shows the tracer (JF402's inferences: an argument a route
    traces, a jax operation staged out under the trace, the argument an eager
    `grad` differentiates), assumed where only a framework's convention makes
    it one (preview), disproved where the value is hashed by a
    `functools.cache`d function.

    ## Why is this bad?
    `print` is a Python side effect. It runs while the function is traced, and
    never again while the compiled program runs: you see one line per
    compilation instead of one per call, and what it shows is a tracer
    (`JitTracer(float32[])`, or `Traced<ShapedArray(float32[])>...` in older
    JAX), not the values
    (the JIT tutorial's `log2_with_print`). `jax.debug.print` is staged into the
    program and prints the runtime values on every call.

    Printing only static values (`print(x.shape)`, `print("tracing f")`) is a
    legitimate way to observe tracing and is not flagged.

    ## Known problems
    A value the model cannot classify (an attribute of an argument whose
    class the module does not show, which may be a static pytree field, or the
    result of an unknown call) is not considered traced, so `print(state.step)`
    of an unknown `state` is not flagged.

    ## Example
    ```python
    @jax.jit
    def log2(x):
        print("printed x:", x)
        return jnp.log(x) / jnp.log(2.0)
    ```

    ## Use instead
    ```python
    @jax.jit
    def log2(x):
        jax.debug.print("printed x: {}", x)
        return jnp.log(x) / jnp.log(2.0)
    ```

    ## Fix safety
    Safe: the call becomes `jax.debug.print` with a format string built from
    the arguments — literal text (braces escaped as `{{`/`}}`) and the `sep`
    separator between them, a `{}` placeholder for each value, f-string parts
    turned into placeholders (with their conversion and format spec). An `end`
    that ends with a newline is folded into the format. The module's alias for
    `jax` is reused, or `import jax` is added. There is no fix when `print`
    gets `file=`, `flush=`, `*args`, a non-literal `sep`/`end`, an `end`
    without a final newline, an f-string with `{x=}` or nested replacement
    fields, bytes, or a value that is neither a literal nor traced
    (`jax.debug.print` only accepts arrays and numbers as values, not a string
    variable). A tuple field (`f"{a, b}"`) is passed as one tuple argument,
    as `format` sees it; a tuple that holds Python values (`{a, 3}`, where the
    3 would print as an array) gets no fix, nor does a literal brace before
    the first value: `jax.debug.print` formats only when its format string
    starts with a field or plain text, and otherwise prints the format as
    written (`{{` doubled) followed by the values. The fixed code prints on every call, at run time, so output
    appears more often than before — which is the point. Dtypes: no condition —
    the printed values are not changed or converted, and the function's results
    are untouched.
    """
    backends = (
        Claim(
            "`print` in traced code runs once, while tracing, and prints tracers, not values",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax\n@jax.jit\ndef f(x):\n    jax.debug.print('x = {}', x)\n    return x\n",
        "import jax\n@jax.jit\ndef f(x):\n    print('tracing f with shape', x.shape)\n    return x\n",
        "def host(x):\n    print('x:', x)\n    return x\n",
    )
    invalid = (
        "import jax\n@jax.jit\ndef f(x):\n    print('printed x:', x)\n    return x\n",
        "import jax, jax.numpy as jnp\ndef body(i, c):\n    print(f'c={c}')\n    return c + 1\n"
        "def run(x):\n    return jax.lax.fori_loop(0, 3, body, x)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        modes: dict[int, bool | str] = {}
        for site in model.index.calls:
            scope: Scope = site.scope
            if not isinstance(scope, Function) or not model.is_traced(scope):
                continue
            if model.qn(site.call.func, scope) != "builtins.print":
                continue
            if not st.is_staged(scope, batching=True):
                yield from _differentiated_print(model, site.call, scope)
                continue
            traced = [v for v in printed_values(site.call) if staged_values(model).kind(v, scope) is Kind.TRACED]
            if not traced:
                continue
            shown = ", ".join(f"`{model.module.code_for_node(v).strip()}`" for v in traced[:3])
            if id(scope) not in modes:
                modes[id(scope)] = _debug_mode(model, scope)
            debug = modes[id(scope)]
            if debug is True:
                continue  # every call runs under `jax.disable_jit()`: nothing is traced, values print
            runs = evidence(model).premise(scope, site.call, raises=False)
            if runs is None:
                continue
            if debug:
                runs = assumed("runs-traced", runs.subject, f"assumes {debug}")
            tp = traced_premise(model)
            values = [p for p in (tp.premise(v, scope) for v in traced) if p is not None]
            if not values:
                continue
            # One printed tracer is enough: the proven one, else an assumed one (a printed value
            # disproved to be traced says nothing about the others).
            value = next((p for p in values if p.status == PROVEN), None) or next(
                (p for p in values if p.status == ASSUMED), values[0])
            yield Violation(
                site.call,
                message(
                    f"`print` runs only while `{scope.display_name}` is traced (",
                    *reason_parts(staged_reason(model, scope, batching=True)),
                    f"): it prints tracers for {shown} once per compilation, not the values on each call; "
                    "use `jax.debug.print`",
                ),
                data={"call": site.call, "scope": scope, "traced": traced},
                premises=(runs, value),
            )


def _differentiated_print(model: SemanticModel, call: cst.Call, fn: Function) -> Iterator[Violation]:
    """`print(loss)` in a function an eager `jax.grad` runs (not staged: it prints on every call):
    a value carrying the differentiated argument's tangent is a JVP tracer there, and `print` shows
    the tracer (`GradTracer(primal=..., typeof(tangent)=...)`, jax 0.10), not the number;
    `jax.debug.print` shows the value."""
    tp = traced_premise(model)
    if not tp.differentiated_params(fn):
        return
    found = [(v, tp.differentiated_premise(v, fn)) for v in printed_values(call)]
    found = [(v, p) for v, p in found if p is not None]
    if not found:
        return
    runs = evidence(model).premise(fn, call, raises=False)
    if runs is None:
        return
    value, (premise, name, reason) = found[0]
    shown = ", ".join(f"`{model.module.code_for_node(v).strip()}`" for v, _ in found[:3])
    yield Violation(
        call,
        message(
            f"`print` shows {shown} as a tracer, not as a number: `{fn.display_name}` is differentiated (",
            *reason_parts(reason),
            f") and the value carries the tangent of `{name}`, so it is a JVP tracer "
            "(`GradTracer(primal=..., ...)`); use `jax.debug.print`, which prints the value",
        ),
        data={"call": call, "scope": fn, "traced": [v for v, _ in found]},
        premises=(runs, premise),
    )


def _debug_mode(model: SemanticModel, fn: Function) -> bool | str:
    """How the host code runs the compiled functions that trace fn: True when every such call
    (and there is one) runs under `with jax.disable_jit():` (or `disable_jit(True)`): jit is off,
    nothing is traced and `print` shows values; the assumption, as a preview text, when they run
    under `jax.disable_jit(flag)` with a flag the code does not show (a debug mode: values when
    it is on, tracers once per compilation when it is off); False otherwise."""
    from jaxfuse_lint.model.frozen_values import compile_entries, compiled_callees

    if not _uses_disable_jit(model):
        return False  # the common case, answered once per module
    entries = compile_entries(model, fn)
    by_callee = model.__dict__.get("_host_calls_of_compiled")
    if by_callee is None:  # made once per module: per traced function, every call was asked again
        by_callee = {}
        for i, site in enumerate(model.index.calls):
            if not model.is_traced_scope(site.scope):
                for callee in compiled_callees(model, site.call, site.scope):
                    by_callee.setdefault(callee, []).append((i, site))
        model.__dict__["_host_calls_of_compiled"] = by_callee
    sites = sorted({i: site for e in entries for i, site in by_callee.get(e, ())}.items(), key=lambda kv: kv[0])
    flags = []
    for _, site in sites:
        flag = _disable_jit_around(model, site.call, site.scope, 0)
        if flag is None:
            return False
        flags.append(flag)
    if not flags:
        return False
    if all(f is True for f in flags):
        return True
    shown = next(f for f in flags if f is not True)
    return (f"that `{shown}` is false where `{fn.display_name}` runs (under `jax.disable_jit({shown})` it is "
            "not traced and `print` shows values: a debug mode)")


def _uses_disable_jit(model: SemanticModel) -> bool:
    found = model.__dict__.get("_uses_disable_jit")
    if found is None:
        found = model.__dict__["_uses_disable_jit"] = any(
            model.qn(site.call.func, site.scope) == "jax.disable_jit" for site in model.index.calls_named("disable_jit"))
    return found


def _disable_jit_around(model: SemanticModel, node: cst.CSTNode, scope, depth: int):
    """True / the flag's text when node runs inside `with jax.disable_jit(...)` (directly, or in a
    host function every call of which does), None otherwise."""
    for a in model.ancestors(node):
        if isinstance(a, cst.With):
            for item in a.items:
                call = item.item
                if isinstance(call, cst.Call) and model.qn(call.func, model.scope_of(a)) == "jax.disable_jit":
                    arg = call.args[0].value if call.args else None
                    if arg is None or (isinstance(arg, cst.Name) and arg.value == "True"):
                        return True
                    if isinstance(arg, cst.Name) and arg.value == "False":
                        return None
                    return model.module.code_for_node(arg).strip()
    if depth >= 3 or not isinstance(scope, Function):
        return None
    from jaxfuse_lint.model.call_frequency import call_sites

    sites, escapes = call_sites(model, scope)
    if escapes or not sites:
        return None
    found = [_disable_jit_around(model, s.call, s.scope, depth + 1) for s in sites]
    if any(f is None for f in found):
        return None
    return True if all(f is True for f in found) else next(f for f in found if f is not True)


RULE = PrintInTracedCode
