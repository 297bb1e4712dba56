"""Traced regions: which function bodies run under tracing, and why.

Seeds are decorators (`@jax.jit`, `@partial(jax.jit, ...)`), transform calls
anywhere in the module (`f_jit = jax.jit(f)`, `self.apply = jax.jit(self._apply)`)
and lax control flow (`fori_loop`, `scan`, `cond`, ... trace their function
arguments whether or not anything is jitted). From the seeds, tracing spreads
along the module's call graph: a function called, or handed as an argument,
from traced code is traced too. Host callbacks (`pure_callback`, ...) stop it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Protocol

import libcst as cst

from jaxfuse_lint.core.external_map import CALL_PATTERNS_PREFIX, COMPILED_MARKER
from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model.premises import LineOf, MessagePart
from jaxfuse_lint.model.api import CONTROL_FLOW, TRANSFORMS, is_callback
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.scopes import Function as _Function
from jaxfuse_lint.model.routes import (DISPATCHER_CLASSES, DISPATCHERS, FORWARDED_ATTRIBUTES, FRAMEWORK_BODIES, ROUTES,
                                       WRAPPED_BODY_PHRASE, route)
from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.flow import Flow
    from jaxfuse_lint.model.scopes import CallSite, Function, Scope


class TracingView(ModelView, Protocol):
    """What the traced analysis reads of the model besides its structure and names."""

    # Library mode: (module name, `assume-traced` patterns), set by the engine (model/assumed.py).
    assume_traced: tuple[str, tuple[str, ...]] | None

    @property
    def flow(self) -> "Flow":
        """Flow-sensitive facts (model/flow.py): which def a module-level name holds at the end."""


@dataclass(eq=False)
class TraceReason:
    kind: str  # decorator | transform | control-flow | driver | entry | called | passed | external | assumed
    #            | framework (a Module body or `hk.transform`ed function: traced by default)
    transform: str  # canonical name of the transform or lax function, or the caller's name
    node: cst.CSTNode  # where it happens (a decorator, a call)
    caller: "Function | None" = None
    static_argnums: frozenset[int] = frozenset()
    static_argnames: frozenset[str] = frozenset()
    # For a bound method handed over as `self.m`, argnums count from the first non-self parameter.
    bound_method: bool = False
    description: str = ""
    # entry: why the caller is traced (the first reason it got), to explain the chain
    caller_reason: "TraceReason | None" = None
    # external: how the other module traces it (transform/control-flow/called/passed) and
    # whether its positional parameters are known to be tracers there
    via: str = ""
    params_traced: bool = False
    # entry: how many leading arguments of the call the entry point keeps (None: unknown)
    arg_offset: int | None = None
    # external: the kinds ("T" tracer, "U" unknown) of the positional arguments another
    # module's staged code passes (`state.apply_fn(params, batch)` -> ("T",))
    arg_kinds: tuple[str, ...] = ()
    # called: the partial the callee was bound with (`g = partial(f, n); g(x)`)
    partial: cst.Call | None = None
    # external: the other module's route ends in a compiled program (not only eager transforms)
    compiled: bool = False
    # transform: the function's own name is rebound to the transform (`f = jax.jit(f)`): the
    # name and the assigned expression as written; framework: ("", the wrapper as written)
    rebound: tuple[str, str] | None = None
    # external: the calls another module runs it through, as argument patterns ("2", "1+cutoff",
    # "*" for unknown; core/external_map.py), judged against the signature (model/evidence.py)
    calls: tuple[str, ...] = ()
    # called: the call constructs an instance (`Potential(a, b)`) and fn is its `__init__` or a hook
    # the construction runs (`__post_init__`, equinox's `__check_init__`)
    constructs: bool = False

    def describe(self, line_of) -> str:
        """A phrase for messages: 'passed to `jax.jit` on line 30'."""
        if self.kind in ("external", "assumed") or (self.kind == "framework" and not isinstance(self.node, cst.Call)):
            return self.description
        line = line_of(self.node)
        short = as_written(self.node, self.transform, same_name=True)
        if self.kind == "decorator":
            return f"decorated with `{short}` on line {line}"
        if self.kind == "transform" and self.rebound is not None:
            name, value = self.rebound
            return f"`{name}` is rebound to `{value}` on line {line}"
        if self.kind == "transform":
            # `net.apply` / `model.apply`: say what was passed when it is not fn itself
            via = f" as {self.description}" if self.description else ""
            return f"passed to `{short}` on line {line}{via}"
        if self.kind == "framework":  # `hk.transform(forward)`, named as written
            return f"passed to `{self.rebound[1] if self.rebound else short}` on line {line}: {self.description}"
        if self.kind in ("control-flow", "driver"):
            via = f" as {self.description}" if self.description else ""
            return f"the function traced by `{short}` on line {line}{via}"
        if self.kind == "entry":
            return f"{self.description} in traced `{self.transform}` on line {line}"
        if self.kind == "called" and self.constructs:
            return f"run by the construction on line {line} in traced `{self.transform}`"
        if self.kind == "called":
            return f"called from traced `{self.transform}` on line {line}"
        return f"passed as an argument in traced `{self.transform}` on line {line}"


def reason_parts(reason: "TraceReason | None") -> tuple[MessagePart, ...]:
    """Why a function is traced, as message parts ("passed to `jax.jit` on line 30")."""
    if reason is None:
        return ("traced",)
    if reason.kind in ("external", "assumed") or (reason.kind == "framework" and not isinstance(reason.node, cst.Call)):
        return (reason.description,)
    text = reason.describe(lambda n: "\x00")
    before, _, after = text.partition("\x00")
    parts: tuple[MessagePart, ...] = (before, LineOf(reason.node), after)
    if reason.kind == "entry" and reason.caller_reason is not None and reason.caller is not None:
        # The chain: how the code that calls the entry point is itself traced.
        parts += (f"; `{reason.caller.display_name}` is ", *reason_parts(reason.caller_reason))
    return parts


@dataclass
class TracedRegions:
    reasons: dict["Function", list[TraceReason]] = field(default_factory=dict)
    # Pallas kernel bodies: traced, but compiled by Pallas (Mosaic/Triton), not fused by XLA.
    kernels: set["Function"] = field(default_factory=set)

    def __contains__(self, fn: "Function") -> bool:
        return fn in self.reasons

    def add(self, fn: "Function", reason: TraceReason) -> bool:
        """Record a reason; True when fn was not traced before."""
        lst = self.reasons.setdefault(fn, [])
        new = not lst
        lst.append(reason)
        return new


def _literal_ints(expr: cst.BaseExpression | None) -> frozenset[int]:
    if expr is None:
        return frozenset()
    if isinstance(expr, cst.Integer):
        return frozenset({int(expr.value, 0)})
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        out = set()
        for el in expr.elements:
            if isinstance(el.value, cst.Integer):
                out.add(int(el.value.value, 0))
            elif isinstance(el.value, cst.UnaryOperation) and isinstance(el.value.operator, cst.Minus) and isinstance(el.value.expression, cst.Integer):
                out.add(-int(el.value.expression.value, 0))
        return frozenset(out)
    return frozenset()


def _literal_strs(expr: cst.BaseExpression | None) -> frozenset[str]:
    if expr is None:
        return frozenset()
    if isinstance(expr, cst.SimpleString):
        return frozenset({expr.evaluated_value}) if isinstance(expr.evaluated_value, str) else frozenset()
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return frozenset(
            el.value.evaluated_value for el in expr.elements
            if isinstance(el.value, cst.SimpleString) and isinstance(el.value.evaluated_value, str)
        )
    return frozenset()


# APIs whose function arguments become Pallas kernels.
KERNEL_APIS = ("jax.experimental.pallas", "jax._src.pallas")


def _param_for_arg(fn: "Function", call: cst.Call, arg: cst.Arg, bound: bool) -> str | None:
    if arg.keyword is not None:
        return arg.keyword.value if arg.keyword.value in fn.params else None
    if arg.star:
        return None
    params = fn.params
    if (bound or fn.cls is not None) and params and params[0] in ("self", "cls") and not _unbound_call(fn, call):
        params = params[1:]
    index = 0
    for a in call.args:
        if a is arg:
            break
        if a.keyword is None and not a.star:
            index += 1
    return params[index] if index < len(params) else None


def _unbound_call(fn: "Function", call: cst.Call) -> bool:
    """`Cls.method(obj, x)`: the instance is passed explicitly (every other call of a method,
    `obj.method(x)`, `obj(x)`, `self.layer(x)`, binds it)."""
    func = call.func
    if fn.is_classmethod:
        return False  # `Cls.make(x)`: the class is bound to `cls`
    return (fn.cls is not None and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
            and func.value.value == fn.cls.name)


def keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a.value
    return None


def positional(call: cst.Call, index: int) -> cst.BaseExpression | None:
    i = 0
    for a in call.args:
        if a.keyword is not None or a.star:
            if a.star:
                return None
            continue
        if i == index:
            return a.value
        i += 1
    return None


def _statics(call: cst.Call | None) -> tuple[frozenset[int], frozenset[str]]:
    if call is None:
        return frozenset(), frozenset()
    # `pmap`'s `static_broadcasted_argnums` are static arguments like jit's `static_argnums`.
    nums = _literal_ints(keyword(call, "static_argnums")) | _literal_ints(keyword(call, "static_broadcasted_argnums"))
    return nums, _literal_strs(keyword(call, "static_argnames"))


def external_reason(fn: "Function", why: str) -> TraceReason:
    """The reason for a function another module traces. `why` is the phrase, optionally followed
    by project/summary.py's "params-traced [static=..] [names=..]" line."""
    phrase, _, marker = why.partition("\n")
    reason = TraceReason("external", "", fn.node, description=phrase)
    words = marker.split()
    if COMPILED_MARKER in words:
        reason.compiled = True
        words.remove(COMPILED_MARKER)
    for w in [w for w in words if w.startswith(CALL_PATTERNS_PREFIX)]:
        reason.calls = tuple(p for p in w[len(CALL_PATTERNS_PREFIX):].split("|") if p)
        words.remove(w)
    if words and words[0] == "params-traced":
        reason.params_traced = True
        for w in words[1:]:
            key, _, value = w.partition("=")
            if key == "static":
                reason.static_argnums = frozenset(int(v) for v in value.split(",") if v.lstrip("-").isdigit())
            elif key == "names":
                reason.static_argnames = frozenset(v for v in value.split(",") if v)
    elif words and words[0].startswith("args="):
        reason.arg_kinds = tuple(words[0][5:].split(","))
    return reason


class TracedAnalysis:
    def __init__(self, model: "TracingView") -> None:
        self.model = model
        self.regions = TracedRegions()
        self.instances = instances(model)
        # (id of an expression, id of a function it runs) -> how, for entry points that do not
        # pass their arguments straight through (`model.apply`, `net.apply`, `state.apply_fn`)
        self.entry_via: dict[tuple[int, int], tuple[str, int | None]] = {}
        # (id of a name, id of a function) -> the partial it is bound to (`g = partial(f, 2)`)
        self.partial_via: dict[tuple[int, int], cst.Call] = {}
        self._direct_callers: dict[int, list[CallSite]] | None = None

    def direct_call_sites(self, fn: "Function") -> list[CallSite]:
        """The module's calls that call `fn` itself (`callables(..., direct_only=True)` of their
        callee names it), in the module's order. Every call is resolved once, on the first
        question: asking each call about each parameter of each function was quadratic."""
        if self._direct_callers is None:
            callers: dict[int, list[CallSite]] = {}
            for site in self.model.index.calls:
                for f in {id(f) for f, _ in self.callables(site.call.func, site.scope, direct_only=True)}:
                    callers.setdefault(f, []).append(site)
            self._direct_callers = callers
        return self._direct_callers.get(id(fn), [])

    def transform_of(self, expr: cst.BaseExpression, scope: "Scope") -> tuple[str, cst.Call | None] | None:
        """If `expr` is a transform (`jax.jit`, `jax.jit(...)` used as a decorator factory,
        `partial(jax.jit, ...)`), its canonical name and the call holding its options."""
        m = self.model
        qn = m.qn(expr, scope)
        if qn in TRANSFORMS:
            return qn, None
        if isinstance(expr, cst.Call):
            fqn = m.qn(expr.func, scope)
            if fqn in TRANSFORMS:
                # `@jax.jit(static_argnames=...)` or `@jax.custom_vjp(nondiff_argnums=...)`
                if positional(expr, 0) is None:
                    return fqn, expr
                return None
            if fqn == "functools.partial":
                inner = positional(expr, 0)
                if inner is not None:
                    iqn = m.qn(inner, scope)
                    if iqn in TRANSFORMS:
                        return iqn, expr
                    wrapped = self._transform_wrapper(inner, scope)
                    if wrapped is not None:
                        return wrapped, expr
        if isinstance(expr, cst.Name):
            wrapped = self._transform_wrapper(expr, scope)
            if wrapped is not None:
                return wrapped, None
            # `pmap_for_my_devices = partial(jax.pmap, devices=...)`, then `pmap_for_my_devices(f)`:
            # the name holds the transform (its one binding, an assignment of one).
            found = m.lookup(expr.value, scope)
            if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" \
                    and found[1][0].index is None and isinstance(found[1][0].value, (cst.Call, cst.Attribute)):
                bound = found[1][0].value
                t = self.transform_of(bound, found[0])
                if t is not None and (t[1] is None or t[1] is bound):
                    return t
        return None

    def _transform_wrapper(self, expr: cst.BaseExpression, scope: "Scope") -> str | None:
        """A def of the module that returns a transform of its first parameter (`def maybe_jit(fn,
        *args, **kwargs): ... return jit(fn, *args, **kwargs)`), or on other paths that parameter
        unchanged: calling it applies that transform. Its canonical name, else None."""
        if not isinstance(expr, cst.Name):
            return None
        fn = self.model.function_named(expr.value, scope)
        if fn is None or not isinstance(fn.node, cst.FunctionDef) or not fn.params or not fn.returns \
                or fn.cls is not None or fn.params[0] in fn.star_params:
            return None
        first = fn.params[0]
        found: set[str] = set()
        for r in fn.returns:
            if isinstance(r, cst.Name) and r.value == first:
                continue  # the function unchanged (`if disabled: return fn`)
            if not isinstance(r, cst.Call) or not isinstance(positional(r, 0), cst.Name) \
                    or positional(r, 0).value != first:
                return None
            qn = self.model.qn(r.func, fn)
            if qn not in TRANSFORMS:
                return None
            found.add(qn)
        return found.pop() if len(found) == 1 else None

    def run(self, external: dict[str, str] | None = None) -> TracedRegions:
        """Seed, then spread. `external` maps top-level function (or `Class.method`) names
        that other modules of the project trace to a phrase saying why."""
        m = self.model
        work: list[Function] = []

        def seed(fn: "Function | None", reason: TraceReason) -> None:
            if fn is not None and self.regions.add(fn, reason):
                work.append(fn)

        if external:
            for fn in m.index.functions:
                top_level = fn.parent is m.index.scope or (fn.cls is not None and fn.cls.parent is m.index.scope)
                why = external.get(fn.display_name)
                if why and top_level and self._left_by_module(fn):
                    seed(fn, external_reason(fn, why))

        # Library mode: functions the configuration says users trace.
        assume = m.assume_traced
        if assume is not None:
            from jaxfuse_lint.model.assumed import ASSUMED, assumed_functions

            for fn in assumed_functions(m, *assume):
                seed(fn, TraceReason("assumed", "", fn.node, description=ASSUMED))

        # Decorators.
        for fn in m.index.functions:
            node = fn.node
            if not isinstance(node, cst.FunctionDef):
                continue
            for dec in node.decorators:
                t = self.transform_of(dec.decorator, fn.parent)
                if t is not None:
                    nums, names = _statics(t[1])
                    seed(fn, TraceReason("decorator", t[0], dec, static_argnums=nums, static_argnames=names))
                elif isinstance(dec.decorator, cst.Attribute) and dec.decorator.attr.value in (
                    "defjvp", "defvjp", "defjvps", "def_fwd", "def_bwd",
                ):
                    seed(fn, TraceReason("decorator", f"custom_jvp.{dec.decorator.attr.value}", dec))

        # Framework bodies: a Module's `__call__` (and the like), a `hk.transform`ed function.
        self._seed_framework_bodies(seed)

        # Transform calls and lax control flow anywhere in the module.
        for site in m.index.calls:
            call = site.call
            t = self.transform_of(call.func, site.scope)
            if t is not None and (t[1] is None or t[1] is not call):
                target = positional(call, 0) or keyword(call, "fun") or keyword(call, "f")
                nums, names = _statics(t[1])
                n2, s2 = _statics(call)
                for fn, bound in self.callables(target, site.scope):
                    statics = nums | n2
                    via = self.entry_via.get((id(target), id(fn))) if target is not None else None
                    if via is not None and statics:
                        # `jax.jit(net.apply, static_argnums=2)`: count past the entry point's own
                        # leading arguments (`params, rng`); unknown offset: nothing is static.
                        offset = via[1]
                        statics = frozenset(i - offset for i in statics if offset is not None and i >= offset)
                    seed(fn, TraceReason("transform", t[0], call, static_argnums=statics,
                                         static_argnames=names | s2, bound_method=bound,
                                         description=f"`{_code(m, target)}`" if via is not None
                                         or self._is_partial(target, site.scope) else "",
                                         rebound=self._rebound(call, fn)))
                continue
            qn = m.qn(call.func, site.scope)
            if qn in CONTROL_FLOW:
                r = route(qn)
                # lax's convention (every positional parameter is a tracer) or a library driver
                # whose table entry says which parameters are.
                kind = "control-flow" if r is None or r.traced_params is None else "driver"
                for arg in self.control_flow_functions(call, qn):
                    # `lax.scan(partial(step, flag=True), ...)`: the message shows the partial.
                    shown = f"`{_code(m, arg)}`" if self._is_partial(arg, site.scope) else ""
                    for fn, _ in self.callables(arg, site.scope):
                        seed(fn, TraceReason(kind, qn, call, description=shown))

        # Spread along the call graph.
        while work:
            fn = work.pop()
            for site in fn.calls:
                call = site.call
                qn = m.qn(call.func, fn)
                if is_callback(qn):
                    continue
                callees = list(self.callables(call.func, fn, direct_only=True))
                for callee, bound in callees:
                    via = self.entry_via.get((id(call.func), id(callee)))
                    if via is not None:
                        # `model.apply(variables, x)`, `state.apply_fn(...)`: the entry point takes
                        # `offset` leading arguments for itself; the rest go to the callee.
                        first = self.regions.reasons[fn][0]
                        seed(callee, TraceReason("entry", fn.display_name, call, caller=fn, description=via[0],
                                                 caller_reason=first, arg_offset=via[1]))
                    else:
                        seed(callee, TraceReason("called", fn.display_name, call, caller=fn, bound_method=bound,
                                                 partial=self.partial_via.get((id(call.func), id(callee)))))
                # `Potential(a, b)`: constructing an instance runs its `__init__` and the hooks the
                # construction calls, with the new object as `self`.
                for hook in self.constructed(call, fn):
                    seed(hook, TraceReason("called", fn.display_name, call, caller=fn, bound_method=True,
                                           constructs=True))
                # A function handed to another call from traced code runs at trace time when
                # the receiver calls it: JAX's higher-order functions (`tree_map`, `vectorize`)
                # and builtins do; one of the module's functions does when it calls that parameter.
                for a in call.args:
                    # An object handed over (`isinstance(self, C)`, `tree_leaves(model)`) is not
                    # called by it: only `map`/`filter` and the module's own functions that call
                    # their parameter run an instance's `__call__`.
                    is_object = self._is_object(a.value, fn)
                    for arg_fn, _ in self.callables(a.value, fn, direct_only=True):
                        if arg_fn is fn:
                            continue
                        if is_object and qn is not None and qn not in _CALLING_BUILTINS:
                            continue
                        if self._receiver_calls(call, qn, callees, a):
                            seed(arg_fn, TraceReason("passed", fn.display_name, call, caller=fn))
            # Lambdas written inside traced code are traced where they are called; treat them
            # as traced (the body is part of the traced function's text).
            for nested in fn.nested:
                if nested.is_lambda and not self._is_callback_arg(nested, fn):
                    seed(nested, TraceReason("passed", fn.display_name, nested.node, caller=fn))
        self._mark_kernels()
        return self.regions

    def _left_by_module(self, fn: "Function") -> bool:
        """Whether fn is what its name holds once the module has run (what another module imports):
        of two top-level defs of one name (a notebook cell redefining a function), the last."""
        m = self.model
        if fn.parent is not m.index.scope:
            return True
        exit_bindings = m.flow.exit_bindings(fn.name, m.index.scope)
        if not exit_bindings:
            return True
        return any(b.function is fn for b in exit_bindings) or not any(b.function is not None for b in exit_bindings)

    def _is_partial(self, expr: cst.BaseExpression | None, scope: "Scope") -> bool:
        return isinstance(expr, cst.Call) and self.model.qn(expr.func, scope) in _PARTIALS

    def _seed_framework_bodies(self, seed) -> None:
        m = self.model
        inst = self.instances
        for ci in inst.classes().values():
            base = inst.framework_base(ci)
            bodies = FRAMEWORK_BODIES.get(base) if base is not None else None
            if bodies is None:
                continue
            for name, bindings in ci.bindings.items():
                fn = next((b.function for b in reversed(bindings) if b.function is not None), None)
                if fn is None or fn.is_lambda or not isinstance(fn.node, cst.FunctionDef) or fn.cls is not ci:
                    continue
                dunder = name.startswith("__") and name.endswith("__")
                chosen = name in bodies.methods or (bodies.all_methods and not dunder) or any(
                    m.qn(d.decorator, ci) in bodies.decorators for d in fn.node.decorators)
                if chosen and not self._static_like(fn):
                    seed(fn, TraceReason("framework", base, fn.node, description=bodies.phrase))
        for site in m.index.calls:
            qn = m.qn(site.call.func, site.scope)
            r = route(qn)
            if r is None or r.kind != "wrapper" or r.relative:
                continue
            for fn, _ in self.callables(positional(site.call, 0) or keyword(site.call, "f"), site.scope):
                seed(fn, TraceReason("framework", qn, site.call, description=WRAPPED_BODY_PHRASE,
                                     rebound=("", _code(m, site.call.func))))

    def _static_like(self, fn: "Function") -> bool:
        """A `@staticmethod`/`@classmethod`/`@property` or any other decorated method that is not a
        framework decorator: not a body the framework runs as such."""
        for d in fn.node.decorators:
            qn = self.model.qn(d.decorator, fn.parent or self.model.index.scope)
            if qn is None or not qn.startswith(("flax.", "haiku.", "equinox.")):
                return True
        return False

    def _rebound(self, call: cst.Call, fn: "Function") -> tuple[str, str] | None:
        """`f = jax.jit(f)`: the name and the assigned expression, when `call` is (inside) the
        value of an assignment that rebinds fn's own name to a transform of it."""
        m = self.model
        node: cst.CSTNode | None = call
        while isinstance(node, (cst.Call, cst.Arg)):
            parent = m.parent(node)
            if isinstance(parent, cst.Assign):
                break
            node = parent
        parent = m.parent(node) if node is not None else None
        if not isinstance(parent, cst.Assign) or parent.value is not node or len(parent.targets) != 1:
            return None
        target = parent.targets[0].target
        if not isinstance(target, cst.Name) or target.value != fn.name:
            return None
        scope = m.scope_of(target)
        for b in (m.lookup(target.value, scope) or (None, []))[1]:
            if b.node is parent and m.rewraps(b, scope):
                return target.value, _code(m, parent.value)
        return None

    def _is_object(self, expr: cst.BaseExpression, scope: "Scope") -> bool:
        """An instance (`model`, `self`, `self.layer`, `Block(3)`) rather than a function."""
        if isinstance(expr, cst.Name):
            return self.model.function_named(expr.value, scope) is None and \
                self.instances.instance_class(expr, scope) is not None
        if isinstance(expr, cst.Call):
            return self.instances.class_named(expr.func, scope) is not None
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls") and \
                    self.model.method_of(scope, expr.attr.value) is not None:
                return False
            return self.instances.instance_class(expr, scope) is not None
        return False

    def _receiver_calls(self, call: cst.Call, qn: str | None, callees, arg: cst.Arg) -> bool:
        if qn is not None:
            if qn.startswith("jax.") or qn.startswith("builtins.") or qn.startswith("functools."):
                return not qn.startswith(KERNEL_APIS)
            return False
        for callee, bound in callees:
            param = _param_for_arg(callee, call, arg, bound)
            if param is None:
                continue
            for read in callee.reads:
                if read.name.value == param:
                    parent = self.model.parent(read.name)
                    if isinstance(parent, cst.Call) and parent.func is read.name:
                        return True
        return False

    def _mark_kernels(self) -> None:
        """Pallas kernels (and what they call) are traced, but they are not XLA programs:
        fusion rules leave them alone, trace-hazard rules do not."""
        m = self.model
        work = []
        for site in m.index.calls:
            qn = m.qn(site.call.func, site.scope)
            if qn is None or not qn.startswith(KERNEL_APIS):
                continue
            for a in site.call.args:
                for fn, _ in self.callables(a.value, site.scope):
                    if fn not in self.regions.kernels:
                        self.regions.kernels.add(fn)
                        work.append(fn)
        while work:
            fn = work.pop()
            for site in fn.calls:
                for callee, _ in self.callables(site.call.func, fn, direct_only=True):
                    if callee not in self.regions.kernels:
                        self.regions.kernels.add(callee)
                        work.append(callee)
            for nested in fn.nested:
                if nested not in self.regions.kernels:
                    self.regions.kernels.add(nested)
                    work.append(nested)

    def _is_callback_arg(self, lam: "Function", scope: "Function") -> bool:
        parent = self.model.parent(lam.node)
        if isinstance(parent, cst.Arg):
            call = self.model.parent(parent)
            if isinstance(call, cst.Call) and is_callback(self.model.qn(call.func, scope)):
                return True
        return False

    def control_flow_functions(self, call: cst.Call, qn: str) -> Iterator[cst.BaseExpression]:
        for index, kw in CONTROL_FLOW[qn]:
            arg = positional(call, index)
            if arg is None:
                arg = keyword(call, kw)
            if arg is None:
                continue
            if isinstance(arg, (cst.List, cst.Tuple)):  # lax.switch branches
                for el in arg.elements:
                    yield el.value
            else:
                yield arg

    def callables(self, expr: cst.BaseExpression | None, scope: "Scope", direct_only: bool = False,
                  depth: int = 0) -> Iterator[tuple["Function", bool]]:
        """The module's functions an expression stands for: `f`, `lambda`, `self.m`,
        `partial(f, ...)`, `jax.vmap(f)`, `model` / `Block(...)` / `self.layer` (their
        `__call__`), `obj.m`, `model.apply` (a linen Module's `__call__`), `net.apply` (the
        function `hk.transform` wrapped), `state.apply_fn` (what was stored there). The bool
        says "bound method" (`self.m`)."""
        if expr is None or depth > 8:
            return
        m = self.model
        inst = self.instances
        if isinstance(expr, cst.Lambda):
            fn = m.index.function_of.get(expr)
            if fn is not None:
                yield fn, False
            return
        if isinstance(expr, cst.Name):
            # The def(s) this read reaches (a notebook's later cell or a second nested def of the
            # same name does not take over an earlier `jax.jit(f)`); else the name's unique def.
            fns = m.functions_at(expr, scope)
            if fns is None:
                fn = m.function_named(expr.value, scope)
                fns = [fn] if fn is not None else []
            if fns:
                for fn in self.overloads(fns):
                    yield fn, False
                return
            # `kernel = functools.partial(body, ...)` or `kernel = body_a if c else body_b` (in
            # branches), then `pallas_call(kernel)` / `jax.jit(kernel)`: any of them may be traced.
            found = m.lookup(expr.value, scope)
            if found is not None and len(found[1]) <= 4:
                for b in found[1]:
                    if not direct_only and b.kind == "param" and isinstance(found[0], _Function) \
                            and len(found[1]) == 1:
                        # `def D(f, x): return jax.jvp(f, ...)` called `D(inner, x)`: the functions the
                        # module's calls pass for the parameter.
                        for arg, where in self.instances.arguments_for(found[0], expr.value) or ():
                            yield from self.callables(arg, where, depth=depth + 1)
                        continue
                    if b.kind == "assign" and isinstance(b.value, cst.Call) and b.value is not expr \
                            and m.qn(b.value.func, found[0]) not in TRANSFORMS | _PARTIALS | _CALLED_THROUGH:
                        # `step, init = self.setup_run(...)`, `init_kernel, sample_kernel = hmc(...)`:
                        # the function a call of one of the module's factories returns (at the
                        # name's position of the tuple it returns).
                        yield from self._returned_callables(b.value, found[0], b.index, depth)
                    if b.kind != "assign" or b.index is not None or b.value is None or b.value is expr:
                        continue
                    value = b.value
                    partial = None
                    if isinstance(value, cst.Call) and m.qn(value.func, found[0]) in TRANSFORMS:
                        # `grad_loss = jax.grad(loss)`, `ck = jax.checkpoint(f)`: calling the name
                        # runs the wrapped function (`jax.jit(f)` included: `f` is what runs).
                        # Calling `ScanBlock = nn.scan(Block, ...)` makes a Module; calling that runs.
                        if inst.class_named(expr, scope) is not None:
                            continue
                        yield from self.callables(positional(value, 0) or keyword(value, "fun"), found[0],
                                                  depth=depth + 1)
                        continue
                    if isinstance(value, cst.Call) and m.qn(value.func, found[0]) in _PARTIALS:
                        partial, value = value, positional(value, 0)
                    if isinstance(value, cst.Name) and value.value != expr.value:
                        target = m.function_named(value.value, found[0])
                        if target is not None:
                            if partial is not None:
                                self.partial_via[(id(expr), id(target))] = partial
                            yield target, False
                    elif partial is None and isinstance(value, cst.Call) and m.qn(value.func, found[0]) in _CALLED_THROUGH:
                        # `g = jax.value_and_grad(loss)`, `batched = jax.vmap(f)`, then `g(w)`: f runs
                        # where g is called (in a jitted step, inside that step's program).
                        inner = positional(value, 0)
                        if isinstance(inner, cst.Name) and inner.value != expr.value:
                            target = m.function_named(inner.value, found[0])
                            if target is not None:
                                yield target, False
            # `model(x)`, `jax.vmap(self)`: the instance's `__call__`.
            ci = inst.instance_class(expr, scope)
            if ci is not None:
                call = inst.method(ci, "__call__")
                if call is not None:
                    yield call, True
                return
            if not direct_only:
                # `nn.remat(Block)`, `nn.scan(Block, ...)`: lifted transforms of a Module class.
                ci = inst.class_named(expr, scope)
                if ci is not None:
                    call = inst.method(ci, "__call__")
                    if call is not None:
                        yield call, True
            return
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
                fn = m.method_of(scope, expr.attr.value)
                if fn is not None:
                    yield fn, True
                    return
            yield from self._attribute_callables(expr, scope, depth)
            return
        if isinstance(expr, cst.Call):
            # `Block(features)(x)`: the new instance's `__call__`.
            ci = inst.class_named(expr.func, scope)
            if ci is not None:
                call = inst.method(ci, "__call__")
                if call is not None:
                    yield call, True
                return
            if m.qn(expr.func, scope) in _PARTIALS:
                # `partial(f, ...)(x)`, `tree_map(partial(f, n=2), tree)`: f runs.
                yield from self.callables(positional(expr, 0), scope, direct_only, depth + 1)
                return
        if direct_only:
            return
        if isinstance(expr, cst.Call):
            fqn = m.qn(expr.func, scope)
            if fqn in TRANSFORMS:
                yield from self.callables(positional(expr, 0), scope, depth=depth + 1)

    def constructed(self, call: cst.Call, scope: "Scope") -> list["Function"]:
        """The module's methods a construction `C(...)` (or `cls(...)` in a classmethod) runs: C's
        `__init__`, `__post_init__` where C is a dataclass (an equinox Module, a flax struct, a
        `@dataclass`), equinox's `__check_init__` (equinox runs it after `__init__`)."""
        ci = self.instances.constructed_class(call, scope)
        if ci is None:
            return []
        out = []
        init = self.instances.method(ci, "__init__")
        if init is not None:
            out.append(init)
        base = self.instances.framework_base(ci)
        if base == "equinox.Module" or self.instances.record_kind(ci) == "struct" or self.instances.is_dataclass(ci):
            post = self.instances.method(ci, "__post_init__")
            if post is not None:
                out.append(post)
        if base == "equinox.Module":
            check = self.instances.method(ci, "__check_init__")
            if check is not None:
                out.append(check)
        return out

    def overloads(self, fns: list["Function"]) -> list["Function"]:
        """fns with the other overloads of a multiple-dispatch function among them: a call of the name
        runs whichever overload the arguments' types select (routes.DISPATCHERS)."""
        out = list(fns)
        for fn in fns:
            for other in self._overloads_of(fn):
                if other not in out:
                    out.append(other)
        return out

    def _overloads_of(self, fn: "Function") -> list["Function"]:
        memo = self.__dict__.setdefault("_overloads", {})
        found = memo.get(id(fn))
        if found is not None:
            return found
        m = self.model
        found = memo[id(fn)] = []
        kind = self._dispatch_kind(fn)
        if kind is None or fn.parent is None:
            return found
        base = kind if isinstance(kind, _Function) else fn
        if kind == "dispatch":
            # Overloads by name: the defs of this name in the same scope, each under a dispatcher.
            for b in fn.parent.bindings.get(fn.name, []):
                other = b.function
                if other is not None and other is not fn and self._dispatch_kind(other) == "dispatch":
                    found.append(other)
        # `functools.singledispatch`: the base and every `@base.register`ed function.
        if base is not fn:
            found.append(base)
        for other in m.index.functions:
            if other is not fn and other not in found and self._dispatch_kind(other) is base:
                found.append(other)
        return found

    def _dispatch_kind(self, fn: "Function") -> "str | Function | None":
        """"dispatch" for an overload of a dispatcher decorator (`@plum.dispatch`, `@dispatch(int)`
        with `dispatch = plum.Dispatcher()`), the base function of a `@base.register`ed overload
        (`functools.singledispatch`), the function itself for such a base; None otherwise."""
        m = self.model
        if not isinstance(fn.node, cst.FunctionDef):
            return None
        scope = fn.parent or m.index.scope
        for d in fn.node.decorators:
            e = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            qn = m.qn(e, scope)
            if qn == "functools.singledispatch":
                return fn
            if qn in DISPATCHERS:
                return "dispatch"
            if isinstance(e, cst.Name):
                found = m.lookup(e.value, scope)
                if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" \
                        and isinstance(found[1][0].value, cst.Call) \
                        and m.qn(found[1][0].value.func, found[0]) in DISPATCHER_CLASSES:
                    return "dispatch"
            if isinstance(e, cst.Attribute) and e.attr.value == "register" and isinstance(e.value, cst.Name):
                base = m.function_named(e.value.value, scope)
                if base is not None and base is not fn and self._dispatch_kind(base) is base:
                    return base
        return None

    def _returned_callables(self, call: cst.Call, scope: "Scope", index: int | None,
                            depth: int) -> Iterator[tuple["Function", bool]]:
        """The module's functions a call of one of its factories returns: a nested def or lambda
        (`return step`), or the element at `index` of a returned tuple (`return init_fn, update_fn`)."""
        if depth > 4 or self.instances.class_named(call.func, scope) is not None:
            return
        for factory, _ in self.callables(call.func, scope, direct_only=True, depth=depth + 1):
            for ret in factory.returns:
                if index is not None:
                    if not isinstance(ret, (cst.Tuple, cst.List)) or index >= len(ret.elements) or any(
                            isinstance(el, cst.StarredElement) for el in ret.elements):
                        continue
                    ret = ret.elements[index].value
                if isinstance(ret, (cst.Name, cst.Lambda)):
                    for fn, _ in self.callables(ret, factory, direct_only=True, depth=depth + 1):
                        if fn is not factory:
                            yield fn, False

    def _attribute_callables(self, expr: cst.Attribute, scope: "Scope", depth: int) -> Iterator[tuple["Function", bool]]:
        m = self.model
        inst = self.instances
        attr = expr.attr.value
        # `Block.method` named on the class.
        ci = inst.class_named(expr.value, scope)
        if ci is not None:
            fn = inst.method(ci, attr)
            if fn is not None:
                yield fn, False
            return
        ci = inst.instance_class(expr.value, scope)
        if ci is not None:
            fn = inst.method(ci, attr)
            if fn is not None:
                yield fn, True
                return
            entries = inst.entry_attributes(ci)
            if attr in entries:
                target = self._entry_method(expr, ci, scope)
                if target is not None:
                    self.entry_via[(id(expr), id(target))] = (f"`{_code(m, expr)}` is called", entries[attr])
                    yield target, True
                return
            # `self.layer(x)`: an attribute holding an instance of one of the module's classes.
            held = inst.instance_class(expr, scope)
            if held is not None:
                fn = inst.method(held, "__call__")
                if fn is not None:
                    yield fn, True
                return
            if attr not in FORWARDED_ATTRIBUTES:
                # `self.grad_fn = jax.grad(self.loss)`, `self.rhs = rhs` (a constructor argument):
                # calling the attribute runs the function stored there.
                yield from self._held_callables(ci, attr, depth)
                return
            # `self.apply_fn(...)` set from a constructor argument: see below.
        # `opt.update` where `opt = optax.GradientTransformation(init_fn, update_fn)`, or `opt = momo()`
        # whose every return builds one: the function in the slot of that name.
        fields = self._fields(expr.value, scope, attr, depth)
        if fields:
            yield from fields
            return
        # `net.apply` where `net = hk.transform(forward)`: the wrapped function.
        wrapped, offset = self._wrapped(expr.value, scope, attr, depth)
        if wrapped:
            for fn in wrapped:
                self.entry_via[(id(expr), id(fn))] = (f"`{_code(m, expr)}` is called", offset)
                yield fn, False
            return
        # `state.apply_fn(...)`: whatever the module stores under that name.
        if attr in FORWARDED_ATTRIBUTES:
            for value in self._forwarded_values(attr):
                for fn, bound in self.callables(value, m.scope_of(value), depth=depth + 1):
                    inner = self.entry_via.get((id(value), id(fn)), ("", 0))
                    self.entry_via[(id(expr), id(fn))] = (f"`{_code(m, expr)}` is called", inner[1])
                    yield fn, bound

    def _held_callables(self, ci, attr: str, depth: int) -> Iterator[tuple["Function", bool]]:
        """The module's functions an instance attribute holds, from what the class stores there:
        a function, a lambda, a bound method, a transform of one (`jax.grad(self.loss)`), or a
        constructor argument the module's calls pass (`RK(rhs=lorenz)`)."""
        m = self.model
        for value in self.instances.attribute_values(ci).get(attr, []):
            if isinstance(value, cst.Annotation):
                continue
            where = m.scope_of(value)
            if isinstance(value, cst.Name):
                found = m.lookup(value.value, where)
                if found is not None and len(found[1]) == 1 and found[1][0].kind == "param" \
                        and isinstance(found[0], _Function):
                    for arg, arg_scope in self.instances.arguments_for(found[0], value.value) or ():
                        yield from self.callables(arg, arg_scope, depth=depth + 1)
                    continue
            yield from self.callables(value, where, depth=depth + 1)

    def _entry_method(self, expr: cst.Attribute, ci, scope: "Scope") -> "Function | None":
        """The method a framework entry point runs: `method=` when the call names one."""
        call = self.model.parent(expr)
        if isinstance(call, cst.Call) and call.func is expr:
            chosen = keyword(call, "method")
            if isinstance(chosen, cst.SimpleString) and isinstance(chosen.evaluated_value, str):
                return self.instances.method(ci, chosen.evaluated_value)
            if isinstance(chosen, cst.Attribute):
                return self.instances.method(ci, chosen.attr.value)
            if chosen is not None:
                return None
        return self.instances.method(ci, "__call__")

    def _wrapped(self, expr: cst.BaseExpression, scope: "Scope", attr: str,
                 depth: int) -> tuple[list["Function"], int | None]:
        """The functions a wrapper route (`hk.transform(f)`) holds, when `attr` runs them, and
        how many leading arguments `attr` takes for itself."""
        m = self.model
        value: cst.BaseExpression | None = expr
        owner = scope
        adjust = 0
        for _ in range(6):
            if isinstance(value, cst.Name):
                found = m.lookup(value.value, owner)
                if found is None or len(found[1]) != 1 or found[1][0].kind not in ("assign", "annassign") \
                        or found[1][0].index is not None:
                    return [], None
                owner, value = found[0], found[1][0].value
                continue
            if not isinstance(value, cst.Call):
                return [], None
            r = route(m.qn(value.func, owner))
            offsets = dict(r.entry_attributes) if r is not None and r.kind == "wrapper" else {}
            if attr not in offsets:
                return [], None
            if r.relative:  # `hk.without_apply_rng(hk.transform(f))`
                adjust += offsets[attr]
                value = positional(value, 0)
                continue
            return [fn for fn, _ in self.callables(positional(value, 0), owner, depth=depth + 1)], offsets[attr] + adjust
        return [], None

    def _fields(self, expr: cst.BaseExpression, scope: "Scope", attr: str, depth: int) -> list[tuple["Function", bool]]:
        """The functions attribute `attr` of the record a driver with fields builds
        (`optax.GradientTransformation(init_fn, update_fn).update` runs update_fn), through names
        bound once and the module's factory functions every return of which builds such a record."""
        m = self.model
        value: cst.BaseExpression | None = expr
        owner = scope
        for _ in range(6):
            if isinstance(value, cst.Name):
                found = m.lookup(value.value, owner)
                if found is None or len(found[1]) != 1 or found[1][0].kind not in ("assign", "annassign") \
                        or found[1][0].index is not None or found[1][0].value is None:
                    return []
                owner, value = found[0], found[1][0].value
                continue
            break
        if not isinstance(value, cst.Call) or depth > 8:
            return []
        r = route(m.qn(value.func, owner))
        if r is not None and r.fields:
            slot = next(((pos, kw) for pos, kw in r.slots if kw == attr), None)
            if slot is None or any(a.star for a in value.args):
                return []
            arg = keyword(value, attr) or (positional(value, slot[0]) if slot[0] is not None else None)
            return list(self.callables(arg, owner, depth=depth + 1))
        if r is not None or not isinstance(value.func, cst.Name):
            return []
        factory = m.function_named(value.func.value, owner)
        if factory is None or factory.is_lambda or not factory.returns:
            return []
        out: list[tuple["Function", bool]] = []
        for ret in factory.returns:
            found = self._fields(ret, factory, attr, depth + 1)
            if not found:
                return []  # a return that builds something else: not known
            out.extend(f for f in found if f not in out)
        return out

    def _forwarded_values(self, attr: str) -> list[cst.BaseExpression]:
        """Values the module hands on under the name `attr`: `create(apply_fn=model.apply)`,
        `obj.apply_fn = f`."""
        cache = self.__dict__.setdefault("_forwarded", {})
        if attr in cache:
            return cache[attr]
        out: list[cst.BaseExpression] = []
        for site in self.model.index.calls:
            for a in site.call.args:
                if a.keyword is not None and a.keyword.value == attr:
                    out.append(a.value)
        cache[attr] = out
        return out


# Builtins that call the objects they are given.
_CALLING_BUILTINS = frozenset({"builtins.map", "builtins.filter"})

# Callables that bind some arguments and call the function later.
_PARTIALS = frozenset(n for n, r in ROUTES.items() if r.kind == "partial")
# Transforms whose result, called, runs the function it was given (in the caller's trace).
_CALLED_THROUGH = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev", "jax.hessian",
                             "jax.vmap", "jax.jit", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint"})


def _code(model: "TracingView", node: cst.CSTNode) -> str:
    text = " ".join(model.module.code_for_node(node).split())
    return text if len(text) <= 40 else text[:39] + "…"
