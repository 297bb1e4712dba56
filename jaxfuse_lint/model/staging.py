"""Staged tracing: where a function's Python runs once, with abstract values.

`model.traced` says which functions run under *some* tracing. Not every kind of
tracing turns arguments into abstract values or caches the result:

* `jax.jit`, `pmap`, `pjit`, `shard_map`, `checkpoint` and lax control flow
  *stage out* the function: its arguments are abstract tracers (no value, so
  `if x > 0` raises a concretization error) and its Python body runs once per
  trace, the compiled result being reused (side effects and globals are frozen).
  `make_jaxpr` and `eval_shape` stage out too, but only to look at the program.
* `jax.grad`, `jax.jvp`, `custom_jvp`... called eagerly run the Python on every
  call with *concrete* tracers (`if x > 0` works); under an enclosing `jit`
  they are staged like everything else.
* `jax.vmap` runs on every call, but batched arguments cannot be converted to
  a Python bool (counted only where `batching=True`).

`Staging` answers "is this function staged?" (and `CompiledFunctions`: does it end up
in a compiled program?). Which transforms stage and how their options are read is in
model/staging_transforms.py; which jax calls give tracers in staged code, in
model/omnistaging.py; `StagedValues`, the value analysis restricted to what is known to
be an abstract tracer derived from a staged function's arguments (the analysis behind
the trace-time hazard rules, JF402, which must only flag what would really fail), in
model/staged_values.py and model/staged_parameters.py.
"""
from __future__ import annotations

import functools

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import CALLBACKS, COMPILING, LOOPS
from jaxfuse_lint.model import routes
from jaxfuse_lint.model.omnistaging import COMPILE_TIME_EVAL
from jaxfuse_lint.model.scopes import iter_children
from jaxfuse_lint.model.staging_transforms import ANALYSIS, BATCHING, STAGING
from jaxfuse_lint.model.traced import positional
from jaxfuse_lint.model.values import ValueView

if TYPE_CHECKING:
    from jaxfuse_lint.model.device_arrays import DeviceArrays
    from jaxfuse_lint.model.numpy_values import NumpyArrays
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.shape_analysis import ShapeAnalysis
    from jaxfuse_lint.model.traced import TracedAnalysis, TraceReason


class StagingView(ValueView, Protocol):
    """What the staging analyses (Staging here, StagedValues in model/staged_values.py) read of
    the model besides its structure, names and values."""

    def traced_analysis(self) -> TracedAnalysis:
        """The analysis behind `traced` (its `callables`: which functions an expression runs)."""

    def is_traced(self, fn: Function | None) -> bool: ...

    @property
    def shapes(self) -> ShapeAnalysis: ...

    @property
    def numpy_arrays(self) -> NumpyArrays: ...

    @property
    def device_arrays(self) -> DeviceArrays: ...


class Staging:
    """Which traced functions are staged out (abstract arguments, Python run once per trace)."""

    def __init__(self, model: "StagingView") -> None:
        self.model = model
        self._memo: dict[tuple[int, bool, bool], bool] = {}
        self._active: set[tuple[int, bool, bool]] = set()

    def is_staged(self, fn: "Function | None", batching: bool = False, cached: bool = False) -> bool:
        """Whether fn runs under abstract tracing. `batching`: `vmap` counts too. `cached`: only
        tracing whose result is kept and run again (not `make_jaxpr`/`eval_shape`, which trace
        once to look at the program — a side effect there is how one extracts trace-time facts)."""
        if fn is None:
            return False
        key = (id(fn), batching, cached)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return False
        self._active.add(key)
        try:
            result = any(self.reason_is_staged(r, batching, cached) for r in self.model.traced.reasons.get(fn, ()))
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def reason_is_staged(self, r: "TraceReason", batching: bool = False, cached: bool = False) -> bool:
        if r.kind in ("decorator", "transform"):
            if (r.transform in STAGING and not (cached and r.transform in ANALYSIS)) or (
                    batching and r.transform in BATCHING):
                return True
            # `jax.grad(loss)(params)` inside a jitted step: staged by the enclosing jit.
            return self.is_staged(self.model.function_of(r.node), batching, cached)
        if r.kind == "external":
            return r.via in ("", "transform", "control-flow") or r.params_traced
        if r.kind in ("control-flow", "assumed"):
            return True
        if r.kind == "framework":
            # The framework runs the body under its transforms (`apply`/`init` in a jitted
            # step): abstract tracers, Python run once per trace; compiled only with a route
            # to a jit (CompiledFunctions does not count this reason). Where the module shows
            # how the body is run and every such use is eager (`net.apply(...)` at top level,
            # `model(x)` in a plain function), it runs on concrete values: not staged.
            return not self._run_eagerly(r)
        if r.kind == "driver":
            # diffrax solves under its own jit; optax's update runs where the optimizer is used.
            rt = routes.route(r.transform)
            return (rt is not None and rt.stages) or self.is_staged(self.model.function_of(r.node), batching, cached)
        if r.kind == "passed" and self._handed_to_callback(r.node, r.caller):
            return False
        if r.kind in ("called", "passed", "entry"):
            return self.is_staged(r.caller, batching, cached)
        return False

    def _run_eagerly(self, r: "TraceReason") -> bool:
        """Whether the default does not apply: the module shows how the body is run, by another
        route (which then decides) or by calls from code that is not traced (`net.apply(...)`
        at top level, `model(x)` in a plain function)."""
        m = self.model
        fn = m.index.function_of.get(r.node) if not isinstance(r.node, cst.Call) else None
        if fn is None and isinstance(r.node, cst.Call):  # `hk.transform(forward)`: forward
            analysis = m.traced_analysis()
            fns = [f for f, _ in analysis.callables(positional(r.node, 0), m.scope_of(r.node))]
            fn = fns[0] if len(fns) == 1 else None
        if fn is None:
            return False
        if any(x.kind != "framework" for x in m.traced.reasons.get(fn, ())):
            return True  # the routes the module shows (`model.apply` in a jitted step) decide
        return id(fn) in self._called_eagerly

    @functools.cached_property
    def _called_eagerly(self) -> frozenset[int]:
        """The functions some call site outside traced code calls directly (one pass over the
        module's calls, not one per framework body and question)."""
        m = self.model
        analysis = m.traced_analysis()
        return frozenset(id(f) for site in m.index.calls if not m.is_traced_scope(site.scope)
                         for f, _ in analysis.callables(site.call.func, site.scope, direct_only=True))

    def _handed_to_callback(self, node: cst.CSTNode, scope: "Scope | None") -> bool:
        """Whether a function passed in traced code goes (directly, through `partial`, or as a
        lambda) to a host callback, including ones the API table does not list
        (`jax._src.callback.io_callback`, a project's own `*_callback` wrapper)."""
        if scope is None:
            return False
        m = self.model
        call: cst.CSTNode | None = node
        if not isinstance(call, cst.Call):
            arg = m.parent(node)
            call = m.parent(arg) if isinstance(arg, cst.Arg) else None
        for _ in range(4):
            if not isinstance(call, cst.Call):
                return False
            qn = m.qn(call.func, scope)
            func = call.func
            last = qn.rsplit(".", 1)[-1] if qn else (
                func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else "")
            if qn in CALLBACKS or "callback" in last.lower() or last in ("id_tap", "id_print"):
                return True
            if qn != "functools.partial":
                return False
            arg = m.parent(call)
            call = m.parent(arg) if isinstance(arg, cst.Arg) else None
        return False

    def omnistaged(self, fn: "Function | None") -> bool:
        """Whether jax array operations in fn give tracers whatever their inputs: fn is staged
        out (a batching or eager transform alone runs them on concrete values), by a route that
        does not pass through a `jax.ensure_compile_time_eval()` block."""
        if fn is None:
            return False
        key = (id(fn), "omni", False)
        if key in self._memo:
            return self._memo[key]
        if key in self._active or self.compile_time_eval(fn.node, fn):
            return False
        self._active.add(key)
        try:
            result = any(self._reason_omnistaged(r) for r in self.model.traced.reasons.get(fn, ()))
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def _reason_omnistaged(self, r: "TraceReason") -> bool:
        m = self.model
        if r.kind in ("decorator", "transform"):
            if r.transform in STAGING:
                return True  # a staging transform traces abstractly, wherever it is called
            fn = m.function_of(r.node)
            return not self.compile_time_eval(r.node, fn) and self.omnistaged(fn)
        if r.kind in ("called", "passed", "entry"):
            if r.kind == "passed" and self._handed_to_callback(r.node, r.caller):
                return False
            return not self.compile_time_eval(r.node, r.caller) and self.omnistaged(r.caller)
        if r.kind == "driver":
            rt = routes.route(r.transform)
            if rt is not None and rt.stages:
                return True
            fn = m.function_of(r.node)
            return not self.compile_time_eval(r.node, fn) and self.omnistaged(fn)
        if r.kind == "external":
            # Another module's route: known to be staged only when it ends in a compiled program
            # (a `jax.grad`/`jacrev` there runs the function on concrete values).
            return r.compiled
        return self.reason_is_staged(r)

    def compile_time_eval(self, node: cst.CSTNode, scope: "Scope | None") -> bool:
        """Whether node runs under `with jax.ensure_compile_time_eval():` in its function (or
        in a function decorated with it)."""
        m = self.model
        scope = scope or m.index.scope
        for a in (node, *m.ancestors(node)):
            if isinstance(a, cst.With) and any(
                    isinstance(item.item, cst.Call) and m.qn(item.item.func, scope) in COMPILE_TIME_EVAL
                    for item in a.items):
                return True
            if isinstance(a, (cst.FunctionDef, cst.Lambda)):
                if isinstance(a, cst.FunctionDef) and any(
                        m.qn(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, scope)
                        in COMPILE_TIME_EVAL for d in a.decorators):
                    return True
                return False
        return False

    def is_compiled(self, fn: "Function | None") -> bool:
        """Whether fn's code ends up in a program that jit (or pmap, pjit, `eqx.filter_jit`)
        compiles: decorated or transformed by one, or traced (called, a loop body, vmapped)
        from code that is. A concrete array fn reads from outside is then folded into that
        program as a constant; run eagerly (`vmap`, or a lax loop called outside jit), the
        array is an operand instead."""
        return self._compiled_functions(fn)

    @functools.cached_property
    def _compiled_functions(self) -> "CompiledFunctions":
        return CompiledFunctions(self.model, self.model.traced.reasons)

    def staging_transform(self, fn: "Function") -> str | None:
        """The staging transform applied to fn directly (decorator or `jax.jit(fn)`), if any."""
        for r in self.model.traced.reasons.get(fn, ()):
            if r.kind in ("decorator", "transform") and r.transform in STAGING:
                return r.transform
        return None

    def is_loop_body(self, fn: "Function") -> bool:
        return any(r.kind == "control-flow" and r.transform in LOOPS for r in self.model.traced.reasons.get(fn, ()))


class CompiledFunctions:
    """Which traced functions end up in a compiled program, from a map of trace reasons (the
    model's own, or the ones a module finds without other modules' facts: project/)."""

    def __init__(self, model: "StagingView", reasons) -> None:
        self.model = model
        self.reasons = reasons
        self._memo: dict[int, bool] = {}
        self._active: set[int] = set()

    def __call__(self, fn: "Function | None") -> bool:
        if fn is None:
            return False
        key = id(fn)
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return False  # a cycle of calls: compiled only through a reason outside it
        self._active.add(key)
        try:
            result = any(self._reason_compiled(r) for r in self.reasons.get(fn, ()))
        finally:
            self._active.discard(key)
        self._memo[key] = result
        return result

    def _reason_compiled(self, r: "TraceReason") -> bool:
        if r.kind in ("decorator", "transform"):
            return r.transform in COMPILING or self(self.model.function_of(r.node))
        if r.kind in ("control-flow", "driver"):  # `diffeqsolve(ODETerm(f), ...)`: compiled when its caller is
            return self(self.model.function_of(r.node))
        if r.kind in ("called", "passed", "entry"):
            return self(r.caller)
        if r.kind == "external":
            # Another module traces it: the project index says whether that module's route is
            # compiled (`jax.jit`, or called from compiled code) or eager (`jax.jacrev`,
            # `custom_vjp` run outside jit); a run-time record is a compilation.
            return r.compiled
        # assumed: the configuration says its callers trace it under jit (library mode)
        return r.kind == "assumed"


def staging(model: "StagingView") -> Staging:
    """The model's Staging analysis (built once per model, kept with it)."""
    s = model.__dict__.get("_staging")
    if s is None:
        s = model.__dict__["_staging"] = Staging(model)
    return s


def own_nodes(fn: "Function"):
    """The nodes of fn's body that run in fn itself (document order): nested defs, lambdas
    and classes are left out (they are functions of their own)."""
    stack: list[cst.CSTNode] = [fn.node.body]
    while stack:
        n = stack.pop()
        yield n
        kids = [c for _, c in iter_children(n) if not isinstance(c, (cst.FunctionDef, cst.Lambda, cst.ClassDef))]
        stack.extend(reversed(kids))


__all__ = ["Staging", "CompiledFunctions", "StagingView", "own_nodes", "staging"]
