"""Fresh callables handed to a compiled function as STATIC arguments.

A jitted function keys its compiled programs on the values of its static arguments, by hash and
equality. A function object hashes by identity, so a lambda, a `functools.partial`, an inner
`def` or a transform of a function built anew on every call is a new key on every call: the
jitted function traces and compiles again, as if the fresh callable itself had been jitted
(JF302's harm, reached through an argument):

    @partial(jax.jit, static_argnames="f")        def solve(f0, p):
    def integrate(y0, f): ...                         return integrate(y0, f=lambda y: f0(y, p))

Measured (jax 0.10): five calls with a new lambda as the static argument compile five times; a
module-level function, once. A bound method is NOT fresh here: bound methods compare equal when
they bind the same function to the same object, so `f=self.rhs` finds the cached program.

What counts as a static argument of a call (`static_slots`):

- a parameter that a compiling decorator names in `static_argnums` / `static_argnames`
  (`@partial(jax.jit, static_argnames=...)`), or that a local name bound to `jax.jit(f,
  static_argnums=...)` receives (`fun = jax.jit(loop, static_argnums=(0, 1)); fun(cond, body)`);
- any argument of a filtered transform (`@eqx.filter_jit`): its non-array leaves are static, and a
  callable, or an object that holds one (`diffrax.ODETerm(f)`), is not an array;
- a parameter of a function of the module that passes it on, unchanged, into one of those (a
  `while_loop(cond_fun, body_fun)` helper that jits its loop with them static), a few calls deep.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import COMPILING, TRANSFORMS
from jaxfuse_lint.model.fresh_callables import FRESH_WRAPPERS, call_bound_to
from jaxfuse_lint.model.routes import route
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.traced import TracedAnalysis, _statics, keyword, positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.semantic import SemanticModel

MAX_DEPTH = 3

# Objects that keep the callable they are given as a field, compared by identity where the object is
# a static value (an equinox Module's fields): {canonical name: (position, keyword) of the callable}.
CALLABLE_HOLDERS: dict[str, tuple[int, str]] = {
    "diffrax.ODETerm": (0, "vector_field"),
    "diffrax.ControlTerm": (0, "vector_field"),
}


@dataclass(frozen=True)
class StaticSlot:
    """An argument of a call that reaches a static argument of a compiled function."""

    arg: cst.BaseExpression  # the argument expression at the call
    param: str  # the compiled function's parameter it becomes
    jitted: str  # how a message names the compiled function
    declared: cst.CSTNode  # where the parameter is declared static (the decorator, the jit call)
    filtered: bool = False  # a filtered transform's argument (every non-array value is static)
    via: str = ""  # the module's function that passes it on (`while_loop`), where it is one


@dataclass(frozen=True)
class FreshValue:
    """A value built anew on every run of the code that makes it, and compared by identity."""

    what: str  # for messages: "a lambda", "`cond_fun` (defined inside `run`)"
    made: cst.CSTNode  # where it is made: the expression, or the argument naming a local def
    closure: cst.CSTNode  # what its program reads: the lambda, the call, the def's node


class StaticCallables:
    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self.traced = TracedAnalysis(model)
        self._forwarded: dict[int, dict[str, tuple[str, str, cst.CSTNode, bool]]] = {}

    # -- which arguments are static -----------------------------------------------------------------

    def static_slots(self, call: cst.Call, scope: "Scope", depth: int = 0) -> list[StaticSlot]:
        """The arguments of `call` (made in host code) that reach a static argument of a compiled
        function."""
        m = self.model
        out: list[StaticSlot] = []
        func = call.func
        jitted = self._jitted_callee(call, scope)
        if jitted is not None:
            fn, nums, names, declared, filtered, label = jitted
            params = list(fn.params)
            statics = set(names) | {params[i] for i in nums if 0 <= i < len(params)}
            if filtered:
                statics = set(params)
            if fn.cls is not None and params and params[0] in ("self", "cls"):
                statics.discard(params[0])  # the instance: not built by the call
            for p in sorted(statics):
                if p in fn.star_params:
                    continue
                arg = m.argument_for(call, fn, p)
                if arg is not None:
                    out.append(StaticSlot(arg, p, label, declared, filtered))
            return out
        if depth >= MAX_DEPTH or not isinstance(func, cst.Name):
            return out
        fn = m.function_named(func.value, scope)
        if fn is None or not isinstance(fn.node, cst.FunctionDef) or m.is_traced(fn):
            return out
        for p, (param, label, declared, filtered) in self._forwarding(fn, depth).items():
            arg = m.argument_for(call, fn, p)
            if arg is not None:
                out.append(StaticSlot(arg, param, label, declared, filtered, via=f"`{fn.name}`"))
        return out

    def _jitted_callee(self, call: cst.Call, scope: "Scope"):
        """(the compiled function, static_argnums, static_argnames, where declared, filtered, its
        name for messages) when `call` calls a compiled function of the module, else None."""
        m = self.model
        func = call.func
        bound: cst.Call | None = None
        if isinstance(func, cst.Call):
            bound = func  # `jax.jit(f, static_argnums=0)(g)`
        elif isinstance(func, (cst.Name, cst.Attribute)):
            if isinstance(func, cst.Name):
                fn = m.function_named(func.value, scope)
            else:  # `self.apply(x, fn)` with `apply` a jitted method of the instance's class
                from jaxfuse_lint.model.instances import instances

                inst = instances(m)
                ci = inst.instance_class(func.value, scope)
                fn = inst.method(ci, func.attr.value) if ci is not None else None
            if fn is not None and isinstance(fn.node, cst.FunctionDef):
                for dec in fn.node.decorators:
                    t = self.traced.transform_of(dec.decorator, fn.parent)
                    if t is not None and t[0] in COMPILING:
                        nums, names = _statics(t[1])
                        r = route(t[0])
                        return fn, nums, names, dec, bool(r and r.filtered), f"`{fn.display_name}`"
                return None
            if not isinstance(func, cst.Name):
                return None
            bound = call_bound_to(m, func, scope)  # `fun = jax.jit(loop, static_argnums=(0, 1))`
        if bound is None:
            return None
        t = self.traced.transform_of(bound.func, scope)
        if t is None or t[0] not in COMPILING or (t[1] is not None and t[1] is bound):
            return None
        target = positional(bound, 0) or keyword(bound, "fun")
        if not isinstance(target, cst.Name):
            return None
        fn = m.function_named(target.value, scope)
        if fn is None or not isinstance(fn.node, cst.FunctionDef):
            return None
        nums, names = _statics(bound)
        n2, s2 = _statics(t[1])
        r = route(t[0])
        return fn, nums | n2, names | s2, bound, bool(r and r.filtered), f"`{fn.name}`"

    def _forwarding(self, fn: Function, depth: int) -> dict[str, tuple[str, str, cst.CSTNode, bool]]:
        """The parameters of `fn` it passes on, unchanged, into a static argument of a compiled
        function: {parameter: (the compiled function's parameter, its name, where declared,
        filtered)}."""
        key = id(fn)
        if key in self._forwarded:
            return self._forwarded[key]
        self._forwarded[key] = {}
        out: dict[str, tuple[str, str, cst.CSTNode, bool]] = {}
        m = self.model
        for site in fn.calls:
            if m.is_traced_scope(site.scope):
                continue
            for slot in self.static_slots(site.call, site.scope, depth + 1):
                if isinstance(slot.arg, cst.Name) and slot.arg.value in fn.params \
                        and slot.arg.value not in out:
                    found = m.bindings_at(slot.arg, site.scope)
                    if found is not None and found[0] is fn and all(b.kind == "param" for b in found[1]):
                        out[slot.arg.value] = (slot.param, slot.jitted, slot.declared, slot.filtered)
        self._forwarded[key] = out
        return out

    # -- which values are new on every call -----------------------------------------------------------

    def fresh_value(self, expr: cst.BaseExpression, scope: Function, depth: int = 0,
                    filtered: bool = False) -> FreshValue | None:
        """`expr` (an argument in `scope`'s own code) is a function object, or an object holding
        one, built anew on every call of `scope` and compared by identity; None otherwise (a
        module-level function, a bound method, anything the code does not show). `filtered`: for a
        filtered jit, which flattens pytrees (a `jax.tree_util.Partial` of one function is compared
        by that function, not by identity)."""
        m = self.model
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Lambda):
            return FreshValue("a lambda", expr, expr)
        if isinstance(expr, cst.Call):
            if filtered and m.qn(expr.func, scope) == "jax.tree_util.Partial":
                inner = positional(expr, 0)
                got = self.fresh_value(inner, scope, depth + 1, filtered) if inner is not None else None
                return FreshValue(f"a `Partial` of {got.what}", expr, expr) if got is not None else None
            kind = self._fresh_call(expr, scope, depth)
            return FreshValue(kind, expr, expr) if kind is not None else None
        if isinstance(expr, cst.Name):
            found = m.bindings_at(expr, scope)
            if found is None or found[0] is not scope or len(found[1]) != 1:
                return None
            b = found[1][0]
            if b.kind == "def" and b.function is not None and isinstance(b.function.node, cst.FunctionDef):
                return FreshValue(f"`{expr.value}` (defined inside `{scope.display_name}`)", expr, b.function.node)
            if b.kind == "assign" and b.index is None and isinstance(b.value, cst.Lambda):
                return FreshValue(f"`{expr.value}` (a lambda made inside `{scope.display_name}`)", b.value, b.value)
            value = call_bound_to(m, expr, scope)
            if value is not None and m.scope_of(value) is scope:
                got = self.fresh_value(value, scope, depth + 1, filtered)
                if got is not None:
                    return FreshValue(f"`{expr.value}` ({got.what} made inside `{scope.display_name}`)", value, value)
        return None

    def _fresh_call(self, call: cst.Call, scope: Function, depth: int) -> str | None:
        """What a call that returns a new function object (or an object holding one) gives, as a
        message names it, else None."""
        m = self.model
        qn = m.qn(call.func, scope)
        if qn in FRESH_WRAPPERS:
            return f"a `{qn.rsplit('.', 1)[-1]}`"
        if qn in TRANSFORMS:
            return f"a `{' '.join(m.module.code_for_node(call.func).split())}` transform"
        held = CALLABLE_HOLDERS.get(qn or "")
        if held is not None:
            inner = positional(call, held[0]) or keyword(call, held[1])
            got = self.fresh_value(inner, scope, depth + 1) if inner is not None else None
            if got is not None:
                return f"the `{qn.rsplit('.', 1)[-1]}` holding {got.what}"
        if isinstance(call.func, cst.Name):
            factory = m.function_named(call.func.value, scope)
            if factory is not None and _returns_fresh(m, factory):
                return f"the new function `{factory.name}` returns"
        return None


def _returns_fresh(model: "SemanticModel", fn: Function) -> bool:
    """A local factory that returns a lambda or a def of its own (`ode_residual(f)`), unless memoised."""
    from jaxfuse_lint.model.compile_cache import memoised_function

    if not isinstance(fn.node, cst.FunctionDef) or not fn.returns or memoised_function(model, fn):
        return False
    for r in fn.returns:
        if isinstance(r, cst.Lambda):
            continue
        if isinstance(r, cst.Name):
            inner = model.function_named(r.value, fn)
            if inner is not None and inner.parent is fn:
                continue
        return False
    return True


def static_callables(model: "SemanticModel") -> StaticCallables:
    found = model.__dict__.get("_static_callables")
    if found is None:
        found = model.__dict__["_static_callables"] = StaticCallables(model)
    return found
