"""JF302 jit-of-fresh-callable."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.static_callables import static_callables
from jaxfuse_lint.model.traced import TracedAnalysis
from jaxfuse_lint.model.call_frequency import (
    MANY, UNKNOWN, Frequency, call_sites, entry_point, external_calls, frequency, function_repeats,
    runs_only_traced,
)
from jaxfuse_lint.model.compile_cache import compiled_once_per_key, memoised_function
from jaxfuse_lint.model.fresh_callables import array_data, compiles_per_application, describe_callable
from jaxfuse_lint.model.premises import Premise, assumed, disproved, proven
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.rules.jf301_jit_in_loop import (
    _bound_in, _expression_reads, _loop_of_def, _loops_around, compiling_call, transform_name,
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
    a lambda, a `functools.partial`, a function defined in that body, a bound
    method, or a transform of a function (`jax.grad(f)`, `jax.vmap(f)`) — when
    the project shows that the same program is compiled more than once:

    - the jitted callable is called in the same call of the function
      (`jax.jit(lambda v: ...)(x)`, or through a local name), and the function
      runs more than once: called in a loop or comprehension, from two or more
      places, by a function that runs many times, or once per leaf by
      `jax.tree_util.tree_map`;
    - the jitted callable is kept for reuse — called in a loop inside the
      function (compiled once per call: a train step made in `main()`), or
      returned by a factory — and the function is called again for the same
      program: in a loop that does not change the arguments the callable
      closes over (a `train_epoch()` per epoch, not a `fit(optimizer)` per
      optimizer), or from a function that runs many times with arguments that
      do not depend on its call (`basis = get_basis(3)` in a `render_frame`
      run per frame).

    - a callable made anew on every call is passed as a *static* argument of
      a jitted function (see below), and the function runs more than once.

    The transform may be reached through a name that holds it
    (`pmap_for_my_devices = partial(jax.pmap, devices=...)`) or a helper of
    the module that returns it applied to its argument (`maybe_jit(fn)`
    returning `jit(fn)`). `nnx.jit` and `nnx.pmap` build a new jitted function
    on every application, whatever they are given: `nnx.jit(step)(model, x)`
    inside a function compiles on every call even for one module-level `step`.

    How often a function runs is read from the whole project: a call in a loop,
    or from a function that runs many times, in another checked module counts
    (the message names it). Calling an instance (`pipeline(x)`) is a call of
    its class's `__call__`.

    ### Static arguments
    A jitted function keys its compiled programs on its static arguments, by
    hash and equality, and a function object hashes by identity: a lambda, a
    `functools.partial`, an inner `def` or a transform made on every call and
    passed as a static argument is a new key on every call, so the jitted
    function compiles again — the harm of jitting a fresh callable, reached
    through an argument (measured, jax 0.10: five calls, five compilations).
    This rule reports it where the value is made (the lambda, the partial; for
    an inner `def`, the argument that hands it over). Static arguments are
    those named by `static_argnums`/`static_argnames` of a compiling decorator
    or of a local `fun = jax.jit(f, static_argnums=...)`, every argument of a
    filtered jit (`eqx.filter_jit` keeps non-array arguments static,
    including an object that holds a function: `diffrax.ODETerm(f)`), and a
    parameter a function of the module passes on unchanged into one of those
    (a `while_loop(cond_fun, body_fun)` helper that jits its loop with them
    static). A bound method is not fresh here: bound methods of one function
    and one object compare equal (measured: one compilation), and neither is
    a module-level function.

    ## Why is this bad?
    JAX caches compiled programs per callable object. A lambda, a partial, an
    inner function or `jax.grad(f)` is a new object every time the enclosing
    function runs, so every call of the enclosing function traces and compiles
    from scratch. Compilation takes milliseconds to minutes; the computation
    often takes microseconds.

    ## Premises
    Every finding states three premises (`--output-format full`, JSON/SARIF
    `premises`); it is reported by default only when all are proven, in the
    preview tier when one is assumed, and not at all when one is disproved.

    - `fresh-callable`: proven by the construct (built anew on every call:
      `built-per-call`), by the transform (`own-cache`: `nnx.jit`), or by a
      static argument that gets a value built anew on every call
      (`static-argument`).
    - `same-program`: proven where the callable reads nothing of the call —
      values computed only from the shapes of the arrays it is given do not
      count (`head_dim = w.shape[-1] // n_heads`: JAX's cache keys on those
      shapes anyway), nor do arrays the function computes (`R =
      rotation(phase)`: data an argument would carry); where it reads the
      call's arguments (`lambda v: v * k`, or a local computed from `k`),
      proven where the calls that repeat pass the same values (a loop that
      does not change them, also through a caller that passes its own
      parameters on, a few calls up), disproved where the loop changes them (a
      program per value: necessary), assumed where nothing shows it. A loop
      that changes only arrays (`for a in jnp.linspace(...)`, `y = X @ w`), or
      a Python float from a literal list given for a parameter read only as an
      arithmetic operand (never compared, tested, indexed or handed to a
      builtin), changes data an argument would carry: the same program. The
      transform's options (`out_axis_resources=reps`) and the other static
      arguments of the same call (`steps=n`) are part of the program too. An
      `entry-point` function's parameters with defaults that no call in the
      project overrides are one object for the calls that leave them out
      (`defaults`). A method's
      instance alone (`jax.jit(self.forward)`) is one program per object:
      calls on new objects (`Model(w).predict` per model) compile as they
      must. A callable kept for reuse (called in a loop of the function, or
      returned) is disproved unless a call of the function is shown to build
      the same program again: the reuse shows no waste.
    - `called-repeatedly`: proven by the calls above. Disproved where the
      project shows the function runs once — at module level, under `if
      __name__ == "__main__":`, from a caller that runs once, from `__init__`,
      pytest `test*` functions and unittest/pytest set-up hooks (the framework
      runs them once), behind `functools.cache` — and where it runs only under
      a trace: called from a traced function, a numpyro model under
      `NUTS`/`SVI`, an `init` traced by `jax.pmap(self.init)`, or handed to
      code that calls it only while tracing (`make_train_step(net)` whose
      jitted step calls `net`). A jit there is inlined into that trace and
      never compiles on its own. (A function both traced and called from host
      code counts its host calls.) A jit under a branch on the function's
      parameters (`if not x.is_fully_addressable:`) is built only by the calls
      that take it: proven where the calls that repeat pass the same values for
      the test, assumed otherwise (naming the branch). Assumed where the count is not shown: a
      caller whose own count is unknown (a `sync_devices()` at the end of a
      `train` nothing calls, a `main` handed to `app.run`), a function passed
      or stored where the model cannot follow it, a method nothing calls, and
      a package's function nothing in the project calls (its users' calls).

      One case is reported by default without a call in the code: a public
      top-level function of a standalone script or notebook, or a public
      method (not a dunder) of a public top-level class there, that nothing
      calls and nothing is handed (`entry-point`), whose jitted callable reads
      nothing of the call (or only defaulted parameters) — the JIT
      documentation's `apply_once`. A function such an entry point calls is
      not one itself: its count stays assumed. Its calls
      are its users', so that it runs more than once is this rule's
      convention, not a proof from the code; everywhere else an unknown count
      is assumed. (The acceptance cases require this one; it is stated as
      `entry-point` in the finding's premises so that it can be told apart.)

    ## Known problems
    A jitted callable stored elsewhere (`self.f = jax.jit(...)`, a registry)
    is not followed. A cache around a factory (`functools.cache`/`lru_cache`,
    a project's own `@compile_cache`-like decorator, `if k not in cache:
    cache[k] = make(k)` also one call away, or `if _fn is None: _fn =
    jax.jit(...)` into a global or an attribute) compiles once per key: not
    reported. In test files performance rules are off by default (see the
    configuration docs, `per-file-ignores`).

    Static arguments: a fresh value made inside a loop of the function is not
    reported (that is JF301's ground, which does not cover static arguments
    yet); holders of a callable other than diffrax's terms (another equinox
    Module built around a fresh function) are not recognised; a static
    argument's freshness is not followed through a container (`static=(f,
    g)`).

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
            if site.loop is not None or not isinstance(scope, Function) or runs_only_traced(model, scope):
                continue  # under a trace a jit is inlined into that trace: it never compiles on its own
            found = compiling_call(model, site.call, scope)
            if found is None or compiled_once_per_key(model, site.call, scope):
                continue
            transform, target = found
            what, fresh = describe_callable(model, target, scope, None)
            own = compiles_per_application(transform) and not fresh
            if not (fresh or own):
                continue
            subject = f"`{transform_name(site.call, transform)}` of {what}"
            # The transform's options are part of the program (`out_axis_resources=reps`): what they read counts.
            options = _caller_parameters(model, [a.value for a in site.call.args if a.value is not target], scope)
            judged = _judge(model, _use_of_call(model, site.call, scope), scope, target, site.call,
                            _passed_names(model, site.call, scope), subject, options)
            if judged is not None:
                yield self._violation(site.call, transform, what, scope, judged, own=own)
        for fn in model.index.functions:
            parent = fn.parent
            if not isinstance(fn.node, cst.FunctionDef) or not isinstance(parent, Function):
                continue
            if runs_only_traced(model, parent) or _loop_of_def(model, fn) is not None \
                    or compiled_once_per_key(model, fn.node, parent):
                continue
            for dec in fn.node.decorators:
                t = TracedAnalysis(model).transform_of(dec.decorator, parent)
                if t is None or t[0] not in COMPILING:
                    continue
                what = f"`{fn.name}`, defined inside `{parent.display_name}`"
                subject = f"`{transform_name(dec.decorator, t[0])}` of {what}"
                judged = _judge(model, _use_of_name(model, fn.name, parent), parent, fn.node, fn.node,
                                _passed_names(model, fn.name, parent), subject)
                if judged is not None:
                    yield self._violation(dec.decorator, t[0], what, parent, judged)
        yield from self._static_arguments(model)

    def _static_arguments(self, model: SemanticModel) -> Iterator[Violation]:
        """A callable built anew on every call of a function and handed to a compiled function as a
        static argument: the compiled function's cache is keyed on it (model/static_callables.py)."""
        statics = static_callables(model)
        seen: set[int] = set()
        for site in model.index.calls:
            scope = site.scope
            if site.loop is not None or not isinstance(scope, Function) or runs_only_traced(model, scope):
                continue
            slots = statics.static_slots(site.call, scope)
            for slot in slots:
                value = statics.fresh_value(slot.arg, scope, filtered=slot.filtered)
                if value is None or id(value.made) in seen:
                    continue
                seen.add(id(value.made))
                subject = f"{value.what}, static in {slot.jitted}"
                # The other static arguments are part of the same key (`steps=n`): what they read counts too.
                others = [o.arg for o in slots if o is not slot and not o.filtered]
                also = _caller_parameters(model, others, scope)
                judged = _judge(model, "called", scope, value.closure, value.made, frozenset(), subject, also)
                if judged is None:
                    continue
                name = scope.display_name
                evidence: tuple = ()
                freq = judged.freq
                if freq.kind == MANY:
                    who = ", which is" if freq.via is None else f", which `{freq.via.display_name}` calls, and that is"
                    evidence = (f"{who} called {freq.how}",) + ((" (line ", LineOf(freq.node), ")")
                                                               if freq.node is not None else ())
                if slot.filtered:
                    role = f"the argument `{slot.param}` of {slot.jitted}"
                    keyed = "a filtered jit, which keys its compiled programs on its non-array arguments"
                else:
                    role = f"the static argument `{slot.param}` of {slot.jitted}"
                    keyed = "whose compiled programs are keyed on it"
                handed = f"{slot.via} passes it on as {role}" if slot.via else f"it is {role}"
                parts = message(f"{value.what[:1].upper()}{value.what[1:]} is a new object on every call of `{name}`",
                                *evidence, f"; {handed} (line ", LineOf(slot.declared), f"), {keyed}, so each call "
                                f"compiles {slot.jitted} again; build it once and pass the values it reads as arguments")
                fresh = proven("fresh-callable", subject, "static-argument", f"built anew on every call of `{name}`; "
                               f"{handed} (line ", LineOf(slot.declared), f"), {keyed}: a new function object is a "
                               "new key")
                yield Violation(value.made, parts, data={"static": slot.param},
                                premises=(fresh, judged.same, judged.repeated))

    def _violation(self, node, qualified, what, scope, judged: "Judgement", own: bool = False) -> Violation:
        transform = transform_name(node, qualified)  # `jit` after `from jax import jit`
        name = scope.display_name
        use, freq = judged.use, judged.freq
        if use == "returned":
            if freq.kind == MANY:
                via = f"`{name}` returns it and is called" if freq.via is None else \
                    f"`{name}` returns it to `{freq.via.display_name}`, which is called"
                where = (" (line ", LineOf(freq.node), ")") if freq.node is not None else ()
                parts = message(f"`{transform}` of {what}: {via} again {freq.how}", *where,
                                " with the same arguments, so every call gets a new callable that traces and "
                                "compiles again; build it once, or jit a module-level function once")
            else:
                parts = message(f"`{transform}` of {what}: `{name}` returns a new callable on every call, which traces "
                                "and compiles again; build it once, or jit a module-level function once")
        else:
            evidence: tuple = ()
            if freq.kind == MANY:
                who = ", which is" if freq.via is None else f", which `{freq.via.display_name}` calls, and that is"
                evidence = (f"{who} called {freq.how}",) + ((" (line ", LineOf(freq.node), ")")
                                                           if freq.node is not None else ())
            parts = message(f"`{transform}` of {what}: a new callable on every call of `{name}`", *evidence,
                            "; each call traces and compiles again; jit a module-level function once and call that")
        subject = f"`{transform}` of {what}"
        if own:
            fresh = proven("fresh-callable", subject, "own-cache", f"`{transform}` builds a new jitted function on "
                           f"every call of `{name}`, and its applications share no compiled program")
        else:
            fresh = proven("fresh-callable", subject, "built-per-call", f"built anew on every call of `{name}`")
        return Violation(node, parts, data={"transform": qualified, "scope": scope},
                         premises=(fresh, judged.same, judged.repeated))


@dataclass(frozen=True)
class Judgement:
    """What a fresh jit inside a function costs, as far as the code shows: how the function uses
    the jitted callable ("called" in the same call, "reused" by a loop there, "returned"), how
    often the function runs (`freq`, for the message), and the premises `same-program` and
    `called-repeatedly`."""

    use: str
    freq: Frequency
    same: Premise
    repeated: Premise


def _judge(model: SemanticModel, use: str | None, scope: Function, target: cst.CSTNode | None,
           node: cst.CSTNode, passed: frozenset[str], subject: str,
           also: set[str] | None = frozenset()) -> Judgement | None:
    """`_judge_program`, and for a jit built under a branch on the function's parameters (`if not
    inp.is_fully_addressable: pjit(lambda x: x)(inp)`), `called-repeatedly` of the calls that take
    the branch: the test decides whether the jit is built, not what program it builds. Proven where
    the calls that repeat pass the same values for the test (the same branch each time), assumed
    where they are not shown to."""
    judged = _judge_program(model, use, scope, target, node, passed, subject, also)
    if judged is None or judged.use != "called" or judged.repeated.status != "proven":
        return judged
    guards = _guard_params(model, node, scope)
    if not guards:
        return judged
    relevant = _closure_params(model, scope, target, passed) or set()
    rebuilt, _ = _factory_rebuilt(model, scope, relevant | guards)
    who = f"`{scope.display_name}`"
    if rebuilt is not None:
        return replace(judged, repeated=function_repeats(model, scope, rebuilt, who))
    if judged.repeated.inference == "entry-point":
        return judged  # its users' calls: the convention counts every call
    branch = next(a for a in model.ancestors(node) if isinstance(a, (cst.If, cst.While))
                  and free_names(a.test) & guards)
    names = ", ".join(f"`{g}`" for g in sorted(guards))
    return replace(judged, repeated=assumed(
        "called-repeatedly", who, f"assumes more than one call takes the branch on line ", LineOf(branch),
        f" (its test reads {names}, which the calls are not shown to repeat): `{scope.display_name}` is called "
        f"{judged.freq.how}"))


def _judge_program(model: SemanticModel, use: str | None, scope: Function, target: cst.CSTNode | None,
                   node: cst.CSTNode, passed: frozenset[str], subject: str,
                   also: set[str] | None = frozenset()) -> Judgement | None:
    """The premises of a fresh jit built on every call of `scope`, or None where the jitted callable
    is stored elsewhere (`self.f = jax.jit(...)`: not followed).

    - Called in the same call: every call compiles. The program is the same on every call when
      the callable reads nothing of the call (values derived only from the shapes of the arrays
      it is given do not count: JAX's cache keys on those shapes anyway); when it reads the
      call's arguments, when the calls that repeat pass the same values (a loop that does not
      change them) — DISPROVED where the loop changes them, ASSUMED where nothing shows it. A
      method's instance alone (`jax.jit(self.forward)`) is one program per object.
    - Kept for reuse (called in a loop of the function, or returned by a factory): built once per
      call and reused, so the reuse shows no waste unless the function is called again for the
      same program (a loop with unchanged arguments, a caller that runs many times).
    `called-repeatedly` is the function's frequency (`function_repeats`). `also`: parameters of
    `scope` the program depends on besides what the callable reads (the values of the other
    static arguments it is passed with); None where those are not shown."""
    if use is None:
        return None
    name = scope.display_name
    who = f"`{name}`"
    relevant = _closure_params(model, scope, target, passed)
    if relevant is not None:
        # What else the program depends on (another static argument of the same call): None where not shown.
        relevant = None if also is None else relevant | also
    if use == "called":
        # Used once per call of `scope`: worth compiling only if `scope` runs again, when it
        # compiles again. A callable that closes over nothing of `scope` is the same program
        # on every call; one that closes over arguments is the same program only when they
        # are the same: then only a loop that does not change them is evidence.
        if relevant == set():
            freq = frequency(model, scope)
            same = proven("same-program", subject, "closes-over-nothing", f"it reads nothing of a call of `{name}` "
                          "(at most the shapes of the arrays it is given, which JAX's cache keys on anyway): every "
                          "call builds the same program")
            return Judgement(use, freq, same, function_repeats(model, scope, freq, who))
        if scope.cls is not None and relevant == set(scope.params[:1]):
            # Closes over the instance only (`jax.jit(self.forward)(x)`): one program per
            # object. A method nothing calls is a library's (its users call it on their
            # objects); where the module calls it, only calls on one object again count (a
            # new `Model(w)` per iteration compiles once per model, as it must).
            freq = frequency(model, scope)
            if freq.kind == UNKNOWN:
                same = proven("same-program", subject, "instance-only", f"it reads only `{scope.params[0]}` of a "
                              "call: the same program for every call on one object")
                return Judgement(use, freq, same, function_repeats(model, scope, freq, who))
    numeric = frozenset(p for p in relevant or () if p in scope.params and _numeric_only(model, scope, p))
    data: list[str] = []
    rebuilt, changed = _factory_rebuilt(model, scope, relevant, numeric=numeric, data=data)
    reads = _reads_phrase(relevant)
    if rebuilt is not None:
        at = (" (line ", LineOf(rebuilt.node), ")") if rebuilt.node is not None else ()
        through = f" (through `{rebuilt.via.display_name}`)" if rebuilt.via is not None else ""
        if data:
            names = ", ".join(f"`{n}`" for n in data)
            same = proven("same-program", subject, "same-arguments", f"`{name}` is called again{through} "
                          f"{rebuilt.how}", *at, f"; of what the program reads, the loop changes only {names}: "
                          "numbers or arrays it computes with, data an argument would carry")
        else:
            same = proven("same-program", subject, "same-arguments", f"`{name}` is called again{through} with the "
                          f"same {reads} {rebuilt.how}", *at)
        return Judgement("returned" if use == "returned" else "called", rebuilt, same,
                         function_repeats(model, scope, rebuilt, who))
    freq = frequency(model, scope)
    if use != "called":
        keeper = "reused by its loop" if use == "reused" else "returned for the caller to keep"
        same = disproved("same-program", subject, "kept-for-reuse", f"built once per call of `{name}` and {keeper}; "
                         "no call is shown to build the same program again")
    elif changed is not None:
        same = disproved("same-program", subject, "program-per-call", f"it reads {reads} of the call, which the loop "
                         "on line ", LineOf(changed), " changes: a different program on every call")
    elif relevant and freq.uncalled and entry_point(model, scope) and relevant <= scope.params_with_default:
        # `gather_on_one_device(tree, gather_fn=jax.lax.all_gather)` of a script, called by its users: a default
        # is one object, evaluated once, and nothing in the project passes another.
        same = proven("same-program", subject, "defaults", f"it reads only {reads} of a call, which "
                      f"{'has a default' if len(relevant) == 1 else 'have defaults'} (one object, made once) that "
                      "no call in the project overrides: the calls of its users that leave "
                      f"{'it' if len(relevant) == 1 else 'them'} out build the same program")
    else:
        same = assumed("same-program", subject, f"assumes the calls of `{name}` pass the same {reads}, which the "
                       "program depends on")
    return Judgement(use, freq, same, function_repeats(model, scope, freq, who))


def _reads_phrase(relevant: set[str] | None) -> str:
    if relevant is None:
        return "arguments"
    return ", ".join(f"`{p}`" for p in sorted(relevant)) or "arguments"


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


def _closure_params(model: SemanticModel, scope: Function, target: cst.CSTNode | None,
                    passed: frozenset[str] = frozenset()) -> set[str] | None:
    """The parameters of `scope` the jitted callable's program depends on: those it reads, and
    those the locals it reads are computed from (`head_dim = w.shape[-1] // num_heads` depends on
    `num_heads`); None when that is not shown (a local bound otherwise). Arrays are data, not
    program structure (`R = rotation(phase)`), and the shape of an array the jitted callable is
    given as an argument (`passed`) is what JAX's cache keys on anyway: neither counts."""
    if target is None:
        return None
    if isinstance(target, cst.Name):
        fn = model.function_named(target.value, scope)
        if fn is not None and not _within(fn, scope):
            return set()  # a function defined outside `scope` (`nnx.jit(step)`): it reads nothing of the call
        if fn is None or fn.parent is not scope:
            return None
        target = fn.node
    if isinstance(target, cst.FunctionDef):
        fn = model.index.function_of.get(target)
        if fn is None:
            return None
        reads = list(_function_read_nodes(fn))
    else:
        reads = list(_expression_read_nodes(model, target, scope))
    out: set[str] = set()
    for node, where in reads:
        name = node.value
        found = model.lookup(name, where)
        if found is None or found[0] is not scope:
            continue
        if name in passed and _shape_read(model, node, where):
            continue  # `x.shape[0]` of an array it is given: the cache keys on it
        if name not in scope.params:
            if array_data(model, found[1], scope):
                continue  # `R = rotation(phase)`: an array the program reads as data (it could be an argument)
            deps = _local_dependencies(model, found[1], scope, passed)
            if deps is None:
                return None
            out |= deps
            continue
        # The instance too (`lambda v: v @ self.w`, `jax.pmap(self.step)`): a program per object.
        out.add(name)
    return out


def _within(fn: Function, scope: Function) -> bool:
    """Whether `fn` is defined inside `scope` (at any depth)."""
    s = fn.parent
    while s is not None:
        if s is scope:
            return True
        s = s.parent
    return False


_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size"})
_SHAPE_FUNCTIONS = frozenset({"builtins.len", "jax.numpy.shape", "numpy.shape", "jax.numpy.ndim", "numpy.ndim"})


def _shape_read(model: SemanticModel, node: cst.Name, scope) -> bool:
    """`x.shape`, `x.ndim`, `x.dtype`, `len(x)`, `jnp.shape(x)`: a read of an array's shape only."""
    parent = model.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node:
        return parent.attr.value in _SHAPE_ATTRIBUTES
    if isinstance(parent, cst.Arg) and parent.value is node:
        call = model.parent(parent)
        return isinstance(call, cst.Call) and len(call.args) == 1 and model.qn(call.func, scope) in _SHAPE_FUNCTIONS
    return False


def _local_dependencies(model: SemanticModel, bindings, scope: Function, passed: frozenset[str],
                        depth: int = 0) -> set[str] | None:
    """The parameters of `scope` a local's value is computed from (through other locals, a few
    levels deep), or None where a binding is not a plain assignment the model can read."""
    from jaxfuse_lint.model.scopes import walk

    out: set[str] = set()
    for b in bindings:
        if b.kind == "def" and b.function is not None and b.function.parent is scope and depth <= 3:
            # A function defined in the call (`_body_fn`, read by the jitted `loop_fn`): what it reads of
            # the call, through its own locals.
            for node, where in _function_read_nodes(b.function):
                found = model.lookup(node.value, where)
                if found is None or found[0] is not scope:
                    continue
                if node.value in scope.params:
                    out.add(node.value)
                    continue
                if array_data(model, found[1], scope):
                    continue
                deps = _local_dependencies(model, found[1], scope, passed, depth + 1)
                if deps is None:
                    return None
                out |= deps
            continue
        if b.kind not in ("assign", "annassign") or b.value is None or depth > 3:
            return None
        for n in walk(b.value):
            if not isinstance(n, cst.Name):
                continue
            parent = model.parent(n)
            if isinstance(parent, cst.Attribute) and parent.attr is n:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is n:
                continue
            where = model.scope_of(n)
            found = model.lookup(n.value, where)
            if found is None or found[0] is not scope:
                continue  # a module-level name or a builtin: the same on every call
            if n.value in passed and _shape_read(model, n, where):
                continue
            if n.value in scope.params:
                out.add(n.value)
                continue
            if array_data(model, found[1], scope):
                continue
            deps = _local_dependencies(model, found[1], scope, passed, depth + 1)
            if deps is None:
                return None
            out |= deps
    return out


def _function_read_nodes(fn: Function):
    yield from ((r.name, r.scope) for r in fn.reads)
    for inner in fn.nested:
        yield from _function_read_nodes(inner)


def _expression_read_nodes(model: SemanticModel, expr: cst.CSTNode, scope):
    """(Name node, the scope it is read in) for every name `expr` reads, lambdas included."""
    from jaxfuse_lint.model.scopes import iter_children

    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(expr, None)]
    while stack:
        node, parent = stack.pop()
        if isinstance(node, cst.Name):
            if isinstance(parent, cst.Attribute) and parent.attr is node:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is node:
                continue
            yield node, scope
            continue
        inner = model.index.function_of.get(node)
        if inner is not None and inner.node is node:
            yield from _function_read_nodes(inner)
            continue
        stack.extend((child, node) for _, child in iter_children(node))


def _passed_names(model: SemanticModel, built: cst.Call | str, scope: Function) -> frozenset[str]:
    """The names the jitted callable is called with in `scope`: `jax.jit(f)(w)`, or `g = jax.jit(f)`
    / a jit-decorated `def g` and then `g(w)` (`built`: the jit call, or the name)."""
    calls: list[cst.Call] = []
    name = built if isinstance(built, str) else None
    if isinstance(built, cst.Call):
        parent = model.parent(built)
        if isinstance(parent, cst.Call) and parent.func is built:
            calls.append(parent)
        elif isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            name = parent.targets[0].target.value
    if name is not None:
        for read in model.index.reads_named(name, scope):
            parent = model.parent(read.name)
            if isinstance(parent, cst.Call) and parent.func is read.name:
                calls.append(parent)
    return frozenset(a.value.value for c in calls for a in c.args if isinstance(a.value, cst.Name) and not a.star)


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


def _factory_rebuilt(model: SemanticModel, factory: Function, relevant: set[str] | None,
                     depth: int = 0, numeric: frozenset[str] = frozenset(),
                     data: list[str] | None = None) -> tuple[Frequency | None, cst.CSTNode | None]:
    """A call of the function in a Python loop (not guarded by a cache) whose arguments for
    the parameters the jitted callable closes over (`relevant`; all of them when None) the loop
    does not change: every iteration builds, and compiles, the same program again. A factory
    called once (in `__init__`, once per `train()`) or once per distinct argument is the
    recommended pattern: None. Second: the loop around a call that changes those arguments (a
    different program per iteration), where there is one.

    A loop that changes only arrays (`for a in jnp.linspace(...)`, `y = X @ w` computed in the
    loop) changes data an argument would carry, not the program; so does one that changes a
    Python float (`for s in (0.5, 2.0)`) given for a parameter in `numeric` (read only as an
    arithmetic operand: `_numeric_only`); `data` collects the names so discounted. A call outside
    any loop whose
    arguments come from its caller's parameters (`self._init(params)` in `sample(self, params)`)
    is followed to that caller's calls, a few levels up: the same arguments there are the same
    arguments here."""
    sites, _ = call_sites(model, factory)
    elsewhere = external_calls(model, factory)
    if elsewhere is not None and elsewhere.kind == MANY and (elsewhere.same_arguments or relevant == set()):
        return elsewhere, None  # another module's loop calls it with the same arguments (or they do not matter)
    changed: cst.CSTNode | None = None
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
                upward = _caller_parameters(model, args, site.scope) if depth < 3 else None
                if upward is None:
                    continue
                outer, outer_changed = _factory_rebuilt(model, site.scope, upward, depth + 1, data=data)
                if outer is not None:
                    return Frequency(MANY, outer.node, outer.how, outer.via or site.scope), None
                changed = changed or outer_changed
                continue
            outer = frequency(model, site.scope)
            if outer.kind == MANY:
                return Frequency(MANY, outer.node, outer.how, outer.via or site.scope), None
            continue
        varying = [(param, n, sc) for param, arg in _relevant_pairs(model, site.call, factory, relevant)
                   for n, sc in _expression_reads(model, arg, site.scope)
                   if _bound_in(model, n, sc, loops) and not _own_name(model, n, sc, arg)]
        if any(not _loop_array(model, n, sc) and not (param in numeric and _loop_floats(model, n, sc))
               for param, n, sc in varying):
            changed = changed or loops[0]
            continue  # a different program per iteration: one compilation each, whatever is done
        if data is not None:
            data.extend(sorted({n for _, n, _ in varying}))
        return Frequency(MANY, loops[0], "in a loop"), None
    return None, changed


def _own_name(model: SemanticModel, name: str, scope, arg: cst.CSTNode) -> bool:
    """A name bound inside the argument itself: a lambda's own parameter (`lambda x: x * 0.5`)."""
    found = model.lookup(name, scope)
    return found is not None and (found[0].node is arg or any(a is arg for a in model.ancestors(found[0].node)))


def _loop_floats(model: SemanticModel, name: str, scope) -> bool:
    """A name a loop binds to the items of a literal collection of floats (`for s in (0.5, 2.0)`)."""
    found = model.lookup(name, scope)
    if found is None or not found[1]:
        return False
    for b in found[1]:
        if b.kind != "for" or b.index is not None:
            return False
        seq = b.value
        if isinstance(seq, cst.Name):
            inner = model.lookup(seq.value, found[0])
            seq = inner[1][0].value if inner is not None and len(inner[1]) == 1 and inner[1][0].kind == "assign" \
                else None
        if not isinstance(seq, (cst.Tuple, cst.List)) or not seq.elements:
            return False
        for el in seq.elements:
            v = el.value.expression if isinstance(el.value, cst.UnaryOperation) else el.value
            if not isinstance(v, cst.Float):
                return False
    return True


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power, cst.MatrixMultiply)


def _numeric_only(model: SemanticModel, scope: Function, param: str) -> bool:
    """Every read of `param` in `scope` (and the functions inside it) is an operand of arithmetic
    (`s / speed(tau)`, `-k * x`) whose result is not compared, tested, indexed with or handed to a
    builtin (`int`, `range`): a number the program computes with, which it could take as a traced
    argument. (A float is never a shape; this is what keeps it from choosing the program.)"""
    reads = [r for r in model.index.reads_named(param, scope)
             if (found := model.lookup(param, r.scope)) is not None and found[0] is scope]
    if not reads:
        return False
    for r in reads:
        node: cst.CSTNode = r.name
        parent = model.parent(node)
        if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARITHMETIC)
                or isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, (cst.Minus, cst.Plus))):
            return False
        while isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            node, parent = parent, model.parent(parent)
        for a in model.ancestors(node):
            if isinstance(a, cst.BaseCompoundStatement):
                return False  # an `if`/`while` test, a `for` iterable
            if isinstance(a, (cst.BaseSmallStatement, cst.Lambda)):
                break
            if isinstance(a, (cst.Comparison, cst.IfExp, cst.BooleanOperation, cst.SubscriptElement)):
                return False
            if isinstance(a, cst.Call) and (model.qn(a.func, r.scope) or "").startswith("builtins."):
                return False
    return True


def _loop_array(model: SemanticModel, name: str, scope) -> bool:
    """A name a loop binds only to arrays (`for a in jnp.linspace(...)`, `y = X @ w`): data that an
    argument would carry, not program structure."""
    found = model.lookup(name, scope)
    if found is None:
        return False
    owner, bindings = found
    if array_data(model, bindings, owner):
        return True
    return bool(bindings) and all(b.kind == "for" and _array_iterable(model, b.value, owner) for b in bindings)


_ARRAY_RANGES = frozenset({"jax.numpy.linspace", "jax.numpy.arange", "jax.numpy.logspace", "jax.numpy.geomspace",
                           "numpy.linspace", "numpy.logspace", "numpy.geomspace"})


def _array_iterable(model: SemanticModel, e: cst.BaseExpression | None, scope) -> bool:
    """`jnp.linspace(a, b, n)`: iterating it gives array scalars (`numpy.arange` of ints gives
    integers that may be shapes: not counted)."""
    return isinstance(e, cst.Call) and model.qn(e.func, scope) in _ARRAY_RANGES


def _caller_parameters(model: SemanticModel, args: list[cst.BaseExpression], caller: Function) -> set[str] | None:
    """The parameters of `caller` the given arguments are computed from (through its locals), or
    None where a local is bound otherwise than by a plain assignment."""
    out: set[str] = set()
    for arg in args:
        for name, where in _expression_reads(model, arg, caller):
            found = model.lookup(name, where)
            if found is None or found[0] is not caller:
                continue
            if name in caller.params:
                out.add(name)
                continue
            if array_data(model, found[1], caller):
                continue
            deps = _local_dependencies(model, found[1], caller, frozenset())
            if deps is None:
                return None
            out |= deps
    return out


def _relevant_arguments(model: SemanticModel, call: cst.Call, factory: Function,
                        relevant: set[str] | None) -> list[cst.BaseExpression]:
    return [e for _, e in _relevant_pairs(model, call, factory, relevant)]


def _relevant_pairs(model: SemanticModel, call: cst.Call, factory: Function,
                    relevant: set[str] | None) -> list[tuple[str | None, cst.BaseExpression]]:
    """What the call passes for the parameters the jitted callable depends on (all of them when
    None), with the parameter each is for (None where not known); for the instance of a method,
    the object it is called on (`Model(w).predict(x)`). A `*args` parameter gets every
    positional argument past the named ones."""
    pairs: list[tuple[str | None, cst.BaseExpression]]
    if relevant is None or any(a.star for a in call.args):
        pairs = [(None, a.value) for a in call.args]
        relevant = set(factory.params[:1]) if factory.cls is not None else set()
    else:
        pairs = [(p, a) for p in sorted(relevant) if (a := model.argument_for(call, factory, p)) is not None]
        for p in sorted(relevant & factory.star_params):
            if p in factory.params:
                named = [q for q in factory.params[:factory.params.index(p)]
                         if not (factory.cls is not None and q == factory.params[0] and q in ("self", "cls"))]
                positional_args = [a.value for a in call.args if a.keyword is None]
                pairs += [(p, a) for a in positional_args[len(named):]]
    if factory.cls is not None and factory.params and factory.params[0] in relevant:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == factory.name:
            pairs.append((factory.params[0], call.func.value))
        elif factory.name == "__call__":
            pairs.append((factory.params[0], call.func))  # `pipeline(x)`: the instance called
    return pairs


def _bound_in_function(model: SemanticModel, name: str, scope, fn: Function) -> bool:
    """Whether `name` (read in `scope`) is a parameter or local of fn: it may differ per call."""
    found = model.lookup(name, scope)
    return found is not None and found[0] is fn


RULE = JitOfFreshCallable
