"""The evidence behind a finding in traced code: is the code traced on a route that runs?

`model.traced` says which functions some route traces; a default finding needs that route
*shown* by the code, link by link. Each trace reason is judged here, once, for every rule:

* the route runs: a transform whose result is called (`jax.jit(f)(x)`, `g = jax.jit(f)` then
  `g(x)`, a decorated `f` called) with a call that matches f's signature (a stale script or test
  asset calling it with the wrong number of arguments is no route); a call from traced code that
  matches the callee's signature and sits in code that runs under the trace; a function that is
  never called in the module is an entry point (its users call it), and so is one that escapes
  (passed, returned, stored). Another module's route carries the calls it saw (project/), judged
  against the signature here.
* the code runs under the trace: not after a guard that refuses or leaves a trace
  (`check_not_tracing(x)`, `if isinstance(x, jax.core.Tracer): return x`, `assert not
  is_tracer(x)`: what follows is host code), not inside a test about tracers, not in the branch
  of `if p is None:` where no traced route passes None for `p` (every traced call gives it);
* the error is not demonstrated on purpose: where every route that runs the function is a call
  inside `try:` ... `except ConcretizationTypeError` (or `TypeError`, `Exception`, `pytest.raises`,
  `assertRaises`), a tutorial shows the error; not worth reporting.

A route is SHOWN, ASSUMED (an assumed link: the finding goes to the preview tier, saying what is
assumed), CAUGHT (a demonstration of the error) or DEAD (it does not run). A function's route
is the best of its reasons'; a chain (called from traced code) is as good as its weakest link.
Rules ask `finding(fn, node, raises=...)`: None (not reported), or the Route whose `preview`
is None (default output) or the text for `Violation.preview`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import TRANSFORMS
from jaxfuse_lint.model.premises import Premise, assumed, proven
from jaxfuse_lint.model.route_calls import SAME_SIGNATURE, decorator_func, route_calls, transform_calls
from jaxfuse_lint.model.routes import ROUTES
from jaxfuse_lint.model.runtime_facts import runs_traced_from_run
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.traced import keyword, positional, reason_parts
from jaxfuse_lint.model.values import Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.staging import StagingView
    from jaxfuse_lint.model.traced import TraceReason

# An annotation that admits None (or says nothing): `Optional[X]`, `X | None`, `Any`, `object`.
_ADMITS_NONE = re.compile(r"\b(None|Optional|Any|object)\b")

SHOWN, ASSUMED, CAUGHT, DEAD = "shown", "assumed", "caught", "dead"
_UNKNOWN = object()  # _route_arguments: a route whose calls are not known
_RANK = {SHOWN: 3, ASSUMED: 2, CAUGHT: 1, DEAD: 0}

_PARTIALS = frozenset(n for n, r in ROUTES.items() if r.kind == "partial")

_PYTHON_SCALARS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.str"})

# What catches the errors a trace raises on a Python conversion (ConcretizationTypeError and its
# kin are TypeErrors).
_CATCHES = frozenset({
    "ConcretizationTypeError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "TracerArrayConversionError", "NonConcreteBooleanIndexError", "TypeError", "Exception", "BaseException",
})
_RAISES_CONTEXTS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assert_raises", "assert_raises_regex"})

# Tests and handlers that mean "this code knows about tracers" (a guard's branch is the author's).
_TRACER_WORDS = re.compile(r"[Tt]racer|[Cc]oncrete|Concretization")
# Callees that refuse to run under a trace by their name (`check_not_tracing(x)`, `assert_not_traced`,
# `_ensure_not_jitted`, `raise_if_traced`).
_REFUSES = re.compile(r"not_?(being_?)?(trac|jit|stag|transform)|no_?tracers?\b|raise_?if_?(trac|jit)", re.IGNORECASE)
# Calls that are true exactly on a tracer (`is_tracer(x)`, `is_jax_tracer(x)`, `core.is_traced(x)`).
_IS_TRACER = re.compile(r"^_?(is_)?(jax_)?(tracer|traced|tracing)$", re.IGNORECASE)
_IS_CONCRETE = re.compile(r"^_?(is_)?concrete$|^_?(is_)?not_(jax_)?(tracer|traced)$", re.IGNORECASE)


@dataclass(frozen=True)
class Route:
    status: str
    why: str = ""  # ASSUMED: what is assumed, in a few words
    # SHOWN: the trace reason whose route the code shows (the premise cites it).
    reason: "TraceReason | None" = field(default=None, compare=False)

    @property
    def preview(self) -> str | None:
        """None where every link is shown, else what `Violation.preview` says."""
        return None if self.status == SHOWN else (self.why or "the route into the trace is assumed")


_SHOWN = Route(SHOWN)


def _citing(route: Route, reason: "TraceReason") -> Route:
    return replace(route, reason=reason) if route.status == SHOWN and route.reason is None else route


def _weakest(a: Route, b: Route) -> Route:
    return a if _RANK[a.status] <= _RANK[b.status] else b


def _best(routes) -> Route:
    best = None
    for r in routes:
        if best is None or _RANK[r.status] > _RANK[best.status]:
            best = r
        if best.status == SHOWN:
            break
    return best if best is not None else Route(DEAD)


class Evidence:
    """The model's route evidence (built once per model: `evidence(model)`)."""

    def __init__(self, model: "StagingView") -> None:
        self.model = model
        self._routes: dict[tuple[int, bool], Route] = {}
        self._active: set[tuple[int, bool]] = set()
        self._refusing: dict[int, bool] = {}
        self._none: dict[tuple[int, str], bool] = {}
        self._flags: dict[tuple[int, str], set | None] = {}
        self._cycles = 0  # cycles met while judging routes (their results are not final)

    # -- what rules ask -----------------------------------------------------------------------------
    def finding(self, fn: "Function", node: cst.CSTNode, *, raises: bool) -> Route | None:
        """The evidence for a finding at `node` in traced `fn`: None when it is not to be reported
        (the code does not run under a trace, or only a demonstration of the error runs it);
        else the route (its `preview`: None, or what is assumed). `raises`: the hazard is an
        error raised while tracing (a concretization error), which `try`/`except` can catch."""
        if not self.runs_traced(node, fn, raises=raises):
            return None
        route = self.route(fn, raises=raises)
        if route.status in (CAUGHT, DEAD):
            return None
        if route.status == SHOWN:
            skipped = self._skipped_by_default(node, fn)
            if skipped is not None:
                return Route(ASSUMED, skipped)
        return route

    def _skipped_by_default(self, node: cst.CSTNode, fn: "Function") -> str | None:
        """`if do_postprocess:` (its body) where the parameter's default skips the branch and no
        traced call here passes it (the route's calls are not known, or leave it out): the branch
        runs under the trace only for callers the code does not show. What is assumed, or None."""
        m = self.model
        child: cst.CSTNode = node
        for a in m.ancestors(node):
            if a is fn.node:
                break
            if isinstance(a, cst.If) and child is a.body:
                why = self._default_skips(a.test, fn)
                if why is not None:
                    return why
            child = a
        return None

    def _default_skips(self, test: cst.BaseExpression, fn: "Function") -> str | None:
        negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
        if negated:
            test = test.expression
        compared = None
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
                test.comparisons[0].operator, (cst.Equal, cst.NotEqual)) and _literal(test.comparisons[0].comparator):
            compared, name = test.comparisons[0], test.left
        else:
            name = test
        if not isinstance(name, cst.Name):
            return None
        found = self.model.bindings_at(name, fn)
        p = fn.param_nodes.get(name.value)
        if found is None or found[0] is not fn or not found[1] or any(b.kind != "param" for b in found[1]) \
                or p is None or p.default is None or not _literal(p.default):
            return None
        default = _literal(p.default)[0]
        taken = bool(default) if compared is None else (
            (default == _literal(compared.comparator)[0]) == isinstance(compared.operator, cst.Equal))
        if taken != negated:
            return None  # the default takes the branch
        for arg, _, is_default in self._route_arguments(fn, name.value):
            if arg is not _UNKNOWN and not is_default:
                return None  # a call passes it: `_dead_branch` and the value analysis decide
        if self._passed_by_another_module(fn, name.value):
            return None
        shown = _code(self.model, p.default)
        return (f"assumes a caller passes `{name.value}` a value that takes this branch (its default, `{shown}`, "
                "skips it, and no traced call here passes one)")

    def premise(self, fn: "Function", node: cst.CSTNode, *, raises: bool) -> Premise | None:
        """The premise `runs-traced(fn)` for a finding at `node`: PROVEN by the route the code shows
        (the trace reason it cites), ASSUMED with what is assumed; None where the finding is not to
        be reported at all (see `finding`)."""
        route = self.finding(fn, node, raises=raises)
        if route is None:
            return None
        subject = f"`{fn.display_name}`"
        if route.status == SHOWN:
            reason = route.reason or self.model.trace_reason(fn)
            return proven("runs-traced", subject, reason.kind if reason is not None else "traced", *reason_parts(reason))
        ran = runs_traced_from_run(self.model, fn, subject)  # a recorded run traced it (`check --profile`)
        if ran is not None:
            return ran
        return assumed("runs-traced", subject, route.why or "assumes the route into the trace runs")

    def route(self, fn: "Function", *, raises: bool = True) -> Route:
        """The best route into a trace among fn's reasons."""
        key = (id(fn), raises)
        found = self._routes.get(key)
        if found is not None:
            return found
        if key in self._active:
            self._cycles += 1
            return Route(DEAD)  # a cycle of calls: decided by the reasons outside it
        self._active.add(key)
        cycles = self._cycles
        try:
            # The routes that stage fn first: the premise cites the route the hazard happens on (a jitted
            # step calling `opt.update`, not the optax record that holds the function).
            st = staging(self.model)
            reasons = sorted(self.model.traced.reasons.get(fn, ()), key=lambda r: not st.reason_is_staged(r, True))
            result = _best(_citing(self.reason_route(fn, r, raises), r) for r in reasons)
        finally:
            self._active.discard(key)
        if self._cycles == cycles or not self._active or result.status == SHOWN:
            self._routes[key] = result  # (a result that leaned on a cycle in progress may still change)
        return result

    def reason_route(self, fn: "Function", r: "TraceReason", raises: bool) -> Route:
        if r.kind in ("decorator", "transform"):
            return self._transform_route(fn, r, raises)
        if r.kind in ("called", "passed", "entry"):
            if r.caller is None:
                return _SHOWN
            local = _SHOWN
            if r.node is not None and not self.runs_traced(r.node, r.caller, raises=raises):
                return Route(DEAD)
            if r.kind == "called" and isinstance(r.node, cst.Call) and self._dispatched_elsewhere(fn, r.node, r.caller):
                return Route(DEAD)
            if r.kind == "called" and isinstance(r.node, cst.Call):
                hook = r.constructs and fn.name != "__init__"  # `__check_init__` takes no arguments of the call
                if r.partial is None and not hook and \
                        self.matches(fn, r.node, r.bound_method or _bound_call(fn, r.node)) is False:
                    local = Route(ASSUMED, f"assumes `{_code(self.model, r.node)}` in `{r.caller.display_name}` "
                                           f"runs `{fn.display_name}`, though it does not match its signature")
                elif raises and self._caught(r.node):
                    local = Route(CAUGHT)
            return _weakest(local, self.route(r.caller, raises=raises))
        if r.kind == "external" and getattr(r, "calls", ()):
            if any(self._pattern_matches(fn, p) is not False for p in r.calls):
                return _SHOWN
            return Route(ASSUMED, f"assumes another module runs `{fn.display_name}` ({r.description.splitlines()[0]}), "
                                  "though its calls there do not match its signature")
        return _SHOWN

    def _dispatched_elsewhere(self, fn: "Function", call: cst.Call, caller: "Function") -> bool:
        """An overload of a multiple-dispatch function (routes.DISPATCHERS) that this call cannot
        select: it passes a tracer where the overload's annotation is a Python scalar type
        (`def f(x: int)`): a tracer is no `int`, so the dispatcher runs another overload."""
        if len(self.model.traced_analysis().overloads([fn])) < 2:
            return False
        values = staged_values(self.model)
        scope = fn.parent or self.model.index.scope
        for name, p in fn.param_nodes.items():
            if p.annotation is None or self.model.qn(p.annotation.annotation, scope) not in _PYTHON_SCALARS:
                continue
            arg = self.model.argument_for(call, fn, name)
            if arg is not None and values.kind(arg, caller) is Kind.TRACED:
                return True
        return False

    # -- does this code run under the trace? ----------------------------------------------------------
    def runs_traced(self, node: cst.CSTNode, fn: "Function", *, raises: bool = True) -> bool:
        """False for code of traced fn that never runs on tracers: under a test about tracers or
        concreteness, after a guard that refuses or leaves a trace, inside a `try` that catches
        the concretization error (`raises`), or in the `if p is None:` branch where no traced
        route passes None for `p`."""
        m = self.model
        child: cst.CSTNode = node
        for a in m.ancestors(node):
            if a is fn.node:
                break
            if isinstance(a, (cst.If, cst.While)) and _TRACER_WORDS.search(m.module.code_for_node(a.test)) and not (
                    isinstance(a, cst.If) and child is a.body and self._never_a_tracer(a.test, fn)):
                return False
            if raises and isinstance(a, cst.Try) and child is a.body and any(
                    h.type is not None and _TRACER_WORDS.search(m.module.code_for_node(h.type)) for h in a.handlers):
                return False
            if isinstance(a, cst.If) and self._dead_branch(a, child, fn):
                return False
            body = _statements(a)
            if body is not None:
                for s in body:
                    if s is child:
                        break
                    if self._leaves_trace(s, fn):
                        return False
            child = a
        return True

    def _never_a_tracer(self, test: cst.BaseExpression, fn: "Function") -> bool:
        """`if not_jax_tracer(K):` where K is a Python value while fn is traced (a module-level jax
        array): the test holds under the trace too, so its body runs there (numpyro#821: `K < 0`
        in it is a tracer, though K is not)."""
        if _polarity(self.model, test, fn) != "concrete":
            return False
        while isinstance(test, cst.UnaryOperation):
            test = test.expression
        tested = test.args[0].value if isinstance(test, cst.Call) and test.args and not test.args[0].star else None
        return isinstance(tested, cst.Name) and staged_values(self.model).kind(tested, fn) is Kind.STATIC

    def _leaves_trace(self, s: cst.CSTNode, fn: "Function") -> bool:
        """A statement after which fn's code runs only on concrete values: `if is_tracer(x): return`
        (or raise, continue, break), a call that refuses tracers (`check_not_tracing(x)`), an
        `assert` of concreteness."""
        m = self.model
        if isinstance(s, cst.If) and s.orelse is None and _polarity(m, s.test, fn) == "tracer" and _exits(s.body):
            return True
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and self._refuses_call(
                        small.value, fn):
                    return True
                if isinstance(small, cst.Assert) and _polarity(m, small.test, fn) == "concrete":
                    return True
        return False

    def _refuses_call(self, call: cst.Call, scope: "Scope") -> bool:
        """A call that raises on tracers: named so (`check_not_tracing`), or one of the module's
        functions that does (`if isinstance(x, Tracer): raise ...` at its top level)."""
        name = _last_name(call.func)
        if name is not None and _REFUSES.search(name):
            return True
        for callee, _ in self.model.traced_analysis().callables(call.func, scope, direct_only=True):
            if self._refusing_function(callee):
                return True
        return False

    def _refusing_function(self, fn: "Function") -> bool:
        key = id(fn)
        if key in self._refusing:
            return self._refusing[key]
        self._refusing[key] = False  # cycles
        result = False
        # Its own statements, and those of loops, `with` and `try` blocks among them (`for v in
        # values: if isinstance(v, Tracer): raise ...`), not those under another condition.
        todo = list(_statements(fn.node.body) or ()) if isinstance(fn.node, cst.FunctionDef) else []
        while todo and not result:
            s = todo.pop(0)
            if isinstance(s, cst.If):
                result = _polarity(self.model, s.test, fn) == "tracer" and _raises(s.body)
            elif isinstance(s, (cst.For, cst.While, cst.With, cst.Try)):
                todo.extend(_statements(s.body) or ())
            else:
                result = self._leaves_trace(s, fn)
        self._refusing[key] = result
        return result

    # -- branches no traced route takes ------------------------------------------------------------
    def _dead_branch(self, branch: cst.If, child: cst.CSTNode, fn: "Function") -> bool:
        """`if p is None:` (its body) or `if p is not None: ... else:` (its else) where p is a
        parameter of fn that no traced route leaves None; `if not skip_checks:` (its body, also as the
        first operand of `and`) where every traced route passes `skip_checks=True` (and the same for
        `if flag:` with False)."""
        if child is branch.body and self._flag_false_on_routes(branch.test, fn):
            return True
        test = branch.test
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)):
            return False
        comp = test.comparisons[0]
        if not (isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None"):
            return False
        if isinstance(comp.operator, cst.Is):
            when_none = child is branch.body
        elif isinstance(comp.operator, cst.IsNot):
            when_none = branch.orelse is not None and child is branch.orelse
        else:
            return False
        if not when_none:
            return False
        found = self.model.bindings_at(test.left, fn)
        if found is None or found[0] is not fn or not found[1] or any(b.kind != "param" for b in found[1]):
            return False
        return not self.none_on_route(fn, test.left.value)

    def _flag_false_on_routes(self, test: cst.BaseExpression, fn: "Function") -> bool:
        """Whether `test` is False on every traced route: `not p` / `p` (or the first operand of an
        `and`) for a parameter p that every route passes as the literal True / False."""
        while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            test = test.left
        want = True
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, want = test.expression, True  # `not p` is False when p is True
        else:
            want = False  # `p` is False when p is False
        if not isinstance(test, cst.Name):
            return False
        found = self.model.bindings_at(test, fn)
        if found is None or found[0] is not fn or not found[1] or any(b.kind != "param" for b in found[1]):
            return False
        values = self.flag_values_on_route(fn, test.value)
        return values == {want}

    def flag_values_on_route(self, fn: "Function", name: str) -> set | None:
        """The literal True / False values traced routes pass for parameter `name` of fn (its default
        where a route leaves it out); None when some route passes anything else or is unknown."""
        key = (id(fn), name)
        if key in self._flags:
            return self._flags[key]
        self._flags[key] = None  # cycles: unknown
        out: set | None = set()
        for arg, _, _ in self._route_arguments(fn, name):
            if not (isinstance(arg, cst.Name) and arg.value in ("True", "False")):
                out = None
                break
            out.add(arg.value == "True")
        self._flags[key] = out or None
        return self._flags[key]

    def none_on_route(self, fn: "Function", name: str) -> bool:
        """Whether some traced route may leave parameter `name` of fn None (True when unknown)."""
        key = (id(fn), name)
        if key in self._none:
            return self._none[key]
        self._none[key] = True  # cycles: unknown
        result = False
        for arg, scope, default in self._route_arguments(fn, name):
            if arg is _UNKNOWN or arg is None or _none(arg) or (not default and self._may_be_none(arg, scope)):
                result = True
                break
        self._none[key] = result
        return result

    def _route_arguments(self, fn: "Function", name: str):
        """(argument, the caller's scope, whether it is the parameter's default) for parameter `name`
        on every traced call of fn that runs: the expression passed, or the default where the call
        leaves it out (None: there is none). `_UNKNOWN` where a route's calls are not known (an
        entry point, a `*args` call, a route of another kind), and nothing after it."""
        for r in self.model.traced.reasons.get(fn, ()):
            if r.kind == "called" and isinstance(r.node, cst.Call) and r.caller is not None and r.partial is None:
                calls = [(r.node, r.caller)]
            elif r.kind in ("decorator", "transform") and (uses := self._uses(fn, r)):
                calls = [(c, s) for c, s, _ in uses]
            else:
                yield _UNKNOWN, None, False  # an entry point (its callers may pass anything), or unknown calls
                return
            for call, scope in calls:
                if any(a.star for a in call.args):
                    yield _UNKNOWN, None, False
                    return
                if self.matches(fn, call, _bound_call(fn, call) or r.bound_method) is False:
                    continue  # not a route that runs
                if r.kind == "called" and not self.runs_traced(call, r.caller, raises=False):
                    continue  # the call sits in a branch of its caller that no traced route takes
                arg = self.model.argument_for(call, fn, name)
                if arg is not None:
                    yield arg, scope, False
                else:
                    p = fn.param_nodes.get(name)
                    yield (p.default if p is not None else None), scope, True

    def _may_be_none(self, e: cst.BaseExpression, scope: "Scope", depth: int = 0) -> bool:
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        if depth > 4 or _none(e):
            return True
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                          cst.FormattedString, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp,
                          cst.SetComp, cst.GeneratorExp, cst.Lambda, cst.BinaryOperation, cst.Comparison)):
            return False
        if staged_values(m).kind(e, scope) is Kind.TRACED:
            return False  # a tracer is never None
        if isinstance(e, cst.Subscript) and isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape":
            return False  # `x.shape[0]`: an int
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope) or ""
            return not qn.startswith(("jax.numpy.", "jax.random.", "jax.lax.", "numpy.", "jax.nn."))
        if isinstance(e, cst.Name) and isinstance(scope, Function):
            found = m.bindings_at(e, scope)
            if found is None or not found[1]:
                return True
            owner, bindings = found
            if all(b.kind == "param" for b in bindings) and isinstance(owner, Function):
                p = owner.param_nodes.get(e.value)
                if p is not None and p.annotation is not None and (p.default is None or not _none(p.default)) \
                        and not _ADMITS_NONE.search(m.module.code_for_node(p.annotation.annotation)):
                    return False  # `neighbors: NeighborList`: declared never None
                return self.none_on_route(owner, e.value) if m.is_traced(owner) else True
            return any(b.kind not in ("assign", "annassign") or b.index is not None or b.value is None
                       or self._may_be_none(b.value, owner, depth + 1) for b in bindings)
        return True

    # -- routes through transforms -------------------------------------------------------------------
    def _transform_route(self, fn: "Function", r: "TraceReason", raises: bool) -> Route:
        uses = self._uses(fn, r)
        if not uses or not self._direct(fn, r):
            return _SHOWN  # never called here: an entry point (or its calls are not known)
        matching = [(c, s) for c, s, bound in uses if self.matches(fn, c, bound, self._partial(r)) is not False]
        if not matching:
            call = uses[0][0]
            more = f" and {len(uses) - 1} more" if len(uses) > 1 else ""
            return Route(ASSUMED, f"assumes `{fn.display_name}` is traced, though its calls here "
                                  f"(`{_code(self.model, call)}`{more}) do not match its signature")
        if raises and all(self._caught(c) for c, _ in matching):
            return Route(CAUGHT)
        return _SHOWN

    def _uses(self, fn: "Function", r: "TraceReason") -> list[tuple[cst.Call, "Scope", bool]] | None:
        return route_calls(self.model, fn, r)

    def _direct(self, fn: "Function", r: "TraceReason") -> bool:
        """Whether the transform is given fn itself (its name, `self.m`, a lambda, `partial(f, ...)`,
        through other transforms), so that the calls of what it makes take fn's arguments; not a
        name bound to something else (`g = partial(f, cfg); jax.jit(g)`), whose arguments differ."""
        if r.kind == "decorator":
            return True
        m = self.model
        target = positional(r.node, 0) or keyword(r.node, "fun") or keyword(r.node, "f") if isinstance(
            r.node, cst.Call) else None
        for _ in range(6):
            if isinstance(target, cst.Call) and m.qn(target.func, m.scope_of(target)) in SAME_SIGNATURE | _PARTIALS:
                target = positional(target, 0)
                continue
            break
        if isinstance(target, cst.Lambda):
            return m.index.function_of.get(target) is fn
        if isinstance(target, cst.Name):
            fns = m.functions_at(target, m.scope_of(target))
            if fns is None:
                one = m.function_named(target.value, m.scope_of(target))
                fns = [one] if one is not None else []
            return fn in fns
        if isinstance(target, cst.Attribute):
            return target.attr.value == fn.name
        return False

    def _partial(self, r: "TraceReason") -> cst.Call | None:
        """The `partial(f, ...)` a transform was given f through (`jax.jit(partial(f, n=3))`)."""
        if r.kind != "transform" or not isinstance(r.node, cst.Call):
            return None
        m = self.model
        target = positional(r.node, 0) or keyword(r.node, "fun") or keyword(r.node, "f")
        for _ in range(6):
            if not isinstance(target, cst.Call):
                return None
            qn = m.qn(target.func, m.scope_of(target))
            if qn in _PARTIALS:
                return target
            if qn not in SAME_SIGNATURE:
                return None
            target = positional(target, 0)
        return None

    # -- demonstrations of the error ------------------------------------------------------------------
    def _caught(self, call: cst.CSTNode) -> bool:
        """Whether the call sits in a `try` whose handlers catch the concretization error, or in
        `with pytest.raises(...)` / `self.assertRaises(...)` of it (within its own function)."""
        m = self.model
        child = call
        for a in m.ancestors(call):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(a, cst.Try) and child is a.body and any(_catches(h.type) for h in a.handlers):
                return True
            if isinstance(a, cst.With) and child is a.body and any(
                    isinstance(item.item, cst.Call) and _last_name(item.item.func) in _RAISES_CONTEXTS
                    and (not item.item.args or _catches(item.item.args[0].value)) for item in a.items):
                return True
            child = a
        return False

    # -- signatures -------------------------------------------------------------------------------------
    def matches(self, fn: "Function", call: cst.Call, bound: bool, partial: cst.Call | None = None) -> bool | None:
        """Whether `call` (with `partial`'s arguments first) binds fn's parameters: None when it
        cannot be told (`*args`/`**kwargs` in the call)."""
        args = list(partial.args[1:]) if partial is not None else []
        args += list(call.args)
        if any(a.star for a in args):
            return None
        if bound and _static_method(fn):
            bound = False  # `self.helper(x)` of a @staticmethod passes no instance
        positional_count = sum(1 for a in args if a.keyword is None)
        keywords = [a.keyword.value for a in args if a.keyword is not None]
        return _binds(fn, positional_count, keywords, bound)

    def _passed_by_another_module(self, fn: "Function", name: str) -> bool:
        """Whether a call another module runs fn through may pass parameter `name` (by keyword, by
        position, or a pattern it could not read: `"3+check"`, `"4"`, `"*"`)."""
        params = [p for p in fn.params if p not in fn.star_params]
        if fn.cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        for r in self.model.traced.reasons.get(fn, ()):
            for pattern in getattr(r, "calls", ()) if r.kind == "external" else ():
                count, *keywords = (pattern or "*").split("+")
                if not count.isdigit() or name in keywords or (name in params and params.index(name) < int(count)):
                    return True
        return False

    def _pattern_matches(self, fn: "Function", pattern: str) -> bool | None:
        """A call pattern another module recorded (`"2"`, `"1+cutoff"`, `"*"`)."""
        if pattern == "*" or not pattern:
            return None
        count, *keywords = pattern.split("+")
        if not count.isdigit():
            return None
        return _binds(fn, int(count), keywords, fn.cls is not None)


def call_patterns(calls: list[tuple[cst.Call, "Scope"]]) -> list[str]:
    """The calls as argument patterns another module can check against a signature
    (core/external_map.py's `calls=` word)."""
    from jaxfuse_lint.core.external_map import call_pattern

    out = []
    for call, _ in calls:
        p = call_pattern(sum(1 for a in call.args if a.keyword is None and not a.star),
                         [a.keyword.value for a in call.args if a.keyword is not None], any(a.star for a in call.args))
        if p not in out:
            out.append(p)
    return out


def _binds(fn: "Function", positional_count: int, keywords: list[str], bound: bool) -> bool | None:
    node = fn.node
    params = node.params
    posonly = [p.name.value for p in params.posonly_params]
    regular = [p.name.value for p in params.params]
    kwonly = [p.name.value for p in params.kwonly_params]
    positional_names = posonly + regular
    defaults = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)
                if p.default is not None}
    if bound:
        if not positional_names:
            return None if isinstance(params.star_arg, cst.Param) else False
        positional_names = positional_names[1:]
        posonly = posonly[1:] if posonly else posonly
    has_star = isinstance(params.star_arg, cst.Param)
    has_kwargs = params.star_kwarg is not None
    if positional_count > len(positional_names) and not has_star:
        return False
    filled = set(positional_names[:positional_count])
    for k in keywords:
        if k in filled or k in posonly:
            if k in posonly and has_kwargs:
                continue
            return False
        if k in regular or k in kwonly:
            filled.add(k)
        elif not has_kwargs:
            return False
    required = [n for n in positional_names + kwonly if n not in defaults]
    return all(n in filled for n in required)


def _static_method(fn: "Function") -> bool:
    return fn.cls is not None and isinstance(fn.node, cst.FunctionDef) and any(
        _last_name(decorator_func(d.decorator)) == "staticmethod" for d in fn.node.decorators)


def _bound_call(fn: "Function", call: cst.Call) -> bool:
    """`obj.method(x)` and `self.method(x)` bind the instance; `Cls.method(obj, x)` does not."""
    if fn.cls is None or not fn.params or fn.params[0] not in ("self", "cls"):
        return False
    if fn.is_classmethod:
        return True  # `Cls.make(x)` binds the class
    func = call.func
    if isinstance(func, cst.Attribute):
        return not (isinstance(func.value, cst.Name) and func.value.value == fn.cls.name)
    return True  # `model(x)`: `__call__` of an instance


def _statements(node: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The statements a block holds, in order (None: not a block)."""
    if isinstance(node, (cst.IndentedBlock, cst.SimpleStatementSuite)):
        return list(node.body)
    if isinstance(node, cst.Module):
        return list(node.body)
    return None


def _exits(block: cst.BaseSuite) -> bool:
    body = _statements(block) or []
    if not body:
        return False
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for s in last.body)
    return isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break))


def _raises(block: cst.BaseSuite) -> bool:
    body = _statements(block) or []
    return bool(body) and isinstance(body[-1], cst.SimpleStatementLine) and any(
        isinstance(s, cst.Raise) for s in body[-1].body)


def _polarity(model, test: cst.BaseExpression, scope) -> str | None:
    """"tracer" for a test true exactly on tracers (`isinstance(x, jax.core.Tracer)`,
    `is_jax_tracer(x)`), "concrete" for one true exactly on concrete values (`not
    isinstance(x, Tracer)`, `is_concrete(x)`), else None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _polarity(model, test.expression, scope)
        return {"tracer": "concrete", "concrete": "tracer"}.get(inner or "")
    if not isinstance(test, cst.Call):
        return None
    name = _last_name(test.func)
    if name == "isinstance" and len(test.args) == 2:
        return "tracer" if re.search(r"Tracer\b", model.module.code_for_node(test.args[1].value)) else None
    if name is not None and _IS_TRACER.match(name):
        return "tracer"
    if name is not None and _IS_CONCRETE.match(name):
        return "concrete"
    return None


def _catches(expr: cst.BaseExpression | None) -> bool:
    if expr is None:
        return True  # a bare `except:`
    if isinstance(expr, (cst.Tuple, cst.List)):
        return any(_catches(el.value) for el in expr.elements)
    return _last_name(expr) in _CATCHES


def _last_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def _literal(e: cst.BaseExpression | None) -> tuple | None:
    """(value,) of a literal default or comparand: True, False, None, a string, an int."""
    if isinstance(e, cst.Name) and e.value in ("True", "False", "None"):
        return ({"True": True, "False": False, "None": None}[e.value],)
    if isinstance(e, cst.SimpleString) and isinstance(e.evaluated_value, str):
        return (e.evaluated_value,)
    if isinstance(e, cst.Integer):
        return (int(e.value, 0),)
    return None


def _none(e: cst.BaseExpression) -> bool:
    return isinstance(e, cst.Name) and e.value == "None"


def _code(model, node: cst.CSTNode) -> str:
    text = " ".join(model.module.code_for_node(node).split())
    return text if len(text) <= 40 else text[:39] + "…"


def evidence(model: "StagingView") -> Evidence:
    """The model's Evidence (built once per model, kept with it)."""
    e = model.__dict__.get("_evidence")
    if e is None:
        e = model.__dict__["_evidence"] = Evidence(model)
    return e


__all__ = ["ASSUMED", "CAUGHT", "DEAD", "SHOWN", "Evidence", "Route", "call_patterns", "evidence", "transform_calls"]
