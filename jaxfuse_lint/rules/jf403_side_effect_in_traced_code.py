"""JF403 side-effect-in-traced-code."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

import re

from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.call_frequency import call_sites
from jaxfuse_lint.model.scopes import ClassInfo, Function, Scope, walk
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.routes import STATEFUL_MODULE_BASES
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import own_nodes, staging
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.premises import PROVEN, LineOf, Premise, assumed, disproved, proven
from jaxfuse_lint.model.state_reads import HOST, PROGRAM, UNKNOWN, StateRead, state_reads
from jaxfuse_lint.model.traced_premise import traced_premise
from jaxfuse_lint.rules.base import Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import Claim, tracing

# Methods that mutate whatever object they are called on (lists, dicts, sets, deques).
MUTATORS = frozenset({
    "append", "extend", "insert", "appendleft", "extendleft", "setdefault", "popitem", "clear", "remove",
    "discard",
})
# Mutators of Python containers that return None: a call whose value is used is another method.
_RETURNS_NONE = frozenset({"append", "extend", "insert", "appendleft", "extendleft", "clear", "remove", "discard"})
# Names that mutate containers but also name pure methods elsewhere (`optax`'s `tx.update`,
# `x.at[i].add`): counted only on objects known to be Python containers.
CONTAINER_MUTATORS = frozenset({"update", "add", "pop", "sort", "reverse", "__setitem__", "__delitem__"})
_CONTAINER_CALLS = frozenset({
    "builtins.list", "builtins.dict", "builtins.set", "builtins.bytearray", "collections.defaultdict",
    "collections.OrderedDict", "collections.deque", "collections.Counter",
})
# Methods that build or set up an object: writes to `self` there are construction, not side effects.
_CONSTRUCTION = frozenset({"__init__", "__post_init__", "__new__", "setup", "__setattr__", "__setstate__",
                           "__set_name__", "__init_subclass__", "__enter__", "__exit__"})


class SideEffectInTracedCode(Rule):
    code = "JF403"
    premises = ("runs-traced", "outside-trace", "read-per-call")
    name = "side-effect-in-traced-code"
    summary = "traced code mutates state outside the function (happens only while tracing)"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in a function that is staged and compiled (`jax.jit`, `pmap`,
    `checkpoint`, `shard_map`, a lax loop body or branch, or a function they
    call), a write to state that outlives the call:
    - assignment to a name declared `global`;
    - assignment to a name declared `nonlocal` when the enclosing function is
      not traced itself (or, inside a traced function, from a lax loop body
      storing a traced value: the body runs once, however many iterations).
      A lax body that its enclosing function hands to the loop itself is
      traced again on every call of that function, so it is flagged only
      when it stores a tracer (`nonlocal done; done = y is x` records a
      Python bool, deliberately);
    - item, attribute and `del` writes (`REGISTRY[k] = v`, `obj.n += 1`) and
      mutating calls (`.append`, `.extend`, `.insert`, `.appendleft`,
      `.setdefault`, `.clear`, `.remove`...; `.update`/`.add`/`.pop` only on
      objects known to be lists, dicts or sets, so `tx.update(...)` and
      `x.at[i].add(...)` are not mistaken for them) on a module-level object;
    - the same on `self` in a traced method (not in `__init__`, `setup`...,
      nor in a flax, equinox or haiku Module or a subclass of an NNX
      `Variable`/`Object`/`Pytree`: its attributes are state the framework's
      transforms carry in and out, writes it refuses, or facts on an object
      built inside the trace);
    - the same on an enclosing function's list, dict or object (one it binds,
      or a parameter of a host function that defines the traced one, such as
      `def foo(tot): @jax.jit def inc(x): tot[0] += x`), and on `self` of
      the host method that defines the traced function (`def make_step(self):
      def step(s): self.temperature = f(s)`).

    Writes to the function's own local objects and to its arguments are
    pure from JAX's point of view and are not flagged.

    Under an eager transform (`jax.vmap`, `jax.jvp`, `jax.grad` without
    `jit`, and what they call) the Python runs on every call, so a count or
    a recorded Python value is not lost; but the values are tracers, and a
    write that stores one (`best = z` under `jax.jvp`, `history.append(w)`
    under `jax.grad`, `REGISTRY[k] = lambda: v` under `jax.vmap`) lets it
    escape the transformation: only those are reported there. So are
    writes into the state of a traced function from a function traced by a
    transform of its own inside it (a lax loop body, `jax.checkpoint` or
    `vmap` of a closure): `partial[0] = partial[0] + y.sum()` in a
    checkpointed closure of a jitted function stores a tracer of the inner
    trace, which ends first.

    A write is reported only with evidence that the state outlives the trace
    and that skipping the write in a compiled call loses something:
    - the object may exist before the trace begins: a global, a closure
      capture, or `self` of a method that is jitted itself, traced by another
      module with its arguments, or called from traced code on an object not
      known to be built there. A method reached only through objects the
      traced code constructs (`game = Game(state); game.step(a); return
      game.get_state()`, and what those methods call on `self` or on
      attributes the class only ever sets to new instances) writes to a
      trace-local object;
    - the write is not undone by the same function: a push and a pop, `+= 1`
      and `-= 1`, an `add` and a `remove`/`discard`, an item store and its
      `del`, a store restored from a saved value or in a `finally:` clause
      (trace-time bookkeeping scoped by a context manager or a try/finally).
      A method called on an object its caller pushes and pops (`_active.add(x)`
      ... `_active.remove(x)`) counts as undone too;
    - a plain store (`=`) holds a tracer (a leaked tracer) or reads what it
      overwrites (`self.n = self.n + 1`: it counts traces, not calls). A store
      of a Python value that does not read its target (a shape int, a config
      string, a `functools.partial`, a new dict) puts the same value there on
      every trace, so a compiled call that skips it loses nothing. Augmented
      assignments, `del` and mutating calls (`append`, `add`...) are reported
      where the state is data of each call (`read-per-call`, below).

    ## Why is this bad?
    JAX runs the Python function once, to trace it; the compiled program
    contains only the array operations. The mutation happens at trace time,
    once per compilation, with tracers as values — not on each call (the JIT
    tutorial's `global_list.append(x)`, which "is not captured in the jaxpr").
    Leaked tracers stored this way fail later with `UnexpectedTracerError`; a
    counter on `self` counts compilations, not calls.

    ## Premises
    Each finding states three premises (`--output-format full` and the JSON
    and SARIF outputs list them); it is reported by default only when all
    are proven, in the preview tier when one is assumed, and not at all
    when one is disproved.
    - `runs-traced(fn)`: the function runs under a trace, on a route the
      code shows (model/evidence.py).
    - `outside-trace(state)`: the state written outlives the trace (above).
      Assumed where a mutating call's receiver is not known to be a Python
      container, or where the state is a parameter of the enclosing host
      function whose callers the module does not show.
    - `read-per-call(state)`: the state is data of each call, so what the
      compiled calls skip is lost. Proven when the write stores a tracer
      (`leaked-tracer`: `log.append(x)`, `tot[0] += x`, `self.p = p - lr *
      g` with `g` from `jax.grad` in the trace: the state keeps the first
      trace's tracer; also a closure over a tracer, `lambda: x`, the result
      of one of the module's functions every `return` of which is a tracer,
      and an argument an eager transform traces: `jax.jvp`'s primals, what
      `jax.grad` differentiates) or an argument of the traced function
      (`call-argument`). For a count (`n += 1`, `self.n = self.n + 1`) its
      readers decide (model/state_reads.py): read on the host
      (`host-reads`: `print(n)` after the calls) or into the program's
      arrays (`program-reads`: `return x + n`), it is proven; read only by
      code that runs while tracing, as a Python value or into text (a
      counter that makes summary names unique), it is disproved
      (`trace-time-reads`), and so it is where only tests read it, where
      nothing can read it (a private global or a closure's variable nothing
      reads), or where its name or its helper's docstring says it counts
      traces (`compiled_times`, "for use inside jax functions": weaker
      evidence than the reads, consulted after them). A count nothing in
      the module reads is proven by a name that says it counts calls
      (`calls`, `steps`) and assumed otherwise. A Python value recorded
      (`shapes.add(x.shape)`, `names.append(f"layer{i}")`, `del d[k]`) is
      the same on every call the program serves: recording it once per
      trace loses only a count (`trace-facts`, disproved); a value of
      unknown kind is assumed to be data of the call.

    ## Known problems
    A mutating call is a container's only on a receiver known to be a list,
    dict or set (`self.seen = []`, a module-level `history = []`): on an
    instance of a class of the module (`self.engine.insert(state, x)` where
    `self.engine = Engine()`) it is that class's method, and a call whose value
    is used is not `list.append`; on a receiver of unknown type the finding is
    in the preview tier. Writes after a guard that refuses or leaves a trace
    (`if isinstance(x, jax.core.Tracer): return x`) run on the host, and a
    write whose only route into a trace is a call that does not match the
    function's signature is in the preview tier (model/evidence.py).
    Aliases are not followed (`lst = GLOBAL; lst.append(x)` is missed). An
    object counts as built inside the trace when it comes from a constructor
    call of the module's classes, from a module function whose every `return`
    gives such an object, or through a helper's parameter that every traced
    call passes such an object; anything else (a parameter of the traced
    function, a global, an object of another module) is taken as one from
    outside. A store of a
    Python value the model cannot place (an argument of unknown kind) is taken
    as static. Methods another module's traced code calls on an object this
    module cannot see are not reported. Readers in other modules are not
    seen: a public count nothing in the module reads is in the preview tier.
    Deliberate trace-time state that none of the premises above disproves is
    flagged too — silence it with `# noqa: JF403` — except two common
    idioms besides: objects named like a cache or memo table (`self._cache[key]
    = fn`), and a `nonlocal` counter owned by a pytest-style test (`test_*`,
    methods of `Test*` classes), which is how tests count compilations (a
    tracer stored there is reported all the same).
    `make_jaxpr`/`eval_shape` trace once to inspect the program (a side
    effect there is how one extracts trace-time facts): not checked.

    ## Example
    ```python
    history = []

    @jax.jit
    def step(x):
        history.append(x)
        return x * 2
    ```

    ## Use instead
    ```python
    @jax.jit
    def step(x):
        return x * 2, x  # return what you want to keep

    y, seen = step(x)
    history.append(seen)
    ```
    or, for logging, `jax.debug.callback(history.append, x)`.

    ## Fix safety
    No automatic fix: returning the state changes the function's interface.
    """
    backends = (
        Claim(
            "A Python side effect in traced code runs once, while tracing, not on every call",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax\n@jax.jit\ndef f(x):\n    out = []\n    out.append(x)\n    d = {}\n    d['a'] = x\n"
        "    return out[0] + d['a']\n",
        "history = []\ndef host(x):\n    history.append(x)\n    return x\n",
        "import jax, optax\ntx = optax.adam(1e-3)\n@jax.jit\ndef step(g, s, p):\n    return tx.update(g, s, p)\n",
        "import jax\ncompiled_times = 0\n@jax.jit\ndef f(x):\n    global compiled_times\n    compiled_times += 1\n"
        "    return x\nf(1.0)\nprint(compiled_times)\n",
        "import jax\n_n = 0\ndef name(p):\n    global _n\n    _n += 1\n    return f'{p}_{_n}'\n@jax.jit\ndef f(x):\n"
        "    return {name('loss'): x}\n",
    )
    invalid = (
        "import jax\nglobal_list = []\n@jax.jit\ndef f(x):\n    global_list.append(x)\n    return x\n",
        "import jax\nfrom functools import partial\nclass M:\n    @partial(jax.jit, static_argnums=0)\n"
        "    def f(self, x):\n        self.calls += 1\n        return x\n",
        "import jax\ncount = 0\ndef f(x):\n    global count\n    count = count + 1\n    return x\n"
        "g = jax.jit(f)\ng(1.0)\ng(2.0)\nprint(count)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        finder = _Writes(model)
        shown = evidence(model)
        for fn in model.traced.reasons:
            staged = st.is_staged(fn, cached=True)
            # Under an eager transform (`jax.vmap`, `jax.jvp`, `jax.grad` without jit) the Python runs on
            # every call: only a stored tracer, which outlives the transformation, is harm.
            eager = not staged and not st.is_staged(fn) and finder.eager(fn)
            if not staged and not eager:
                continue
            for node, target, owner_desc, verb in finder.writes(fn):
                # The write runs under a trace on a route that runs (model/evidence.py).
                runs = shown.premise(fn, node, raises=False)
                if runs is None:
                    continue
                per_call = finder.per_call(fn, node, target)
                leaked = per_call.status == PROVEN and per_call.inference == "leaked-tracer"
                if eager and not leaked:
                    continue
                # For `self`, say the route by which the instance comes from outside.
                reason = finder.self_reason.get(fn) if fn.params and target == fn.params[0] else None
                if eager or (leaked and finder.into_outer_trace(fn, node, target)):
                    text = message(
                        f"`{code_of(model, node)}` {verb} {owner_desc} while `{fn.display_name}` is traced (",
                        *reason_parts(reason or model.trace_reason(fn)),
                        "), storing a tracer of that trace: the tracer outlives it (an escaped tracer, which "
                        "raises `UnexpectedTracerError` where the state is used later); return the value instead",
                    )
                else:
                    text = message(
                        f"`{code_of(model, node)}` {verb} {owner_desc} while `{fn.display_name}` is traced (",
                        *reason_parts(reason or model.trace_reason(fn)),
                        "): it happens once, at trace time, not on every call, and the compiled function "
                        "never does it; return the value instead (or use `jax.debug.callback` for logging)",
                    )
                yield Violation(
                    node,
                    text,
                    data={"target": target},
                    premises=(runs, finder.outside(node, target), per_call),
                )


class _Writes:
    def outside(self, node: cst.CSTNode, target: str) -> Premise:
        """`outside-trace(target)`: the state written lives outside the traced function (the finder
        proved it, or assumed what `assumed` says)."""
        why = self.assumed.get(node)
        if why is not None:
            return assumed("outside-trace", f"`{target}`", why)
        return proven("outside-trace", f"`{target}`", "write-target", f"`{code_of(self.model, node, 40)}` writes state "
                      "that outlives the trace")

    # -- read-per-call: who reads the state, and how -------------------------------------------------
    def per_call(self, fn: Function, node: cst.CSTNode, target: str) -> Premise:
        """`read-per-call(state)`: the state a write changes is read as data of each call (the
        write is then lost on every call after the first), or only as bookkeeping of the trace.

        - a stored tracer (`log.append(x)`, `tot[0] += x`, `self.p = p - lr * g`): the state holds
          the first trace's tracer in place of each call's value (proven where `traced` is);
        - a Python value recorded (`shapes.append(x.shape)`, `names.add(n)`, `del d[k]`): the same on
          every call the program serves, so doing it once per trace loses nothing but a count;
        - a count (`n += 1`, `self.n = self.n + 1`): decided by its readers. Read on the host (after
          the calls), or into the program's arrays (`return x + n`), a count of traces stands where
          a count of calls is read; read only while tracing as a Python value or into text (unique
          summary names), by tests only, or named and documented as counting traces
          (`compiled_times`, "for use inside jax functions"), it is trace-time bookkeeping."""
        m = self.model
        value, count = self._written_value(node)
        state = self._state_of(fn, node, target)
        subject = f"`{state[2]}`"
        tracer = self.tracer_in(fn, value)
        if tracer is None and isinstance(node, cst.AugAssign):
            tracer = self.tracer_in(fn, node.target)  # `seq[0] += 1` stores `seq[0] + 1`
        why = self._tracer_why.get(id(tracer)) if tracer is not None else None
        if why is not None:
            return proven("read-per-call", subject, "leaked-tracer", f"it stores `{code_of(m, tracer, 40)}`, a tracer (",
                          *why, "): after the trace the state holds that tracer, not each call's value")
        traced = traced_premise(m).premise(tracer, m.function_of(tracer) or fn) if tracer is not None else None
        if traced is not None and traced.status == PROVEN:
            return proven("read-per-call", subject, "leaked-tracer", f"it stores `{code_of(m, tracer, 40)}`, a tracer (",
                          *(traced.source or (traced.inference,)), "): after the trace the state holds that tracer, "
                          "not each call's value")
        if traced is None and isinstance(value, cst.Name) and staged_values(m).kind(value, fn) is not Kind.STATIC:
            found = m.lookup(value.value, fn)
            if found is not None and found[0] is fn and [b.kind for b in found[1]] == ["param"] \
                    and value.value not in fn.params_with_default and value.value not in fn.star_params \
                    and not (fn.cls is not None and fn.params and fn.params[0] == value.value):
                return proven("read-per-call", subject, "call-argument", f"it stores `{value.value}`, an argument of "
                              f"`{fn.display_name}`: data of each call, kept from the first trace only")
        found = self._per_call_from_readers(fn, node, state, subject, value, count)
        if traced is not None and found.status != PROVEN:
            return assumed("read-per-call", subject, *traced.source)
        return found

    def _per_call_from_readers(self, fn: Function, node: cst.CSTNode, state: tuple, subject: str,
                               value: cst.BaseExpression | None, count: bool) -> Premise:
        m = self.model
        if not count:
            if value is None or staged_values(m).kind(value, fn) is Kind.STATIC:
                what = f"`{code_of(m, value, 40)}`, a Python value" if value is not None else "no value of the call"
                return disproved("read-per-call", subject, "trace-facts", f"`{code_of(m, node, 40)}` records {what} "
                                 "that is the same on every call the program serves: once per trace loses only a "
                                 "count")
            return assumed("read-per-call", subject, f"assumes `{code_of(m, value, 40)}` is data of each call (it is not "
                           "shown to be a tracer, nor a Python value the same on every call)")
        kind, owner, name = state
        reads = state_reads(m)
        found = reads.attribute_reads(owner, name.split(".", 1)[1]) if kind == "attribute" else \
            reads.name_reads(owner, name)
        found = [r for r in found if not self._in_write(r, node)]
        marker = _per_trace_marker(fn, name, m.traced.reasons.get(fn, ()))
        host = [r for r in found if r.how == HOST]
        by_tests = [r for r in host if _in_test(m, r)]
        host = [r for r in host if r not in by_tests]
        if host:
            if marker is not None:  # what the host reads: a count of traces, on purpose
                return disproved("read-per-call", subject, "named-per-trace", marker)
            return proven("read-per-call", subject, "host-reads", f"`{code_of(m, host[0].node, 40)}` on line ",
                          LineOf(host[0].node), " reads it on the host, where a count of traces stands for a count "
                          "of calls")
        if by_tests:
            return disproved("read-per-call", subject, "read-by-tests", "only tests read it (line ",
                             LineOf(by_tests[0].node), "): counting traces is how tests check compilation")
        program = [r for r in found if r.how == PROGRAM]
        if program:
            return proven("read-per-call", subject, "program-reads", f"`{code_of(m, program[0].node, 40)}` on line ",
                          LineOf(program[0].node), " puts it into the program's arrays, as the count at the first "
                          "trace")
        unknown = [r for r in found if r.how == UNKNOWN]
        if found and not unknown:
            return disproved("read-per-call", subject, "trace-time-reads", "only code that runs while tracing reads it "
                             "(line ", LineOf(found[0].node), "), as a Python value or text: bookkeeping of the trace")
        if marker is not None:
            return disproved("read-per-call", subject, "named-per-trace", marker)
        if not found and kind == "name" and (isinstance(owner, Function) or name.startswith("_")):
            return disproved("read-per-call", subject, "unread", "nothing reads it, and nothing outside "
                             f"{'the enclosing function' if isinstance(owner, Function) else 'the module'} should")
        said = _per_call_name(name)
        if said is not None:
            return proven("read-per-call", subject, "named-per-call", said)
        if unknown:
            return assumed("read-per-call", subject, f"assumes the use of `{code_of(m, unknown[0].node, 30)}` on line ",
                           LineOf(unknown[0].node), " reads it as a count of calls")
        return assumed("read-per-call", subject, f"assumes code elsewhere reads `{name}` as a count of calls "
                       "(nothing in this module reads it)")

    def _in_write(self, read: StateRead, node: cst.CSTNode) -> bool:
        """The read is part of the reported write itself (`self.n = self.n + 1`)."""
        return any(a is node for a in self.model.ancestors(read.node))

    def _written_value(self, node: cst.CSTNode) -> tuple[cst.BaseExpression | None, bool]:
        """The value a reported write stores, and whether the write is a count (`n += 1`,
        `n = n + 1`, `d[k] += v`: it accumulates into what it overwrites)."""
        m = self.model
        if isinstance(node, cst.Call):
            return (node.args[-1].value if node.args else None), False
        stmt = node
        for a in (node, *m.ancestors(node)):
            if isinstance(a, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del, cst.For, cst.CompFor, cst.NamedExpr,
                              cst.WithItem)):
                stmt = a
                break
        if isinstance(stmt, cst.AugAssign):
            return stmt.value, True
        if isinstance(stmt, (cst.Assign, cst.AnnAssign, cst.NamedExpr)):
            targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
            return stmt.value, any(_reads(m, stmt.value, el) for t in targets for el in _flat_targets(t))
        if isinstance(stmt, (cst.For, cst.CompFor)):
            return stmt.iter, False
        if isinstance(stmt, cst.WithItem):
            return stmt.item, False
        return None, False

    def _state_of(self, fn: Function, node: cst.CSTNode, target: str) -> tuple:
        """("name", owner scope, name) or ("attribute", class, "self.attr"): what a write changes."""
        m = self.model
        expr = node.func.value if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) else node
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            expr = next((el for t in targets for el in _flat_targets(t)
                         if (b := _base_name(el)) is not None and b.value == target), expr)
        if isinstance(expr, cst.Name) and expr.value == target and target in fn.nonlocals:
            owner = self._nonlocal_owner(fn, target)
            if owner is not None:
                return "name", owner, target
        found = m.lookup(target, fn)
        owner = found[0] if found is not None else m.index.scope
        if found is not None and isinstance(owner, Function) and owner.cls is not None and \
                _is_self(owner, target, found[1]):
            attr = _first_attribute(expr, target)
            if attr is not None:
                return "attribute", owner.cls, f"{target}.{attr}"
        if target in fn.globals:
            owner = m.index.scope
        return "name", owner, target

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.staging = staging(model)
        self._balanced_memo: dict[Function, set[str]] = {}
        self._self_memo: dict[Function, bool] = {}
        self._in_progress: set[Function] = set()
        self._params_in_progress: set[tuple[Function, str]] = set()
        self.self_reason: dict[Function, object] = {}  # the reason that makes a method's `self` outside
        # Writes whose evidence has an assumed link: what is assumed (model/evidence.py's tier).
        self.assumed: dict[cst.CSTNode, str] = {}
        # Parameters of host factories written to whose callers the module does not show.
        self.param_assumed: dict[tuple[int, str], str] = {}
        # Tracers found by this rule's own inferences (a closure over a tracer, an eager transform's
        # argument, a module function's traced result): why each is one, as premise source parts.
        self._tracer_why: dict[int, tuple] = {}

    def _nnx_state(self, ci: ClassInfo, depth: int = 0) -> bool:
        """A subclass of an NNX Variable or graph-node class (`class Count(nnx.Variable)`)."""
        if depth > 8:
            return False
        inst = instances(self.model)
        scope = ci.parent or self.model.index.scope
        for base in inst.bases(ci):
            if self.model.qn(base, scope) in _NNX_STATE_BASES:
                return True
            parent = inst.class_named(base, scope)
            if parent is not None and parent is not ci and self._nnx_state(parent, depth + 1):
                return True
        return False

    def _balanced(self, fn: Function) -> set[str]:
        if fn not in self._balanced_memo:
            self._balanced_memo[fn] = _balanced_keys(self.model, fn)
        return self._balanced_memo[fn]

    # -- is `self` an object from outside the trace? -----------------------------------------------
    def _self_external(self, method: Function) -> bool:
        """Whether a traced method may run on an instance that existed before the trace began:
        it is jitted itself (`self` static or a pytree argument), another module or the
        library configuration traces it with its arguments, or a traced caller reaches it
        through an object that is not known to be built inside the trace. Methods reached only
        through `Game(state).step()`-style objects the traced code constructs write to a
        trace-local object."""
        memo = self._self_memo
        if method in memo:
            return memo[method]
        if method in self._in_progress:
            return False  # a cycle of self-calls: decided by the other reasons
        self._in_progress.add(method)
        result = False
        for r in self.model.traced.reasons.get(method, ()):
            if r.kind == "called" and r.caller is not None and isinstance(r.node, cst.Call):
                if self._receiver_external(r.caller, r.node):
                    result = True
            elif r.kind == "external" and not r.params_traced:
                # called from another module's traced code on an object we cannot see
                continue
            else:
                result = True
            if result:
                self.self_reason[method] = r
                break
        self._in_progress.discard(method)
        if result or not self._in_progress:
            memo[method] = result  # a False inside a cycle may still change
        return result

    def _receiver_external(self, caller: Function, call: cst.Call) -> bool:
        m = self.model
        func = call.func
        if isinstance(func, cst.Name):
            # `Game(state)`: the constructor's (and what it calls on self) instance is new
            return instances(m).class_named(func, caller) is None
        if not isinstance(func, cst.Attribute):
            return True
        recv = func.value
        if instances(m).class_named(recv, caller) is not None:
            # `Game.step(g)`: the instance is the first argument
            if not call.args or call.args[0].keyword is not None:
                return True
            recv = call.args[0].value
        elif func.attr.value in _PUSHES | _POPS and _key(m, recv) in self._balanced(caller):
            return False  # `_active.add(x)` ... `_active.remove(x)`: undone before the caller returns
        return not self._fresh(caller, recv)

    def _builds(self, scope: Function, call: cst.Call, depth: int) -> bool:
        """Whether a call returns a new object: a constructor of the module's classes, or a
        function of the module whose every `return` gives a fresh object."""
        m = self.model
        if instances(m).class_named(call.func, scope) is not None:
            return True
        if depth > 3:
            return False
        callees = list(m.traced_analysis().callables(call.func, scope, direct_only=True))
        if len(callees) != 1 or callees[0][1]:
            return False
        helper = callees[0][0]
        if helper.is_lambda:
            return False
        returns = [n for n in own_nodes(helper) if isinstance(n, cst.Return)]
        return bool(returns) and all(
            r.value is not None and self._fresh(helper, r.value, depth + 1) for r in returns)

    def _fresh_parameter(self, fn: Function, name: str, depth: int) -> bool:
        """A parameter is a fresh object when fn is traced only as a helper of traced code
        (`def advance(game): game.step()`) and every such call passes a fresh object."""
        reasons = self.model.traced.reasons.get(fn, ())
        if not reasons or name in fn.star_params:
            return False
        key = (fn, name)
        if key in self._params_in_progress:
            return True  # a cycle (`g = advance(g)`): objects from outside enter elsewhere or not at all
        self._params_in_progress.add(key)
        try:
            return self._all_calls_pass_fresh(fn, name, reasons, depth)
        finally:
            self._params_in_progress.discard(key)

    def _all_calls_pass_fresh(self, fn: Function, name: str, reasons, depth: int) -> bool:
        for r in reasons:
            if r.kind != "called" or r.caller is None or not isinstance(r.node, cst.Call):
                return False
            if any(a.star for a in r.node.args):
                return False
            arg = self.model.argument_for(r.node, fn, name)
            if arg is None or not self._fresh(r.caller, arg, depth + 1):
                return False
        return True

    def _fresh(self, scope: Function, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether expr is an object built during the trace: `self` of a method reached only
        through such objects, a local bound only to constructor calls of the module's classes,
        or an attribute of a fresh object that its class only ever sets to such calls."""
        m = self.model
        if depth > 4:
            return False
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "super":
            return scope.cls is not None and not self._self_external(scope)
        if isinstance(expr, cst.Call):
            return self._builds(scope, expr, depth)
        if isinstance(expr, cst.Name):
            found = m.lookup(expr.value, scope)
            if found is None:
                return False
            owner, bindings = found
            if isinstance(owner, Function) and _is_self(owner, expr.value, bindings):
                return not self._self_external(owner)
            if not isinstance(owner, Function) or not m.is_traced(owner):
                return False
            if len(bindings) == 1 and bindings[0].kind == "param":
                return self._fresh_parameter(owner, expr.value, depth)
            return bool(bindings) and all(
                b.kind in ("assign", "annassign") and b.index is None and isinstance(b.value, cst.Call)
                and self._builds(owner, b.value, depth) for b in bindings)
        if isinstance(expr, cst.Attribute):
            if not self._fresh(scope, expr.value, depth + 1):
                return False
            ci = instances(m).instance_class(expr.value, scope)
            if ci is None:
                return False
            values = list(_self_attribute_values(m, ci, expr.attr.value))
            return bool(values) and all(
                isinstance(v, cst.Call) and instances(m).class_named(v.func, s) is not None for v, s in values)
        return False

    def writes(self, fn: Function):
        """(reported node, written name, description of its owner, verb) for each outside write."""
        found = list(self._all_writes(fn))
        balanced = self._balanced(fn) if found else set()
        for node, name, desc, verb in found:
            if _write_key(self.model, node) & balanced:
                continue  # undone in the same function: bookkeeping scoped to the trace
            yield node, name, desc, verb

    def _all_writes(self, fn: Function):
        for node in own_nodes(fn):
            if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Del)):
                if isinstance(node, cst.Assign):
                    targets = [t.target for t in node.targets]
                elif isinstance(node, cst.AnnAssign):
                    if node.value is None:
                        continue
                    targets = [node.target]
                else:
                    targets = [node.target]
                value = getattr(node, "value", None)
                if isinstance(node, cst.AugAssign):
                    value = (node.target, node.value)  # it stores `target <op> value`
                for t in targets:
                    if (isinstance(node, (cst.Assign, cst.AnnAssign)) and not self._stores_tracer(fn, value)
                            and not _reads(self.model, value, t)):
                        # A plain store of a Python value (a shape, a config, a callable) that
                        # does not read what it overwrites: every trace stores the same, and a
                        # compiled call that skips it loses nothing.
                        continue
                    for _, name, desc, verb in self._target_writes(fn, t, deleting=isinstance(node, cst.Del),
                                                                   value=value):
                        yield node, name, desc, verb
            elif isinstance(node, (cst.For, cst.CompFor)):
                yield from self._target_writes(fn, node.target)
            elif isinstance(node, cst.NamedExpr):
                yield from self._target_writes(fn, node.target)
            elif isinstance(node, cst.WithItem) and node.asname is not None:
                yield from self._target_writes(fn, node.asname.name)
            elif isinstance(node, cst.Call):
                yield from self._call_writes(fn, node)

    def _target_writes(self, fn: Function, target: cst.BaseExpression, deleting: bool = False,
                       value: cst.BaseExpression | None = None):
        for t in _flat_targets(target):
            if isinstance(t, cst.Name):
                if t.value in fn.globals:
                    yield t, t.value, f"module-level `{t.value}` (declared `global`)", (
                        "deletes" if deleting else "rebinds")
                elif t.value in fn.nonlocals:
                    owner = self._nonlocal_owner(fn, t.value)
                    # (A test's counter of traces is deliberate; a tracer stored in it is not.)
                    if owner is not None and (not _is_test(owner) or self._stores_tracer(fn, value)) \
                            and self._outside(fn, owner, value):
                        desc = f"`{t.value}` of the enclosing `{owner.display_name}` (declared `nonlocal`)"
                        yield t, t.value, desc, "deletes" if deleting else "rebinds"
            elif isinstance(t, (cst.Attribute, cst.Subscript)):
                base = _base_name(t)
                if base is None or _is_memo(t):
                    continue
                desc = self._external(fn, base, item_write=True, value=value)
                if desc is not None:
                    self._note_parameter(fn, base, t)
                    yield t, base.value, desc, "deletes from" if deleting else "writes to"

    def _call_writes(self, fn: Function, call: cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method not in MUTATORS and method not in CONTAINER_MUTATORS:
            return
        receiver = func.value
        base = _base_name(receiver)
        if base is None or _is_memo(receiver):
            return
        if self._is_import(fn, base):
            return  # `os.remove(path)`, `jax.config.update(...)`: module functions
        container = self._is_container(fn, receiver)
        if method in CONTAINER_MUTATORS and not container:
            return
        if not container:
            # `self.engine.insert(state, x)`: a method of that name on any object. Only a Python
            # container's is a mutation: not an instance of a class (of this module) that defines
            # it, and not where the result is used (list.append/insert/extend/... return None).
            if method in _RETURNS_NONE and self._result_used(call):
                return
            if self._method_of_a_class(fn, receiver):
                return
        value = call.args[-1].value if call.args else None
        desc = self._external(fn, base, value=value)
        if desc is not None:
            self._note_parameter(fn, base, call)
            if not container and call not in self.assumed:
                self.assumed[call] = (f"assumes `{code_of(self.model, receiver)}` is a Python list, dict or set "
                                      f"(its type is not known here; `.{method}` may be a method of another object)")
            yield call, base.value, desc, "mutates"

    def _note_parameter(self, fn: Function, base: cst.Name, node: cst.CSTNode) -> None:
        found = self.model.lookup(base.value, fn)
        why = self.param_assumed.get((id(found[0]), base.value)) if found is not None else None
        if why is not None:
            self.assumed[node] = why

    def _result_used(self, call: cst.Call) -> bool:
        """Whether the call's value is used (not a statement of its own)."""
        return not isinstance(self.model.parent(call), cst.Expr)

    def _method_of_a_class(self, fn: Function, receiver: cst.BaseExpression) -> bool:
        """Whether the receiver is an instance of a class of this module: `.insert` is its method
        (traced itself where it runs, and checked there), not a container's."""
        return instances(self.model).instance_class(receiver, fn) is not None

    # -- whose object is it? ------------------------------------------------------------------------
    def _external(self, fn: Function, name: cst.Name, item_write: bool = False,
                  value: cst.BaseExpression | None = None) -> str | None:
        """A description of the object `name` refers to when it lives outside fn's call.

        An enclosing function's object counts when that function binds it itself (not a
        parameter, which may be a Pallas/state `Ref` whose writes are staged effects), and, for
        item and attribute writes, when it is a Python container or namespace object."""
        m = self.model
        found = m.lookup(name.value, fn)
        if found is None:
            return None
        owner, bindings = found
        if not isinstance(owner, Function):
            if isinstance(owner, ClassInfo):
                return None
            return f"module-level `{name.value}`"
        if _is_self(owner, name.value, bindings):
            if owner is not fn and not m.is_traced(owner):
                # `self` of the host method that defines fn: the object existed before fn's trace.
                if owner.cls is not None and (instances(m).framework_base(owner.cls) in STATEFUL_MODULE_BASES
                                              or self._nnx_state(owner.cls)):
                    return None
                if self._outside(fn, owner, value):
                    return f"`{name.value}` (the `{owner.cls.name}` instance)"
                return None
            if owner.name in _CONSTRUCTION:
                return None
            if owner.cls is not None and instances(m).framework_base(owner.cls) in STATEFUL_MODULE_BASES:
                return None  # a framework Module's attributes: state, refused, or trace-local
            if owner.cls is not None and self._nnx_state(owner.cls):
                return None  # an NNX Variable or graph node: nnx transforms carry its state out
            if not self._self_external(owner):
                return None  # an instance the traced code builds itself: trace-local
            return f"`{name.value}` (the `{owner.cls.name}` instance)"
        if owner is fn:
            return None
        if len(bindings) == 1 and bindings[0].kind == "param" and name.value not in owner.star_params \
                and not m.is_traced(owner):
            # A parameter of a host function that defines the traced one (`def foo(tot): @jax.jit
            # def increment(x): tot[0] += x`): an object its callers pass in, outside every trace.
            passed = self._passed_containers(owner, name.value)
            if item_write and passed is False:
                return None
            if passed is None:
                self.param_assumed[(id(owner), name.value)] = (
                    f"assumes `{name.value}`, a parameter of `{owner.display_name}`, is a Python list, dict or "
                    "object (no call in the module shows what its callers pass)")
            if self._outside(fn, owner, value):
                return f"`{name.value}` of the enclosing `{owner.display_name}` (its parameter)"
            return None
        if any(b.kind not in ("assign", "annassign") for b in bindings):
            return None
        if item_write and not all(_container(m, b.value, owner) or _namespace(m, b.value, owner) for b in bindings):
            return None
        if self._outside(fn, owner, value):
            return f"`{name.value}` of the enclosing `{owner.display_name}`"
        return None

    def _passed_containers(self, owner: Function, name: str, objects: bool = True) -> bool | None:
        """Whether every call of owner in the module passes a Python container (or, with
        `objects`, a namespace object) for its parameter `name` (True), some call passes something
        else (False), or no call shows it (None)."""
        m = self.model
        sites, _ = call_sites(m, owner)
        if not sites:
            return None
        for site in sites:
            arg = m.argument_for(site.call, owner, name)
            if arg is None or not (_container(m, arg, site.scope) or objects and _namespace(m, arg, site.scope)):
                return False
        return True

    def _stores_tracer(self, fn: Function, value: cst.BaseExpression | None) -> bool:
        return self.tracer_in(fn, value) is not None

    def tracer_in(self, fn: Function, value) -> cst.BaseExpression | None:
        """The part of a stored value that is a tracer: the value itself, or an element of a
        container or comprehension it builds (`[(w - lr * dw, ...) for ... in zip(params, grads)]`
        iterates over traced gradients), a closure over a tracer (`lambda: x`), the result of
        one of the module's functions that returns a tracer, or an argument an eager transform
        traces (`jax.jvp`'s primals). None where no part is known to be traced. (`value` may be
        a tuple of expressions: an augmented assignment's target and value.)"""
        values = staged_values(self.model)
        todo = list(value) if isinstance(value, tuple) else [value] if value is not None else []
        while todo:
            e = todo.pop(0)
            kind = values.kind(e, fn)
            if kind is Kind.TRACED:
                return e
            if isinstance(e, cst.Lambda):
                found = self._closure_tracer(fn, e)
                if found is not None:
                    return found
                continue
            if isinstance(e, cst.Name) and self._eager_argument(fn, e) is not None:
                return e
            if isinstance(e, cst.Call) and self._returned_tracer(fn, e) is not None:
                return e
            if kind is Kind.STATIC and not isinstance(e, (cst.Tuple, cst.List, cst.Set, cst.Dict)):
                continue  # (a container's items are looked at: `[lambda: x]` holds a tracer)
            if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
                todo.extend(el.value for el in e.elements)
            elif isinstance(e, cst.Dict):
                todo.extend(el.value for el in e.elements)
            elif isinstance(e, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                elt = e.value if isinstance(e, cst.DictComp) else e.elt
                todo.append(elt)
                if values.kind(elt, fn) is not Kind.STATIC:
                    comp: cst.CompFor | None = e.for_in
                    while comp is not None:
                        todo.append(comp.iter)  # iterating over a tracer: its items are tracers
                        comp = comp.inner_for_in
            elif isinstance(e, cst.BinaryOperation):
                todo.extend((e.left, e.right))
            elif isinstance(e, cst.UnaryOperation):
                todo.append(e.expression)
            elif isinstance(e, cst.IfExp):
                todo.extend((e.body, e.orelse))
            elif isinstance(e, cst.StarredElement):
                todo.append(e.value)
        return None

    def _closure_tracer(self, fn: Function, lam: cst.Lambda) -> cst.BaseExpression | None:
        """A name a closure built in fn reads from fn that is a tracer: the closure holds it
        (`a.dct['hi'] = [lambda: x]` keeps `x` alive past the trace)."""
        m = self.model
        inner = m.index.function_of.get(lam)
        if inner is None:
            return None
        for read in inner.reads:
            found = m.lookup(read.name.value, inner)
            if found is None or found[0] is not fn:
                continue
            probe = self.tracer_in(inner, read.name)
            if probe is None:
                probe = self.tracer_in(fn, _binding_probe(fn, read.name.value))
            if probe is None:
                continue
            why = self._tracer_why.get(id(probe))
            premise = traced_premise(m).premise(probe, m.function_of(probe) or fn) if why is None else None
            if why is None and (premise is None or premise.status != PROVEN):
                continue
            self._tracer_why[id(lam)] = (f"a closure over `{read.name.value}`: ", *(why or premise.source or (
                premise.inference,)))
            return lam
        return None

    def _eager_argument(self, fn: Function, name: cst.Name) -> tuple | None:
        """Where an eager transform makes parameter `name` of fn a tracer: a primal of `jax.jvp` /
        `jax.linearize` / `jax.vjp` (every positional argument), an argument `jax.grad`
        differentiates (its `argnums`). Under such a transform the Python runs on every call, with
        tracers."""
        m = self.model
        found = m.lookup(name.value, fn)
        if found is None or found[0] is not fn or [b.kind for b in found[1]] != ["param"] \
                or name.value in fn.star_params:
            return None
        key = id(name)
        if key in self._tracer_why:
            return self._tracer_why[key]
        why = None
        for r in m.traced.reasons.get(fn, ()):
            if r.kind not in ("transform", "decorator"):
                continue
            if r.transform in _PRIMALS and name.value not in fn.params_with_default:
                why = (f"`{name.value}` is a primal of `{r.transform}` on line ", LineOf(r.node),
                       ": a tracer on every call")
                break
        if why is None:
            differentiated = traced_premise(m).differentiated_params(fn)
            r = differentiated.get(name.value)
            if r is not None:
                why = (f"`{name.value}` is differentiated by `{r.transform}` on line ", LineOf(r.node),
                       ": a tracer on every call")
        if why is not None:
            self._tracer_why[key] = why
        return why

    def _returned_tracer(self, fn: Function, call: cst.Call) -> tuple | None:
        """`cyc_fn(t)` where the one function the call runs is one of the module's, traced, and every
        `return` of it is a tracer there (`return (t % n) / norm`)."""
        m = self.model
        if id(call) in self._tracer_why:
            return self._tracer_why[id(call)]
        callees = list(m.traced_analysis().callables(call.func, fn, direct_only=True))
        if len(callees) != 1 or not m.is_traced(callees[0][0]):
            return None
        callee = callees[0][0]
        if not callee.returns or callee is fn:
            return None
        premises = [traced_premise(m).premise(r, callee) for r in callee.returns]
        if not all(p is not None and p.status == PROVEN for p in premises):
            return None
        why = (f"`{callee.display_name}` returns `{code_of(m, callee.returns[0], 40)}`: ",
               *(premises[0].source or (premises[0].inference,)))
        self._tracer_why[id(call)] = why
        return why

    def _outside(self, fn: Function, owner: Function, value: cst.BaseExpression | None = None) -> bool:
        """Whether an enclosing function's state outlives fn's trace: the owner is not traced
        at all, or fn is a lax loop body (traced once however many iterations run) that stores
        a traced value there (a leaked tracer; static values collected once are deliberate)."""
        if not self.model.is_traced(owner):
            if self._traced_fresh_by(fn, owner):
                # The owner hands fn to lax control flow itself: fn is traced again on every
                # call of the owner, so what it records there (`nonlocal done = y is x`) is
                # current; only a leaked tracer is a hazard.
                return self._stores_tracer(fn, value)
            return True
        # Inside a traced owner: fn traced by a transform of its own (a lax loop body, a `remat`,
        # `vmap` or `grad` of a closure) has tracers of that inner trace, which ends before the
        # owner's does: storing one in the owner's state leaks it.
        return self.own_trace(fn) and self._stores_tracer(fn, value)

    def own_trace(self, fn: Function) -> bool:
        """Whether fn is traced by a transform or lax control flow of its own (not only called from
        a traced function, whose trace it shares)."""
        return any(r.kind in ("decorator", "transform", "control-flow", "driver")
                   for r in self.model.traced.reasons.get(fn, ()))

    def into_outer_trace(self, fn: Function, node: cst.CSTNode, target: str) -> bool:
        """The write stores into the state of a traced function that encloses fn's own trace."""
        owner = self._state_of(fn, node, target)[1]
        return isinstance(owner, Function) and owner is not fn and self.model.is_traced(owner) and self.own_trace(fn)

    def eager(self, fn: Function) -> bool:
        """fn is traced on a route of the module (a transform, lax control flow, a call from
        traced code), not only by a framework's convention or another module."""
        return any(r.kind not in ("framework", "external", "assumed") for r in self.model.traced.reasons.get(fn, ()))

    def _traced_fresh_by(self, fn: Function, owner: Function) -> bool:
        """Whether every reason fn is traced is lax control flow (or a library driver) called
        by the owner itself, with no caching transform in between."""
        reasons = self.model.traced.reasons.get(fn, ())
        return bool(reasons) and all(
            r.kind in ("control-flow", "driver") and self.model.function_of(r.node) is owner for r in reasons)

    def _nonlocal_owner(self, fn: Function, name: str) -> Function | None:
        s: Scope | None = fn.parent
        while s is not None:
            if isinstance(s, Function) and name in s.bindings and name not in s.nonlocals:
                return s
            s = s.parent
        return None

    def _is_import(self, fn: Function, name: cst.Name) -> bool:
        found = self.model.lookup(name.value, fn)
        return found is not None and all(b.kind == "import" for b in found[1])

    def _is_container(self, fn: Function, receiver: cst.BaseExpression) -> bool:
        """Whether receiver is bound only to list/dict/set/collections objects."""
        m = self.model
        if isinstance(receiver, cst.Name):
            found = m.lookup(receiver.value, fn)
            if found is None:
                return False
            owner, bindings = found
            if isinstance(owner, Function) and len(bindings) == 1 and bindings[0].kind == "param" and \
                    not m.is_traced(owner):
                return self._passed_containers(owner, receiver.value, objects=False) is True
            values = [b.value for b in bindings if b.kind in ("assign", "annassign")]
            return bool(values) and len(values) == len(bindings) and all(_container(m, v, owner) for v in values)
        if (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
                and fn.cls is not None and fn.params and receiver.value.value == fn.params[0]):
            values = list(_self_attribute_values(m, fn.cls, receiver.attr.value))
            return bool(values) and all(_container(m, v, s) for v, s in values)
        return False


def _first_attribute(expr: cst.BaseExpression, base: str) -> str | None:
    """`b` for `a.b[c].d` with base `a`."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        inner = expr.value
        if isinstance(expr, cst.Attribute) and isinstance(inner, cst.Name) and inner.value == base:
            return expr.attr.value
        expr = inner
    return None


# A name that counts traces or compilations (`compiled_times`, `n_traces`, `trace_count`, `jit_calls`).
_TRACE_WORDS = re.compile(r"^(re)?(trace[sd]?|tracings?|compil\w*)$|^jit(s|ted)?$")
# A docstring that says the code runs while tracing on purpose ("for use inside jax functions",
# "called at trace time", "counts compilations").
_TRACE_TIME_DOC = re.compile(
    r"(inside|within|under|in)\s+(a\s+|the\s+)?(jax|jit|jitted|traced|transformed)\b|trace[- ]time|compile[- ]time|"
    r"while tracing|when traced|(count|number)\s+(of\s+)?(re)?(trac|compil)", re.IGNORECASE)


# A name that counts calls (`calls`, `n_calls`, `self.steps`, `num_updates`, `n_evals`).
_CALL_WORDS = frozenset({"call", "calls", "ncalls", "step", "steps", "iteration", "iterations", "iter", "iters",
                         "update", "updates", "eval", "evals", "evaluation", "evaluations", "invocations"})


def _per_call_name(name: str) -> str | None:
    last = name.rsplit(".", 1)[-1]
    if any(w in _CALL_WORDS for w in _words(last)):
        return f"its name, `{last}`, says it counts calls"
    return None


def _words(name: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)]


def _per_trace_marker(fn: Function, name: str, reasons) -> str | None:
    """What says the state counts traces on purpose: its name, or the writing function's docstring
    (weaker evidence than the reads: consulted where no read shows per-call use)."""
    last = name.rsplit(".", 1)[-1]
    if any(_TRACE_WORDS.match(w) for w in _words(last)):
        return f"its name, `{last}`, says it counts traces or compilations"
    doc = _docstring(fn)
    # (A helper's docstring: a jitted function's own says nothing about the state it writes.)
    if doc is not None and _TRACE_TIME_DOC.search(doc) and all(r.kind in ("called", "passed") for r in reasons):
        return f"`{fn.display_name}` is documented to run while tracing (\"{_TRACE_TIME_DOC.search(doc).group(0)}\")"
    return None


def _docstring(fn: Function) -> str | None:
    body = fn.node.body if isinstance(fn.node, cst.FunctionDef) else None
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return None
    first = body.body[0]
    if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr):
        value = first.body[0].value
        if isinstance(value, cst.SimpleString):
            return value.evaluated_value if isinstance(value.evaluated_value, str) else None
        if isinstance(value, cst.ConcatenatedString):
            v = value.evaluated_value
            return v if isinstance(v, str) else None
    return None


def _in_test(model: SemanticModel, read: StateRead) -> bool:
    fn = model.function_of(read.node)
    while fn is not None:
        if _is_test(fn):
            return True
        fn = next(fn.enclosing_functions(), None)
    return False


def _is_test(fn: Function) -> bool:
    """A pytest-style test: counting traces from its closure is what such tests are for."""
    return fn.name.startswith("test") or (fn.cls is not None and fn.cls.name.startswith("Test"))


def _is_self(owner: Function, name: str, bindings) -> bool:
    return (owner.cls is not None and bool(owner.params) and owner.params[0] == name
            and all(b.kind == "param" for b in bindings) and not _is_static_method(owner))


def _is_static_method(fn: Function) -> bool:
    node = fn.node
    return isinstance(node, cst.FunctionDef) and any(
        isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators
    )


def _is_memo(target: cst.BaseExpression) -> bool:
    """`self._cache[key]`, `_MEMO[k]`: a deliberate trace-time memo table, not a side effect
    the program depends on."""
    while isinstance(target, (cst.Attribute, cst.Subscript, cst.Name)):
        name = target.attr.value if isinstance(target, cst.Attribute) else (
            target.value if isinstance(target, cst.Name) else None)
        if name is not None and ("cache" in name.lower() or "memo" in name.lower()):
            return True
        if isinstance(target, cst.Name):
            return False
        target = target.value
    return False


def _flat_targets(target: cst.BaseExpression):
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _flat_targets(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _flat_targets(target.value)
    else:
        yield target


def _base_name(expr: cst.BaseExpression) -> cst.Name | None:
    """`a` for `a.b[c].d`; None when the chain starts with a call or a literal."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _container(model: SemanticModel, value: cst.BaseExpression | None, scope: Scope) -> bool:
    if isinstance(value, (cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp)):
        return True
    if isinstance(value, cst.Call):
        qn = model.qn(value.func, scope)
        if qn in _CONTAINER_CALLS:
            return True
        if qn in ("dataclasses.field", "flax.struct.field", "equinox.field"):
            for a in value.args:
                if a.keyword is not None and a.keyword.value == "default_factory":
                    return model.qn(a.value, scope) in _CONTAINER_CALLS
    return False


def _namespace(model: SemanticModel, value: cst.BaseExpression | None, scope: Scope) -> bool:
    """An instance of a class of this module or a `types.SimpleNamespace`."""
    if not isinstance(value, cst.Call):
        return False
    if model.qn(value.func, scope) == "types.SimpleNamespace":
        return True
    if isinstance(value.func, cst.Name):
        found = model.lookup(value.func.value, scope)
        return found is not None and all(b.kind == "class" for b in found[1])
    return False


def _self_attribute_values(model: SemanticModel, cls: ClassInfo, attr: str):
    """Values assigned to `self.<attr>` in the class's methods, and class-level `attr = ...`."""
    for b in cls.bindings.get(attr, []):
        if b.kind in ("assign", "annassign"):
            yield b.value, cls
    for bindings in cls.bindings.values():
        for b in bindings:
            method = b.function
            if b.kind != "def" or method is None or not method.params:
                continue
            me = method.params[0]
            for node in walk(method.node.body):
                if isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                    for t in targets:
                        if (isinstance(t, cst.Attribute) and t.attr.value == attr and isinstance(t.value, cst.Name)
                                and t.value.value == me):
                            yield node.value, method

# Transforms whose function's positional arguments are all tracers (primals), on every call.
_PRIMALS = frozenset({"jax.jvp", "jax.linearize", "jax.vjp"})


def _binding_probe(fn: Function, name: str) -> cst.BaseExpression | None:
    """What a closure's read of fn's `name` holds: the Name a reaching binding binds (a parameter's
    name node, or the value of a single assignment)."""
    bindings = fn.bindings.get(name, [])
    if len(bindings) != 1:
        return None
    b = bindings[0]
    if b.kind == "param":
        node = b.node
        return node.name if isinstance(node, cst.Param) else None
    if b.kind in ("assign", "annassign") and b.index is None:
        return b.value
    return None


# NNX state classes other than Modules: their instances are graph nodes whose state the nnx
# transforms (`nnx.jit`, `nnx.scan`...) carry in and out of the trace.
_NNX_STATE_BASES = frozenset({
    "flax.nnx.Variable", "flax.nnx.Param", "flax.nnx.BatchStat", "flax.nnx.Cache", "flax.nnx.Intermediate",
    "flax.nnx.VariableState", "flax.nnx.Object", "flax.nnx.Pytree", "flax.nnx.Optimizer",
})
# Paired operations: a push undone by a pop, an increment by a decrement, a store restored.
_PUSHES = frozenset({"append", "appendleft", "extend", "extendleft", "insert", "add", "push", "setdefault",
                     "__enter__"})
_POPS = frozenset({"pop", "popleft", "popitem", "remove", "discard", "__exit__"})


def _key(model: SemanticModel, node: cst.CSTNode) -> str:
    return " ".join(model.module.code_for_node(node).split())


def _write_key(model: SemanticModel, node: cst.CSTNode) -> set[str]:
    """The objects (as written) a reported write changes: `a.b` for `a.b.append(x)`, `d[k]`
    for `d[k] = v`, `n` for `n += 1`."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        return {_key(model, node.func.value)}
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.Del)):
        targets = [node.target]
    else:
        return {_key(model, node)}
    keys = set()
    for t in targets:
        keys.update(_key(model, el) for el in _flat_targets(t))
    return keys


def _balanced_keys(model: SemanticModel, fn: Function) -> set[str]:
    """Objects fn changes and changes back itself (trace-time bookkeeping scoped by a context
    manager, a try/finally or a call bracket): a push and a pop, `+= 1` and `-= 1`, an `add`
    and a `remove`, an item store and its `del`, a store restored from a saved value or in a
    `finally:` clause."""
    m = model
    pushed: set[str] = set()
    popped: set[str] = set()
    stores: dict[str, int] = {}
    restored: set[str] = set()
    saved: dict[str, set[str]] = {}  # `old = X` / `old, X = X, new`: X -> {"old"}
    in_finally: set[int] = set()
    nodes = list(own_nodes(fn))
    for node in nodes:
        if isinstance(node, cst.Try) and node.finalbody is not None:
            in_finally.update(id(n) for n in walk(node.finalbody))
    for node in nodes:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in _PUSHES:
                pushed.add(_key(m, node.func.value))
            elif method in _POPS:
                popped.add(_key(m, node.func.value))
        elif isinstance(node, cst.AugAssign):
            k = _key(m, node.target)
            if isinstance(node.operator, cst.AddAssign):
                pushed.add(k)
            elif isinstance(node.operator, cst.SubtractAssign):
                popped.add(k)
        elif isinstance(node, cst.Del):
            for t in _flat_targets(node.target):
                if isinstance(t, cst.Subscript):
                    popped.add(_key(m, t))
        elif isinstance(node, cst.Assign):
            pairs = []
            for tgt in node.targets:
                t = tgt.target
                if (isinstance(t, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List))
                        and len(t.elements) == len(node.value.elements)):
                    pairs.extend((a.value, b.value) for a, b in zip(t.elements, node.value.elements))
                else:
                    pairs.extend((el, node.value) for el in _flat_targets(t))
            for t, v in pairs:
                k = _key(m, t)
                if isinstance(t, cst.Name):
                    saved.setdefault(_key(m, v), set()).add(t.value)
                stores[k] = stores.get(k, 0) + 1
                if isinstance(t, cst.Subscript):
                    pushed.add(k)  # undone by `del d[k]`
                if id(node) in in_finally or (isinstance(v, cst.Name) and v.value in saved.get(k, ())):
                    restored.add(k)
    return (pushed & popped) | {k for k in restored if stores.get(k, 0) >= 2}


def _reads(model: SemanticModel, value: cst.BaseExpression | None, target: cst.BaseExpression) -> bool:
    """Whether value reads what target names (`self.n = self.n + 1`, `d[k] = d[k] + [x]`)."""
    if value is None:
        return False
    want = _key(model, target)

    def same_kind(n: cst.CSTNode) -> bool:
        if isinstance(target, cst.Name):
            return isinstance(n, cst.Name) and n.value == target.value
        if isinstance(target, cst.Attribute):
            return isinstance(n, cst.Attribute) and n.attr.value == target.attr.value
        return isinstance(n, type(target))

    return any(same_kind(n) and _key(model, n) == want for n in walk(value))


RULE = SideEffectInTracedCode
