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
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.model.api import CONTROL_FLOW, TRANSFORMS, is_callback

if TYPE_CHECKING:
    from jaxfuse_lint.model.semantic import SemanticModel
    from jaxfuse_lint.model.scopes import Function, Scope


@dataclass(eq=False)
class TraceReason:
    kind: str  # decorator | transform | control-flow | called | passed | external
    transform: str  # canonical name of the transform or lax function, or the caller's name
    node: cst.CSTNode  # where it happens (a decorator, a call)
    caller: "Function | None" = None
    static_argnums: frozenset[int] = frozenset()
    static_argnames: frozenset[str] = frozenset()
    # For a bound method handed over as `self.m`, argnums count from the first non-self parameter.
    bound_method: bool = False
    description: str = ""

    def describe(self, line_of) -> str:
        """A phrase for messages: 'passed to `jax.jit` on line 30'."""
        if self.kind == "external":
            return self.description
        line = line_of(self.node)
        short = self.transform.replace("jax.numpy.", "jnp.").replace("jax.lax.", "lax.")
        if self.kind == "decorator":
            return f"decorated with `{short}` on line {line}"
        if self.kind == "transform":
            return f"passed to `{short}` on line {line}"
        if self.kind == "control-flow":
            return f"the function traced by `{short}` on line {line}"
        if self.kind == "called":
            return f"called from traced `{self.transform}` on line {line}"
        return f"passed as an argument in traced `{self.transform}` on line {line}"


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
    if (bound or fn.cls is not None) and params and params[0] in ("self", "cls") and isinstance(call.func, cst.Attribute):
        params = params[1:]
    index = 0
    for a in call.args:
        if a is arg:
            break
        if a.keyword is None and not a.star:
            index += 1
    return params[index] if index < len(params) else None


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
    return _literal_ints(keyword(call, "static_argnums")), _literal_strs(keyword(call, "static_argnames"))


class TracedAnalysis:
    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self.regions = TracedRegions()

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
        return None

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
                if why and top_level:
                    seed(fn, TraceReason("external", "", fn.node, description=why))

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

        # Transform calls and lax control flow anywhere in the module.
        for site in m.index.calls:
            call = site.call
            t = self.transform_of(call.func, site.scope)
            if t is not None and (t[1] is None or t[1] is not call):
                target = positional(call, 0) or keyword(call, "fun") or keyword(call, "f")
                nums, names = _statics(t[1])
                n2, s2 = _statics(call)
                for fn, bound in self.callables(target, site.scope):
                    seed(fn, TraceReason("transform", t[0], call, static_argnums=nums | n2,
                                         static_argnames=names | s2, bound_method=bound))
                continue
            qn = m.qn(call.func, site.scope)
            if qn in CONTROL_FLOW:
                for arg in self.control_flow_functions(call, qn):
                    for fn, _ in self.callables(arg, site.scope):
                        seed(fn, TraceReason("control-flow", qn, call))

        # Spread along the call graph.
        while work:
            fn = work.pop()
            for site in fn.calls:
                call = site.call
                qn = m.qn(call.func, fn)
                if is_callback(qn):
                    continue
                callees = list(self.callables(call.func, fn, direct_only=True))
                for callee, _ in callees:
                    seed(callee, TraceReason("called", fn.display_name, call, caller=fn))
                # A function handed to another call from traced code runs at trace time when
                # the receiver calls it: JAX's higher-order functions (`tree_map`, `vectorize`)
                # and builtins do; one of the module's functions does when it calls that parameter.
                for a in call.args:
                    for arg_fn, _ in self.callables(a.value, fn, direct_only=True):
                        if arg_fn is fn:
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

    def callables(self, expr: cst.BaseExpression | None, scope: "Scope", direct_only: bool = False) -> Iterator[tuple["Function", bool]]:
        """The module's functions an expression stands for: `f`, `lambda`, `self.m`,
        `partial(f, ...)`, `jax.vmap(f)`. The bool says "bound method" (`self.m`)."""
        if expr is None:
            return
        m = self.model
        if isinstance(expr, cst.Lambda):
            fn = m.index.function_of.get(expr)
            if fn is not None:
                yield fn, False
            return
        if isinstance(expr, cst.Name):
            fn = m.function_named(expr.value, scope)
            if fn is not None:
                yield fn, False
                return
            # `kernel = functools.partial(body, ...)` or `kernel = body_a if c else body_b` (in
            # branches), then `pallas_call(kernel)` / `jax.jit(kernel)`: any of them may be traced.
            found = m.lookup(expr.value, scope)
            if found is not None and len(found[1]) <= 4:
                for b in found[1]:
                    if b.kind != "assign" or b.index is not None or b.value is None or b.value is expr:
                        continue
                    value = b.value
                    if isinstance(value, cst.Call) and m.qn(value.func, found[0]) == "functools.partial":
                        value = positional(value, 0)
                    if isinstance(value, cst.Name) and value.value != expr.value:
                        target = m.function_named(value.value, found[0])
                        if target is not None:
                            yield target, False
            return
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in ("self", "cls"):
            fn = m.method_of(scope, expr.attr.value)
            if fn is not None:
                yield fn, True
            return
        if direct_only:
            return
        if isinstance(expr, cst.Call):
            fqn = m.qn(expr.func, scope)
            if fqn == "functools.partial" or fqn in TRANSFORMS:
                yield from self.callables(positional(expr, 0), scope)
