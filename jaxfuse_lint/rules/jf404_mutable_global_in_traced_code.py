"""JF404 mutable-global-in-traced-code."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model.call_frequency import call_sites
from jaxfuse_lint.model.frozen_values import (
    ClosureLocal, GlobalName, ObjectAttribute, StaticArgumentAttribute, Timeline, compile_entries, compiled_callees,
    host_roots, run_timeline,
)
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.scopes import Binding, Function, walk
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.staging import own_nodes, staging
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import Premise, assumed, disproved, proven
from jaxfuse_lint.model.state_reads import PROGRAM, STATIC, TEXT, UNUSED, state_reads
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts, staged_reason
from jaxfuse_lint.core.targets import Claim, tracing

_LOOPS = (cst.For, cst.While)


class MutableGlobalInTracedCode(Rule):
    code = "JF404"
    premises = ("runs-traced", "rebound-after-trace", "no-retrace-between", "program-reads-it")
    name = "mutable-global-in-traced-code"
    summary = "traced code reads a value the program rebinds between compiled calls (frozen at first trace)"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in a function that is staged and compiled (`jax.jit`, `pmap`,
    `checkpoint`, a lax loop body or branch, or a function they call), a read
    of a value that the program rebinds after a call that traces the function
    and before a call that reuses the compiled program:

    - a module-level name, rebound at module level, in a function through
      `global name`, or in a function the module-level code calls (the module's
      statements and the host functions they call are followed in order; a
      function nothing calls — `main` run by a test, a library entry point — is
      followed on its own);
    - a local of the function that defines a jitted closure, rebound by that
      function between two calls of the closure;
    - an attribute of the object a jitted method runs on, when `self` is
      static (`static_argnums=0`, `static_argnames="self"`, a bound method
      handed to `jax.jit`, `self.compute = jax.jit(self.compute)` included):
      `obj.E = ...`, or a method that sets `self.E`, between two calls on the
      same object;
    - an attribute of an object passed as a static argument
      (`static_argnums`/`static_argnames`): `v.val = 0` or `m.data += 1`
      between two calls that pass the same object there. jit keeps the
      object itself as the cache key, not a copy of its state.

    Whatever the value's origin: a rebinding in a loop that also calls the
    function counts when the value can change from one iteration to the next —
    it reads the name itself, a loop target, or a value the loop carries, such
    as the jitted function's own output (`field = step(field)` then
    `eps = field ** 2`). The message names the rebinding, the call that traced
    the function first and the value it froze, and the call that reuses it.

    A public function nothing in the module calls whose whole job is
    rebinding globals (`def update_global(): global g; g = 10.0`) is part of
    the module's interface, callable at any time, and is reported too (see
    Premises); a documented setter of a setting (`def set_layout(layout):`
    with a docstring, or a getter beside it, like `jax.config.update`) is
    meant to be called before tracing: with no caller in the project it is
    reported only in the preview tier.

    Not flagged: constants bound once, imports, functions and classes; names
    whose bindings are alternatives of one `if`/`try` statement; values set
    once before the first call (at start-up, in `main` before the loop, a
    factory's locals bound before the jitted closure is defined); values read
    on the host at run time (a host callback's own body); a flag set and
    restored around a trace (a write in a `finally:` block, `old = NAME ...
    NAME = old`, a counter incremented and decremented, the `__enter__` and
    `__exit__` of a context manager class); an attribute of a pytree `self`
    (`@jax.jit` on a method of a registered pytree class: its fields are traced
    arguments), or of a flax/equinox Module. A function that itself declares
    the name `global` and assigns it is left to JF403.

    ## Why is this bad?
    A value is read while the function is traced, and its value at that
    moment is baked into the compiled program as a constant. Later calls with
    arguments of the same shapes and dtypes reuse the cached program, so a
    rebinding is silently ignored — until some call with a new shape retraces
    and picks the new value up (the notes' `impure_uses_globals`: first call
    `4.0`, after `g = 10.` still `5.0`, then `[14.]`). A solver that updates
    its coefficients from each step's output keeps the first step's
    coefficients; a gradient with respect to an attribute the method reads
    (`model.E = E` then `model.energy(u)`) comes back 0.0.

    A value read as a Python value is frozen as well: a global used as a
    shape (`jnp.zeros(n)`) or in a branch (`if use_bias:`) fixes the
    program's structure at the first trace, and the message says so.

    ## Premises
    Each finding states four premises (`--output-format full` and the JSON
    and SARIF outputs list them); it is reported by default only when all
    are proven, in the preview tier when one is assumed, and not at all
    when one is disproved.
    - `runs-traced(fn)`: the function runs under a trace, on a route the
      code shows (model/evidence.py).
    - `rebound-after-trace(name)`: the value changes between a call that
      traces the function and a call that reuses its program. Proven by the
      timeline of host code (`timeline`: module-level statements, a
      notebook's cells joined in order, and the host functions they call;
      the rebinding, the call that traced and the call that reuses are
      named), or by a public setter (`public-setter`): a function whose
      name does not start with `_`, that nothing in the module calls, and
      whose whole body rebinds globals (besides a docstring, `global` and
      `if`). Such a setter is the module's interface: nothing in the module
      orders it before the first call of the compiled function, so a call
      after it — the JIT documentation's `update_global()` — is possible
      through the module's own API and is then ignored. The proof is of
      that possibility, not of a call seen. Assumed where the writer is a
      documented setting, is handed elsewhere, is private, or does more
      than rebind globals (an entry point like `main` that nothing calls).
      Disproved where every call of the writer is in traced code
      (`rebound-while-tracing`): the value changes between traces, never
      between two calls of one program (trace-time bookkeeping, JF403's to
      judge).
    - `no-retrace-between(name)`: the call that reuses the program does not
      trace it again. Proven where no argument of that call is computed from
      the new value (`arguments-unchanged`), or where the writer is a setter
      that changes nothing else (`setter-only`). Assumed where an argument
      is rebuilt from the new value after the rebinding (`tx = optax.chain(...)`
      then `opt_state = tx.init(params)`: a new pytree structure makes jit
      trace again, and that trace reads the new value). Disproved where such
      an argument is a static argument (a new static value compiles a new
      program), and `jax.clear_caches()` between the calls starts the
      timeline again. For a mutated static argument the call passes the
      same object: proven where its class hashes by identity (no `__hash__`:
      the same cache key, `identity-key`), and where its `__hash__`/`__eq__`
      reads the mutated attribute (`mutated-key`: the next call may trace
      again, but the cache holds the mutated object as the key of the first
      program too, and a later call can be served that program); assumed
      where a base class of another module may define the hash; disproved
      where the class is unhashable or frozen (an `__eq__` without
      `__hash__`, a dataclass: jit refuses it as a static argument, or the
      mutation raises).
    - `program-reads-it(name)`: what the traced code does with the value
      (model/state_reads.py). Proven where it is an operand of the traced
      computation (`constant`), decides the trace as a Python value
      (`static-use`: a shape, a branch, a static argument), or is read in
      any other way while tracing; disproved where it is only formatted
      into text (`text-only`: a summary name, a printed message).

    ## Known problems
    Calls through code the module does not show (another module's loop over a
    setter) are not followed; a rebinding in a branch counts as possible. An
    argument whose shape changes for reasons other than the new value (a
    later cell calling with a larger array) is not compared: the premise
    `no-retrace-between` is proven from the arguments' data flow only.

    ## Example
    ```python
    g = 0.0

    @jax.jit
    def impure_uses_globals(x):
        return x + g

    def update_global():
        global g
        g = 10.0
    ```

    ## Use instead
    ```python
    @jax.jit
    def pure_uses_argument(x, g):
        return x + g
    ```
    (or `static_argnames=["g"]` when it must stay a Python value: a new value
    then triggers a new compilation instead of being ignored).

    ## Fix safety
    No automatic fix: it changes the function's signature and every call site.
    """
    backends = (
        Claim(
            "A value read by traced code is baked in at trace time; later rebindings are not seen",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax\nSCALE = 2.0\n@jax.jit\ndef f(x):\n    return x * SCALE\n",
        "import jax\ntry:\n    DTYPE = jax.numpy.float64\nexcept AttributeError:\n    DTYPE = None\n"
        "@jax.jit\ndef f(x):\n    return x.astype(DTYPE)\n",
        "g = 0.0\ndef host(x):\n    return x + g\ndef update():\n    global g\n    g = 1.0\n",
        "import jax\ndef make(dt):\n    scale = dt * 2\n    @jax.jit\n    def step(x):\n        return x * scale\n"
        "    return step\n",
    )
    invalid = (
        "import jax\ng = 0.0\n@jax.jit\ndef f(x):\n    return x + g\ndef update():\n    global g\n    g = 10.0\n",
        "import jax\ndef make():\n    scale = 1.0\n    @jax.jit\n    def inner(x):\n        return x * scale\n"
        "    y = inner(1.0)\n    scale = 2.0\n    return inner(y)\n",
        "import jax\ng = 0.0\ndef f(x):\n    return x + g\nf_jit = jax.jit(f)\nprint(f_jit(1.0))\ng = 10.0\n"
        "print(f_jit(1.0))\n",
        "import jax\neps = 1.0\n@jax.jit\ndef step(f):\n    return f * eps\nf = 1.0\nfor _ in range(9):\n"
        "    f = step(f)\n    eps = f * f\n",
        "import jax\nfrom functools import partial\nclass M:\n    def __init__(self):\n        self.E = 1.0\n"
        "    @partial(jax.jit, static_argnums=0)\n    def energy(self, u):\n        return self.E * u\n"
        "m = M()\nm.energy(1.0)\nm.E = 2.0\nm.energy(1.0)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        shown = evidence(model)
        module_scope = model.index.scope
        roots: list[Function] | None = None
        reported: set[tuple[int, str]] = set()  # (the function a message names, the name)
        for fn in model.traced.reasons:
            if not st.is_staged(fn, cached=True):
                continue
            shown_fn = _shown(model, fn)
            entries = None
            for read in fn.reads:
                name = read.name.value
                if (id(shown_fn), name) in reported or name.startswith("__"):
                    continue
                found = model.lookup(name, fn)
                if found is None:
                    continue
                if entries is None:
                    entries = compile_entries(model, fn)
                if roots is None:
                    roots = host_roots(model)
                if isinstance(found[0], Function) and found[0] is not fn:
                    violation = _frozen_local(model, fn, read, found[0], found[1], entries)
                    if violation is not None and (runs := shown.premise(fn, read.name, raises=False)) is not None:
                        reported.add((id(shown_fn), name))
                        yield violation.with_premises(runs)
                    continue
                if found[0] is not module_scope:
                    continue
                owner, bindings = found
                if name in fn.globals and any(model.scope_of(b.node) is fn for b in bindings):
                    continue  # fn writes it itself: JF403
                violation = _frozen_global(model, fn, read, bindings, entries, roots)
                if violation is not None and (runs := shown.premise(fn, read.name, raises=False)) is not None:
                    reported.add((id(shown_fn), name))
                    yield violation.with_premises(runs)
            if fn.cls is not None and _self_static(model, fn):
                if entries is None:
                    entries = compile_entries(model, fn)
                if roots is None:
                    roots = host_roots(model)
                for violation in _frozen_attributes(model, fn, entries, roots):
                    runs = shown.premise(fn, violation.node, raises=False)
                    if runs is not None:
                        yield violation.with_premises(runs)
            for param in _static_parameters(model, fn):
                if entries is None:
                    entries = compile_entries(model, fn)
                if roots is None:
                    roots = host_roots(model)
                for violation in _frozen_static_argument(model, fn, param, entries, roots):
                    runs = shown.premise(fn, violation.node, raises=False)
                    if runs is not None:
                        yield violation.with_premises(runs)


def _shown(model: SemanticModel, fn: Function) -> Function:
    """The function a message names for a read in fn: a lambda is named by the traced function
    it is written in (`jax.tree_util.tree_map(lambda m: m / (1 - b1 ** step), ...)` in `update`)."""
    while fn.is_lambda:
        outer = next(fn.enclosing_functions(), None)
        if outer is None or not model.is_traced(outer):
            break
        fn = outer
    return fn


def _reader(model: SemanticModel, fn: Function) -> str:
    shown = _shown(model, fn)
    return f"`{shown.display_name}`" if shown is fn else f"a lambda in `{shown.display_name}`"


def _reads_of(fn: Function, name: str) -> list[cst.Name]:
    return [r.name for r in fn.reads if r.name.value == name]


def _program_reads(model: SemanticModel, fn: Function, subject: str, nodes: list) -> tuple[Premise, str]:
    """`program-reads-it`: what the traced code does with the value it reads (model/state_reads.py).
    An operand of the traced computation is a constant of the program; a Python value the trace
    decides with (a branch, a shape, a static argument) fixes the program's structure: both are
    frozen. Read only into text (a summary name, a message), no array of the program depends on
    it. Also the way the message says it is frozen."""
    reads = state_reads(model)
    hows = [(reads.how(n, model.scope_of(n)), n) for n in nodes]
    for wanted, inference, says in (
            (PROGRAM, "constant", " is an operand of the traced computation: a constant of the program"),
            (STATIC, "static-use", " decides the trace as a Python value (a branch, a shape, a static argument): "
                                   "it fixes the program's structure"),
    ):
        for how, n in hows:
            if how == wanted:
                return proven("program-reads-it", subject, inference, f"`{code_of(model, n, 40)}` on line ",
                              LineOf(n), says), wanted
    if hows and all(how in (TEXT, UNUSED) for how, _ in hows):
        n = hows[0][1]
        return disproved("program-reads-it", subject, "text-only", f"`{code_of(model, n, 40)}` on line ", LineOf(n),
                         " is only formatted into text while tracing (a name, a message): no array of the program "
                         "depends on it"), TEXT
    n = next((n for how, n in hows if how not in (TEXT, UNUSED)), nodes[0] if nodes else None)
    if n is None:
        return proven("program-reads-it", subject, "read-while-tracing", "read while tracing"), ""
    return proven("program-reads-it", subject, "read-while-tracing", f"`{code_of(model, n, 40)}` on line ", LineOf(n),
                  " is read while tracing, and not only into text: what the trace makes of it is fixed"), ""


def _frozen_how(how: str, shown: str) -> str:
    if how == PROGRAM:
        return f"its value is frozen into the program as a constant when {shown} is traced"
    if how == STATIC:
        return f"its value fixes the program's structure (a shape, a branch taken) when {shown} is traced"
    return f"its value is frozen into the program when {shown} is traced"


def _no_retrace(model: SemanticModel, subject: str, t: Timeline, entries) -> Premise:
    """`no-retrace-between`: the call that reuses the program does not pass the new value (or
    something rebuilt from it) in its arguments. A static argument computed from it compiles a new
    program that reads the new value (disproved); a traced one may change the pytree structure,
    shapes or dtypes and force a retrace that reads it too (assumed not to)."""
    if t.rebuilt:
        scope = model.scope_of(t.stale_use)
        for arg, where in t.rebuilt:
            if _static_argument(model, t.stale_use, arg, scope, entries):
                return disproved("no-retrace-between", subject, "static-argument", "the call on line ",
                                 LineOf(t.stale_use), f" passes `{code_of(model, arg.value, 30)}`, computed from the new "
                                 "value, as a static argument: it compiles a new program, which reads the new value")
        arg, where = t.rebuilt[0]
        parts: tuple = (f"assumes `{code_of(model, arg.value, 30)}`",)
        if where is not None:
            parts += (", rebuilt from the new value on line ", LineOf(where), ",")
        return assumed("no-retrace-between", subject, *parts, " keeps the pytree structure, shapes and dtypes the "
                       "call on line ", LineOf(t.first_use), " traced (else the call on line ", LineOf(t.stale_use),
                       " retraces and reads the new value)")
    return proven("no-retrace-between", subject, "arguments-unchanged", "no argument of the call on line ",
                  LineOf(t.stale_use), " is computed from the new value: it reuses the program the call on line ",
                  LineOf(t.first_use), " traced")


def _static_argument(model: SemanticModel, call: cst.Call, arg: cst.Arg, scope, entries) -> bool:
    """Whether `arg` of a call of a compiled function is one of its static arguments."""
    callees = compiled_callees(model, call, scope) & entries
    index = next((i for i, a in enumerate(call.args) if a is arg), None)
    for f in callees:
        params = f.params
        for r in model.traced.reasons.get(f, ()):
            if r.kind not in ("decorator", "transform") or r.transform not in COMPILING:
                continue
            ps = params[1:] if r.bound_method and params and params[0] in ("self", "cls") else params
            if arg.keyword is not None:
                name = arg.keyword.value
                if name in r.static_argnames or (name in ps and ps.index(name) in r.static_argnums):
                    return True
            elif index is not None and arg.star == "" and index < len(ps):
                if index in r.static_argnums or ps[index] in r.static_argnames:
                    return True
    return False


def _first_value(model: SemanticModel, t: Timeline) -> tuple:
    """`, first traced on line 12 with `g = 0.0` (line 8)`: when the program was traced and what
    it froze."""
    parts: tuple = (", first traced by the call on line ", LineOf(t.first_use))
    if t.first_value is not None:
        parts += (f" with `{_binding_text(model, t.first_value.node)}` (line ", LineOf(t.first_value.node), ")")
    return parts


def _binding_text(model: SemanticModel, node: cst.CSTNode) -> str:
    if isinstance(node, cst.For):
        return f"for {code_of(model, node.target, 30)} in {code_of(model, node.iter, 30)}"
    return code_of(model, node, 50)


def _rebind_parts(model: SemanticModel, e) -> tuple:
    """`line 16 (`eps2_x = field ** 2`)`, or through a call: `line 19 (`g = 10.0`, run by the
    call on line 30)`."""
    parts: tuple = ("line ", LineOf(e.node), f" (`{_binding_text(model, e.node)}`")
    if e.via is not None:
        parts += (", run by the call on line ", LineOf(e.via))
    return parts + (")",)


def _rebound(subject: str, fn: Function, t: Timeline, shown: Function | None = None) -> Premise:
    """`rebound-after-trace`, as the timeline of host code shows it (model/frozen_values.py)."""
    fn = shown or fn
    return proven("rebound-after-trace", subject, "timeline", "rebound on line ", LineOf(t.rebind.node),
                  " after the call on line ", LineOf(t.first_use), f" traced `{fn.display_name}`, and the call on line ",
                  LineOf(t.stale_use), " reuses the program")


def _timeline_message(model: SemanticModel, fn: Function, what: str, t: Timeline, how: str) -> tuple:
    shown = _shown(model, fn)
    name = f"`{shown.display_name}`"
    return message(
        f"{_reader(model, fn)} reads {what}, which is rebound on ", *_rebind_parts(model, t.rebind),
        f" after {name} is compiled: {_frozen_how(how, name)} (",
        *reason_parts(staged_reason(model, shown, cached=True)), ")",
        *_first_value(model, t), *_stale_parts(t), "; pass it as an argument",
    )


def _stale_parts(t: Timeline) -> tuple:
    if t.stale_use is t.first_use:
        return (", and that call reuses the program with the old value on the next iteration",)
    return (", and the call on line ", LineOf(t.stale_use), " reuses that program with the old value")


def _frozen_global(model: SemanticModel, fn: Function, read, bindings: list[Binding], entries,
                   roots: list[Function]) -> Violation | None:
    """A module global read by staged fn and rebound where the module shows it matters: between
    a call that traces fn and one that reuses the program (module-level code and the host
    functions it calls, in order; entry points nothing calls, each on its own), or by a function
    nothing in the module calls (`def update(): global g; g = 10.0`: it can run at any time)."""
    name = read.name.value
    if any(b.kind in ("import", "def", "class") for b in bindings):
        return None
    writers = {w for b in bindings if (w := model.function_of(b.node)) is not None}
    groups = {_top_level_of(model, b.node, _top_level_index(model)) for b in bindings if model.function_of(b.node) is None}
    if not writers and len(groups) < 2 and not any(b.kind == "augassign" or _in_loop(model, b) for b in bindings):
        return None  # bound once at module level: a constant
    ignore = frozenset(w for w in writers if _set_and_restored(model, w, name, bindings))
    subject = GlobalName(model, fn, entries, name=name, bindings=tuple(bindings), ignore=ignore)
    t = run_timeline(subject, model.module.body, model.index.scope)
    for root in roots:
        if t is not None:
            break
        t = run_timeline(subject, root.node.body.body, root)
    if t is not None:
        reads, how = _program_reads(model, fn, f"`{name}`", _reads_of(fn, name))
        return Violation(read.name, _timeline_message(model, fn, f"module-level `{name}`", t, how),
                         data={"name": name, "rebinding": t.rebind.node, "timeline": t},
                         premises=(_rebound(f"`{name}`", fn, t, _shown(model, fn)), _no_retrace(model, f"`{name}`", t, entries), reads))
    # A writer no host code in the module calls: a public setter can run at any time, after the
    # first trace too.
    found: list[tuple[Premise, Premise, Binding, Function]] = []
    shown = _shown(model, fn)
    for b in bindings:
        writer = model.function_of(b.node)
        if writer is None or writer in ignore:
            continue
        sites, escapes = call_sites(model, writer)
        if any(not model.is_traced_scope(s.scope) for s in sites):
            continue  # where it is called, the timeline above decided
        found.append((*_rebound_by_writer(model, shown, name, b, writer, sites, escapes), b, writer))
    if not found:
        return None
    rebound, retrace, b, writer = min(found, key=lambda f: _RANK[f[0].status])
    reads, how = _program_reads(model, fn, f"`{name}`", _reads_of(fn, name))
    return Violation(
        read.name,
        message(
            f"{_reader(model, fn)} reads module-level `{name}`, which is rebound on line ", LineOf(b.node),
            f" in `{writer.display_name}`: {_frozen_how(how, f'`{shown.display_name}`')} (",
            *reason_parts(staged_reason(model, shown, cached=True)),
            f"), and a call of `{writer.display_name}` after that is ignored until something forces a retrace; "
            "pass it as an argument",
        ),
        data={"name": name, "rebinding": b.node},
        premises=(rebound, retrace, reads),
    )


_RANK = {"proven": 0, "recorded": 0, "assumed": 1, "disproved": 2}


def _rebound_by_writer(model: SemanticModel, shown: Function, name: str, b: Binding, writer: Function, sites,
                       escapes: bool) -> tuple[Premise, Premise]:
    """(`rebound-after-trace`, `no-retrace-between`) for a global's writer that no host code of
    the module calls.

    - called only from traced code: it rebinds the global while tracing (trace-time bookkeeping,
      JF403's to judge): the value changes between traces, never between two calls of one program
      (disproved);
    - a public function whose whole job is rebinding globals (`def update_global(): global g;
      g = 10.0`), not a documented setting: the module offers it to its users, to be called at any
      time, and nothing in the module orders it before the first trace: a call after the first
      call of the compiled function is possible by the module's own interface, and then ignored
      (proven: "public-setter"); such a setter changes nothing else, so the arguments of the next
      call keep the shapes traced before (proven);
    - a documented setting (`def set_layout(layout):` with a docstring or a getter beside it, like
      `jax.config.update`), a function handed elsewhere, a private function, or one that does more
      than rebind globals (an entry point such as `main`): assumed."""
    subject = f"`{name}`"
    if sites:
        s = sites[0]
        caller = model.function_of(s.call)
        return disproved("rebound-after-trace", subject, "rebound-while-tracing", f"`{writer.display_name}` rebinds it "
                         "on line ", LineOf(b.node), " and runs only while tracing (called on line ", LineOf(s.call),
                         f"{f' in traced `{caller.display_name}`' if caller is not None else ''}): the value changes "
                         "between traces, not between two calls of one program"), \
            _retrace_assumed(subject, writer)
    if escapes:
        return assumed("rebound-after-trace", subject, f"assumes that `{writer.display_name}`, handed elsewhere, runs "
                       f"after `{shown.display_name}` is first traced"), _retrace_assumed(subject, writer)
    if _documented_setting(model, writer, b):
        return assumed("rebound-after-trace", subject, f"assumes that the setting `{writer.display_name}` is called "
                       f"after `{shown.display_name}` is first traced (a documented setter is meant to be called "
                       "before)"), _retrace_assumed(subject, writer)
    if writer.name.startswith("_") or not _only_rebinds_globals(writer):
        return assumed("rebound-after-trace", subject, f"assumes that `{writer.display_name}`, which nothing in the "
                       f"module calls, runs after `{shown.display_name}` is first traced"), _retrace_assumed(subject, writer)
    return (proven("rebound-after-trace", subject, "public-setter", f"`{writer.display_name}` does nothing but rebind "
                   "it (line ", LineOf(b.node), "), and nothing in the module calls it: the module offers it to be "
                   f"called at any time, after the first call of `{shown.display_name}` too"),
            proven("no-retrace-between", subject, "setter-only", f"`{writer.display_name}` changes nothing the "
                   f"arguments of `{shown.display_name}` are made from: a call with the arguments traced before "
                   "reuses the program"))


def _retrace_assumed(subject: str, writer: Function) -> Premise:
    return assumed("no-retrace-between", subject, "assumes the next call passes arguments of the shapes traced before "
                   f"`{writer.display_name}` ran")


def _only_rebinds_globals(writer: Function) -> bool:
    """A setter: besides a docstring, `global` declarations, `pass` and a bare `return`, the body only
    assigns names it declares `global` (under `if`s too)."""
    body = writer.node.body
    if not isinstance(body, cst.IndentedBlock):
        return False

    def ok(stmts) -> bool:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, cst.If):
                orelse = stmt.orelse
                if not ok(stmt.body.body) or (orelse is not None and not ok(
                        [orelse] if isinstance(orelse, cst.If) else orelse.body.body)):
                    return False
                continue
            if not isinstance(stmt, cst.SimpleStatementLine):
                return False
            for small in stmt.body:
                if isinstance(small, (cst.Global, cst.Pass)) or (isinstance(small, cst.Return) and small.value is None):
                    continue
                if i == 0 and isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString,
                                                                                    cst.ConcatenatedString)):
                    continue
                if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    names = [n for t in targets for n in walk(t) if isinstance(n, cst.Name)]
                    if names and all(isinstance(t, (cst.Name, cst.Tuple, cst.List)) for t in targets) and all(
                            n.value in writer.globals for n in names if n in _target_names(targets)):
                        continue
                return False
        return True

    return bool(writer.globals) and ok(body.body)


def _target_names(targets) -> set:
    out = set()
    for t in targets:
        if isinstance(t, cst.Name):
            out.add(t)
        elif isinstance(t, (cst.Tuple, cst.List)):
            out |= _target_names([el.value for el in t.elements])
    return out


def _documented_setting(model: SemanticModel, writer: Function, b: Binding) -> bool:
    """A setting's documented setter, like `jax.config.update`: it assigns the global from its own
    parameter (`def set_layout(layout): global _LAYOUT; _LAYOUT = layout`) and is documented as
    an API (a docstring), or the module reads the setting back through a getter."""
    value = b.value
    if b.index is not None and isinstance(value, (cst.Tuple, cst.List)) and b.index < len(value.elements):
        value = value.elements[b.index].value
    if value is None or not any(isinstance(n, cst.Name) and n.value in writer.params for n in walk(value)):
        return False
    body = writer.node.body
    if isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr) and isinstance(
                first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            return True
    for other in model.index.functions:
        if other is writer or other.parent is not model.index.scope or len(other.returns) != 1:
            continue
        ret = other.returns[0]
        if isinstance(ret, cst.Name) and ret.value == b.name and b.name not in other.globals:
            return True  # `def get_layout(): return _LAYOUT`
    return False


def _frozen_local(model: SemanticModel, fn: Function, read, owner: Function,
                  bindings: list[Binding], entries) -> Violation | None:
    """A closure's frozen local: `fn` (staged, nested in `owner`) reads `owner`'s local `name`,
    and `owner` calls fn, rebinds the name, and calls fn again (or rebinds it in a loop that
    calls fn, from a value the loop carries): the second call reuses the program traced with the
    old value. A factory that binds its locals once before defining fn rebinds nothing after."""
    name = read.name.value
    if any(b.kind in ("import", "def", "class", "param") for b in bindings) or name in fn.nonlocals:
        return None
    if not isinstance(owner.node.body, cst.IndentedBlock):
        return None
    if any(isinstance(a, _LOOPS) for a in _ancestors_below(model, fn.node, owner.node)):
        return None  # the def runs again each iteration: a new function, traced with current values
    subject = ClosureLocal(model, fn, entries, name=name, owner=owner, bindings=tuple(bindings))
    t = run_timeline(subject, owner.node.body.body, owner)
    if t is None:
        return None
    reads, how = _program_reads(model, fn, f"`{name}`", _reads_of(fn, name))
    shown = f"`{_shown(model, fn).display_name}`"
    return Violation(
        read.name,
        message(
            f"{_reader(model, fn)} reads `{name}` of the enclosing `{owner.display_name}`, which is rebound on ",
            *_rebind_parts(model, t.rebind), f" after the first call: {_frozen_how(how, shown)} (",
            *reason_parts(staged_reason(model, _shown(model, fn), cached=True)),
            ")", *_first_value(model, t), *_stale_parts(t), "; pass it as an argument",
        ),
        data={"name": name, "rebinding": t.rebind.node, "timeline": t},
        premises=(_rebound(f"`{name}`", fn, t, _shown(model, fn)), _no_retrace(model, f"`{name}`", t, entries), reads),
    )


_SETUP_METHODS = frozenset({"__init__", "__post_init__", "setup", "__new__"})


def _self_static(model: SemanticModel, fn: Function, depth: int = 0) -> bool:
    """Whether the object a method runs on is a Python value of the trace (part of the cache
    key by identity, its attributes read as constants): the method is jitted as a bound method
    (`jax.jit(self.step)`), with `static_argnums=0` / `static_argnames="self"`, or called as
    `self.m(...)` from a method where that holds. Framework Modules (flax, equinox) are pytrees
    or fields, and are left alone."""
    if depth > 4 or not fn.params or fn.cls is None or instances(model).framework_base(fn.cls) is not None:
        return False
    for r in model.traced.reasons.get(fn, ()):
        if r.kind in ("decorator", "transform") and r.transform in COMPILING:
            if r.bound_method or 0 in r.static_argnums or fn.params[0] in r.static_argnames:
                return True
        elif r.kind == "called" and r.caller is not None and r.caller.cls is fn.cls and isinstance(r.node, cst.Call):
            func = r.node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and r.caller.params \
                    and func.value.value == r.caller.params[0] and _self_static(model, r.caller, depth + 1):
                return True
    return False


def _frozen_attributes(model: SemanticModel, fn: Function, entries, roots: list[Function]) -> Iterator[Violation]:
    """`self.E` read by a jitted method whose `self` is static, where the module rebinds `obj.E`
    (or calls a method that sets `self.E`) between a call that traces the method on `obj` and
    one that reuses the program on the same object."""
    inst = instances(model)
    ci = fn.cls
    me = fn.params[0]
    reads: dict[str, cst.Attribute] = {}
    for node in own_nodes(fn):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me \
                and node.attr.value not in reads and inst.method(ci, node.attr.value) is None \
                and not _stored(model, node):
            reads[node.attr.value] = node
    if not reads:
        return
    written = _attributes_written_after_setup(model, inst, ci)
    candidates = {a: n for a, n in reads.items() if a in written}
    if not candidates:
        return
    keys = _used_objects(model, fn, entries, ci)
    for attr, node in candidates.items():
        for key in keys:
            subject = ObjectAttribute(model, fn, entries, cls=ci, attr=attr, key=key)
            t = run_timeline(subject, model.module.body, model.index.scope)
            for root in roots:
                if t is not None:
                    break
                t = run_timeline(subject, root.node.body.body, root)
            if t is None:
                continue
            reads, how = _program_reads(model, fn, f"`{me}.{attr}`", [
                n for n in own_nodes(fn) if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name)
                and n.value.value == me and n.attr.value == attr and not _stored(model, n)])
            frozen = "frozen into the program as a constant" if how != STATIC else \
                "read as a Python value, fixing the program's structure"
            yield Violation(
                node,
                message(
                    f"`{fn.display_name}` reads `{me}.{attr}`, which is rebound on ", *_rebind_parts(model, t.rebind),
                    f" after the method is compiled for that object: with `{me}` static (",
                    *reason_parts(staged_reason(model, fn, cached=True)),
                    f"), the object is part of the cache key but `{me}.{attr}` is {frozen}",
                    *_first_value(model, t), *_stale_parts(t),
                    f"{f' (a gradient through `{attr}` comes back 0)' if how == PROGRAM else ''}; pass it as an argument",
                ),
                data={"name": attr, "rebinding": t.rebind.node, "timeline": t},
                premises=(_rebound(f"`{me}.{attr}`", fn, t), _no_retrace(model, f"`{me}.{attr}`", t, entries), reads),
            )
            break


def _static_parameters(model: SemanticModel, fn: Function) -> list[str]:
    """Parameters of fn a compiling transform marks static (`static_argnums`, `static_argnames`),
    besides the `self` of a method (`_self_static`)."""
    params = [p for p in fn.params if p not in fn.star_params]
    out: list[str] = []
    for r in model.traced.reasons.get(fn, ()):
        if r.kind not in ("decorator", "transform") or r.transform not in COMPILING:
            continue
        ps = params[1:] if fn.cls is not None and params and params[0] in ("self", "cls") and (
            r.bound_method or r.kind == "decorator" and not _unbound_method(fn)) else params
        for i, name in enumerate(ps):
            if (i in r.static_argnums or name in r.static_argnames) and name not in out:
                out.append(name)
    if fn.cls is not None and fn.params:
        out = [p for p in out if p != fn.params[0]]
    return out


def _unbound_method(fn: Function) -> bool:
    node = fn.node
    return isinstance(node, cst.FunctionDef) and any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)


def _frozen_static_argument(model: SemanticModel, fn: Function, param: str, entries,
                            roots: list[Function]) -> Iterator[Violation]:
    """`v.val` read by a compiled function whose parameter `v` is static, where the module
    mutates the attribute of an object (`v.val = 0`, `m.data += 1`) between a call that traces
    fn with that object and a call that passes it again: jit keeps the object itself as the
    cache key, so the mutation is not a new key (an identity hash), or no longer matches the
    key the first program was filed under (a hash computed from the attribute)."""
    inst = instances(model)
    reads: dict[str, list[cst.Attribute]] = {}
    for node in own_nodes(fn):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == param \
                and not _stored(model, node) and model.lookup(param, model.scope_of(node)) is not None \
                and model.lookup(param, model.scope_of(node))[0] is fn:
            reads.setdefault(node.attr.value, []).append(node)
    if not reads:
        return
    probe = StaticArgumentAttribute(model, fn, entries, cls=None, attr="", key=(), param=param)
    objects: list[tuple] = []  # (class, object key) of the objects host code passes
    for site in model.index.calls:
        if model.is_traced_scope(site.scope) or not (compiled_callees(model, site.call, site.scope) & entries):
            continue
        arg = model.argument_for(site.call, fn, param)
        ci = inst.instance_class(arg, site.scope) if arg is not None else None
        if ci is None or instances(model).framework_base(ci) is not None:
            continue
        probe.cls = ci
        key = probe.object_key(arg, site.scope, None)
        if key is not None and (ci, key) not in objects:
            objects.append((ci, key))
    reported: set[str] = set()
    for ci, key in objects:
        written = _attributes_written_after_setup(model, inst, ci)
        for attr, nodes in reads.items():
            if attr in reported or attr not in written or inst.method(ci, attr) is not None:
                continue
            subject = StaticArgumentAttribute(model, fn, entries, cls=ci, attr=attr, key=key, param=param)
            t = run_timeline(subject, model.module.body, model.index.scope)
            for root in roots:
                if t is not None:
                    break
                t = run_timeline(subject, root.node.body.body, root)
            if t is None:
                continue
            reported.add(attr)
            name = f"`{param}.{attr}`"
            premise, how = _program_reads(model, fn, name, nodes)
            frozen = "frozen into the program as a constant" if how != STATIC else \
                "read as a Python value, fixing the program's structure"
            yield Violation(
                nodes[0],
                message(
                    f"{_reader(model, fn)} reads {name}, which is rebound on ", *_rebind_parts(model, t.rebind),
                    f" after the function is compiled for that object: with `{param}` static (",
                    *reason_parts(staged_reason(model, _shown(model, fn), cached=True)),
                    f"), the object itself is the cache key, but {name} is {frozen}",
                    *_first_value(model, t), *_stale_parts(t),
                    "; pass it as an argument (or make the static object immutable)",
                ),
                data={"name": attr, "rebinding": t.rebind.node, "timeline": t},
                premises=(_rebound(name, fn, t, _shown(model, fn)), _static_key(model, name, param, ci, attr, key, t, entries),
                          premise),
            )


def _static_key(model: SemanticModel, subject: str, param: str, ci, attr: str, key: tuple, t: Timeline,
                entries) -> Premise:
    """`no-retrace-between` for a mutated static argument: the call after the mutation passes the
    same object. With the default (identity) hash it is the same cache key: the program traced
    first is reused (`identity-key`). A class whose `__hash__`/`__eq__` reads the attribute makes
    the next call miss the cache, but the cache holds the mutated object as the key of the first
    program too: the entries' keys no longer tell the programs apart, and a later call can be
    served the one traced with the old value (`mutated-key`)."""
    # The object itself, passed again, is not a value rebuilt from the new one: it is the key.
    scope = model.scope_of(t.stale_use)
    probe = StaticArgumentAttribute(model, None, entries, cls=ci, attr=attr, key=(), param=param)
    same = [(arg, where) for arg, where in t.rebuilt
            if isinstance(arg.value, (cst.Name, cst.Attribute)) and probe.object_key(arg.value, scope, None) == key]
    plain = _no_retrace(model, subject, replace(t, rebuilt=tuple(r for r in t.rebuilt if r not in same)), entries)
    if plain.status != "proven":
        return plain
    inst = instances(model)
    hashing = [m for m in ("__hash__", "__eq__") if (f := inst.method(ci, m)) is not None
               and any(isinstance(n, cst.Attribute) and n.attr.value == attr for n in walk(f.node.body))]
    if inst.method(ci, "__hash__") is None and (inst.method(ci, "__eq__") is not None or _dataclass(model, ci)):
        # `__eq__` without `__hash__`, or a dataclass: unhashable (jit refuses it as a static
        # argument), or frozen (the mutation raises).
        return disproved("no-retrace-between", subject, "unhashable-or-frozen", f"`{ci.name}` is unhashable or "
                         "frozen (an `__eq__` without `__hash__`, or a dataclass): jit refuses it as a static "
                         "argument, or the mutation raises")
    scope_of_class = ci.parent or model.index.scope
    foreign = [b for b in inst.bases(ci) if inst.class_named(b, scope_of_class) is None
               and model.qn(b, scope_of_class) != "builtins.object"]
    if foreign and not hashing:
        return assumed("no-retrace-between", subject, f"assumes `{ci.name}` hashes by identity (its base "
                       f"`{code_of(model, foreign[0], 30)}` is not in this module)")
    if hashing:
        return proven("no-retrace-between", subject, "mutated-key", f"`{ci.name}.{hashing[0]}` reads `{attr}`, "
                      "so the call on line ", LineOf(t.stale_use), " may trace again, but jit's cache keeps the "
                      f"object itself as the key of the program traced on line ", LineOf(t.first_use),
                      ": mutated in place, that key now equals the new one, and a later call can be served the "
                      "program traced with the old value")
    return proven("no-retrace-between", subject, "identity-key", f"`{ci.name}` hashes by identity (no `__hash__`): "
                  "the call on line ", LineOf(t.stale_use), f" passes the same object as the call on line ",
                  LineOf(t.first_use), ", the same cache key, and reuses its program")


def _dataclass(model: SemanticModel, ci) -> bool:
    """A class decorated as a dataclass (stdlib, flax.struct, chex) without `unsafe_hash=True`."""
    node = ci.node
    if not isinstance(node, cst.ClassDef):
        return False
    scope = ci.parent or model.index.scope
    for d in node.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        qn = model.qn(target, scope) or ""
        if qn.rsplit(".", 1)[-1] in ("dataclass", "dataclasses"):
            if isinstance(d.decorator, cst.Call) and any(
                    a.keyword is not None and a.keyword.value == "unsafe_hash" and isinstance(a.value, cst.Name)
                    and a.value.value == "True" for a in d.decorator.args):
                return False
            return True
    return False


def _stored(model: SemanticModel, node: cst.Attribute) -> bool:
    parent = model.parent(node)
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, (cst.AugAssign, cst.AnnAssign))
                                                and parent.target is node):
        return True
    return False


def _attributes_written_after_setup(model: SemanticModel, inst, ci) -> set[str]:
    """Attributes of ci's instances assigned outside their set-up methods: `obj.E = ...`
    anywhere in the module on an instance of ci, `self.E = ...` in another method. (One walk of
    the module answers for every class.)"""
    by_class = model.__dict__.get("_attributes_written_after_setup")
    if by_class is None:
        by_class = {}
        for node in walk(model.module):
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                targets = [node.target]
            else:
                continue
            attributes = [t for t in targets if isinstance(t, cst.Attribute)]
            if not attributes:
                continue
            scope = model.scope_of(node)
            where = model.function_of(node)
            for t in attributes:
                owner = inst.instance_class(t.value, scope)
                if owner is None or (where is not None and where.cls is owner and where.name in _SETUP_METHODS):
                    continue
                by_class.setdefault(id(owner), set()).add(t.attr.value)
        model.__dict__["_attributes_written_after_setup"] = by_class
    return by_class.get(id(ci), set())


def _used_objects(model: SemanticModel, fn: Function, entries, ci) -> list[tuple]:
    """The objects (as ObjectAttribute keys) on which host code calls the compiled method."""
    keys: list[tuple] = []
    probe = ObjectAttribute(model, fn, entries, cls=ci, attr="", key=())
    for site in model.index.calls:
        if model.is_traced_scope(site.scope):
            continue
        if not (compiled_callees(model, site.call, site.scope) & entries):
            continue
        key = probe.used_object(site.call, site.scope, None)
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def _ancestors_below(model: SemanticModel, node: cst.CSTNode, stop: cst.CSTNode):
    for a in model.ancestors(node):
        if a is stop:
            return
        yield a


_ENTER_EXIT = {"__enter__": "__exit__", "__exit__": "__enter__",
               "__aenter__": "__aexit__", "__aexit__": "__aenter__"}


def _set_and_restored(model: SemanticModel, writer: Function, name: str, bindings: list[Binding]) -> bool:
    """Trace-time bookkeeping by design: the function that rebinds the global restores it
    before it returns (a write in a `finally:` block, `old = NAME ... NAME = old`, or a counter
    both incremented and decremented), so the name changes only around a trace, on purpose."""
    writes = [b for b in bindings if model.function_of(b.node) is writer]
    if name not in writer.globals or not writes:
        return False
    if writer.cls is not None and writer.name in _ENTER_EXIT:
        # A context manager class: `__enter__` sets the flag, `__exit__` puts it back.
        other = _ENTER_EXIT[writer.name]
        if any(f is not None and f.cls is writer.cls and f.name == other
               for f in (model.function_of(b.node) for b in bindings)):
            return True
    for b in writes:
        if any(isinstance(a, cst.Finally) for a in _ancestors_below(model, b.node, writer.node)):
            return True
    ops = {type(b.node.operator) for b in writes if b.kind == "augassign" and isinstance(b.node, cst.AugAssign)}
    if cst.AddAssign in ops and cst.SubtractAssign in ops:
        return True
    saved = set()
    for local, bs in writer.bindings.items():
        if local == name:
            continue
        for lb in bs:
            value = lb.value
            if lb.index is not None and isinstance(value, (cst.Tuple, cst.List)) and lb.index < len(value.elements):
                value = value.elements[lb.index].value
            if isinstance(value, cst.Name) and value.value == name:
                saved.add(local)
    for b in writes:
        value = b.value
        if b.index is not None and isinstance(value, (cst.Tuple, cst.List)) and b.index < len(value.elements):
            value = value.elements[b.index].value
        if isinstance(value, cst.Name) and value.value in saved:
            return True
    return False


def _top_level_index(model: SemanticModel) -> dict[cst.CSTNode, int]:
    return {stmt: i for i, stmt in enumerate(model.module.body)}


def _top_level_of(model: SemanticModel, node: cst.CSTNode, top: dict[cst.CSTNode, int]) -> int | None:
    if node in top:
        return top[node]
    for a in model.ancestors(node):
        if a in top:
            return top[a]
    return None


def _in_loop(model: SemanticModel, b: Binding) -> bool:
    if b.kind == "for":
        return True
    return any(isinstance(a, _LOOPS) for a in model.ancestors(b.node))


RULE = MutableGlobalInTracedCode
