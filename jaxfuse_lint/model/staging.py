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

`Staging` answers "is this function staged?" and `StagedValues` is the value
analysis restricted to what is known to be an abstract tracer derived from a
staged function's arguments: the analysis behind the trace-time hazard rules
(JF402), which must only flag what would really fail.
"""
from __future__ import annotations

import functools

from typing import TYPE_CHECKING, Protocol

import libcst as cst

from jaxfuse_lint.model.api import (ARRAY_VIEW_ATTRIBUTES, CALLBACKS, COMPILING, CONTROL_FLOW,
                                    JNP_STATIC_FUNCTIONS, LOOPS, STATIC_ATTRIBUTES, TRANSFORMS)
from jaxfuse_lint.model import routes
from jaxfuse_lint.model.scopes import iter_children
from jaxfuse_lint.model.traced import _literal_ints, _literal_strs, keyword, positional
from jaxfuse_lint.model.values import STATIC, TRACED, UNKNOWN, Kind, ValueAnalysis, ValueView, combine

if TYPE_CHECKING:
    from jaxfuse_lint.model.device_arrays import DeviceArrays
    from jaxfuse_lint.model.numpy_values import NumpyArrays
    from jaxfuse_lint.model.scopes import Binding, Function, Scope
    from jaxfuse_lint.model.shape_analysis import ShapeAnalysis
    from jaxfuse_lint.model.traced import TracedAnalysis, TraceReason


class StagingView(ValueView, Protocol):
    """What the staging analysis reads of the model besides its structure, names and values."""

    def traced_analysis(self) -> TracedAnalysis:
        """The analysis behind `traced` (its `callables`: which functions an expression runs)."""

    def is_traced(self, fn: Function | None) -> bool: ...

    @property
    def shapes(self) -> ShapeAnalysis: ...

    @property
    def numpy_arrays(self) -> NumpyArrays: ...

    @property
    def device_arrays(self) -> DeviceArrays: ...

# Transforms that stage their function out to a jaxpr with abstract arguments.
STAGING = frozenset({
    "jax.jit", "jax.pmap", "jax.experimental.pjit.pjit", "jax.make_jaxpr", "jax.eval_shape",
    "jax.xla_computation", "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint",
    "jax.experimental.shard_map.shard_map", "jax.shard_map", "jax.experimental.jax2tf.convert",
    "jax.experimental.maps.xmap", "equinox.filter_jit", "equinox.filter_pmap",
}) | routes.names(kind="transform", stages=True)
# Staging transforms that only look at the program (trace once, keep nothing to run).
ANALYSIS = frozenset({"jax.make_jaxpr", "jax.eval_shape", "jax.xla_computation", "equinox.filter_eval_shape",
                      "equinox.filter_make_jaxpr", "flax.nnx.eval_shape"})
# Transforms that batch: eager, but batched arguments have no single value.
BATCHING = frozenset({"jax.vmap", "equinox.filter_vmap"}) | routes.names(kind="transform", batches=True)
# Transforms whose non-array arguments stay Python values (equinox filters by type).
FILTERED = frozenset({"equinox.filter_jit", "equinox.filter_pmap", "equinox.filter_vmap"}) | (
    routes.names(kind="transform", filtered=True))
# Transforms that differentiate: only the `argnums` arguments become their tracers.
DIFFERENTIATING = frozenset({"jax.grad", "jax.value_and_grad", "jax.jacfwd", "jax.jacrev", "jax.hessian",
                             "equinox.filter_grad", "equinox.filter_value_and_grad"})
# Transforms that accept `static_argnums` / `static_argnames` (what a message may suggest).
ACCEPTS_STATIC_ARGNAMES = frozenset({"jax.jit", "jax.experimental.pjit.pjit"})
ACCEPTS_STATIC_ARGNUMS = ACCEPTS_STATIC_ARGNAMES | frozenset({
    "jax.checkpoint", "jax.remat", "jax.ad_checkpoint.checkpoint", "jax.make_jaxpr",
})
# jax and NumPy functions (besides api.JNP_STATIC_FUNCTIONS) whose result is a Python value
# even for a traced argument.
STATIC_RESULT_FUNCTIONS = frozenset({
    "jax.lax.broadcast_shapes", "jax.lax.axis_size", "jax.core.get_aval", "jax.numpy.isdtype",
    "jax.process_count", "jax.local_devices", "jax.numpy.get_printoptions", "jax.config.read", "jax.typeof",
    "numpy.ndim", "numpy.shape", "numpy.size", "numpy.result_type", "numpy.dtype", "numpy.issubdtype",
    "numpy.iinfo", "numpy.finfo", "numpy.isscalar", "numpy.promote_types", "numpy.can_cast",
})
# Methods of arrays (and of `x.at[i]`): on a traced array they give traced arrays.
ARRAY_METHODS = frozenset(
    "all any argmax argmin argpartition argsort astype choose clip compress conj conjugate copy cumprod "
    "cumsum diagonal dot flatten max mean min nonzero prod ptp ravel repeat reshape round searchsorted "
    "sort squeeze std sum swapaxes take trace transpose var view set add multiply divide power get apply "
    "mul __getitem__ __add__ __mul__ __sub__ __truediv__ block_until_ready".split()
)
# Attributes only an array has (a dict or list has none of them).
_ARRAY_ONLY = frozenset({"shape", "ndim", "T", "mT", "reshape", "astype", "at", "dtype"})
_ARRAY_ONLY_OPERATORS = (cst.Subtract, cst.Divide, cst.FloorDivide, cst.Power, cst.MatrixMultiply)
# Omnistaged functions whose result is a tuple or a container (of arrays, or of a pytree).
NOT_AN_ARRAY = frozenset({
    "jax.lax.cond", "jax.lax.switch", "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map",
    "jax.lax.associative_scan", "jax.lax.custom_root", "jax.lax.custom_linear_solve", "jax.lax.platform_dependent",
    "jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin", "jax.lax.all_gather", "jax.lax.stop_gradient",
    "jax.lax.optimization_barrier", "jax.device_put", "jax.lax.with_sharding_constraint",
})
# pytree functions whose function argument receives leaves, and those that list the leaves.
TREE_MAPS = frozenset({"jax.tree_util.tree_map", "jax.tree.map", "jax.tree_map"})
TREE_LEAVES = frozenset({"jax.tree_util.tree_leaves", "jax.tree.leaves", "jax.tree_leaves"})
# Omnistaging: in staged code every jax array operation is staged out, so its result is a tracer
# even when no argument is (`jnp.arange(3)`, `jnp.ones(x.shape)`, `jax.random.PRNGKey(0)`), unless
# it runs under `jax.ensure_compile_time_eval()` (checked against jax 0.10.2). These namespaces
# hold array operations; their CamelCase names are classes (`lax.Precision`; `jax.random.PRNGKey`
# is left out with them, to be safe) and the names below return Python values, callables or
# context managers, or may hand a Python value back unchanged.
OMNISTAGED_NAMESPACES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "jax.random.", "jax.image.")
OMNISTAGED_FUNCTIONS = frozenset({"jax.device_put"})
NOT_OMNISTAGED = frozenset({
    "jax.numpy.vectorize", "jax.numpy.frompyfunc", "jax.numpy.printoptions", "jax.numpy.get_printoptions",
    "jax.numpy.set_printoptions", "jax.numpy.einsum_path", "jax.numpy.save", "jax.numpy.savez", "jax.numpy.load",
    "jax.numpy.ufunc", "jax.numpy.ndarray", "jax.numpy.issubsctype", "jax.numpy.obj2sctype",
    "jax.lax.dtype", "jax.lax.conv_dimension_numbers", "jax.lax.padtype_to_pads", "jax.lax.conv_general_permutations",
    "jax.lax.conv_shape_tuple", "jax.lax.conv_general_shape_tuple", "jax.lax.conv_transpose_shape_tuple",
    "jax.lax.reduce_window_shape_tuple", "jax.lax.axis_size", "jax.lax.broadcast_shapes",
    "jax.random.key_impl", "jax.random.default_prng_impl",
    # Collectives of Python constants fold to Python values (`lax.psum(1, "i")` is the axis size).
    "jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin", "jax.lax.psum_scatter", "jax.lax.all_gather",
    "jax.lax.ppermute", "jax.lax.pshuffle", "jax.lax.pswapaxes", "jax.lax.all_to_all", "jax.lax.pbroadcast",
    "jax.lax.pvary", "jax.lax.pcast",
    # Control flow forwards what its functions give back unchanged: a Python value stays one
    # (`lax.fori_loop(0, 3, lambda i, c: c, 0)` is 0, a one-branch `lax.switch` runs the branch).
    "jax.lax.cond", "jax.lax.switch", "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map",
    "jax.lax.associative_scan", "jax.lax.custom_root", "jax.lax.custom_linear_solve", "jax.lax.platform_dependent",
})
_NOT_OMNISTAGED_PREFIXES = ("jax.nn.initializers.", "jax.numpy.dtypes.")
# Context managers (and decorators) under which jax operations compute concrete values.
COMPILE_TIME_EVAL = frozenset({"jax.ensure_compile_time_eval", "jax.core.ensure_compile_time_eval",
                               "jax.core.eval_context"})


def omnistaged_function(qn: str | None) -> bool:
    """Whether the jax function `qn`, called in staged code, always returns tracers."""
    if qn is None or qn in NOT_OMNISTAGED or qn in JNP_STATIC_FUNCTIONS or qn in STATIC_RESULT_FUNCTIONS:
        return False
    if qn in OMNISTAGED_FUNCTIONS:
        return True
    if not qn.startswith(OMNISTAGED_NAMESPACES) or qn.startswith(_NOT_OMNISTAGED_PREFIXES):
        return False
    last = qn.rsplit(".", 1)[-1]
    return bool(last) and last[0].islower() and not last.startswith("_")


# Options that make some arguments Python values (or unbatched) in ways the model does not parse.
_ARGUMENT_OPTIONS = ("static_broadcasted_argnums", "in_axes", "nondiff_argnums", "in_specs")


def option_calls(reason: "TraceReason") -> list[cst.Call]:
    """The calls that carry a transform's options: `jax.jit(f, static_argnums=1)`,
    `@partial(jax.jit, static_argnames="n")`, `@jax.jit(static_argnames=...)`."""
    node = reason.node
    out = []
    if isinstance(node, cst.Decorator) and isinstance(node.decorator, cst.Call):
        out.append(node.decorator)
    elif isinstance(node, cst.Call):
        out.append(node)
        if isinstance(node.func, cst.Call):
            out.append(node.func)
    return out


def _literal_options(value: cst.BaseExpression) -> bool:
    """True for the literal forms traced.py reads (ints, strings, tuples/lists of them)."""
    if isinstance(value, (cst.Integer, cst.SimpleString)):
        return True
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer):
        return True
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(not isinstance(el, cst.StarredElement) and _literal_options(el.value) for el in value.elements)
    return False


def options_understood(reason: "TraceReason", transform: str, in_axes_read: bool = False) -> bool:
    """False when the transform's options may make arguments static (or unbatched) in a way
    the model cannot read: non-literal `static_argnums`, `**options`, any `in_axes`..."""
    for call in option_calls(reason):
        for a in call.args:
            if a.star == "**":
                return False
            if a.keyword is None:
                continue
            kw = a.keyword.value
            if kw in ("static_argnums", "static_argnames", "static_broadcasted_argnums"):
                if not _literal_options(a.value):
                    return False
            elif kw == "in_axes" and transform in COMPILING:
                continue  # `pmap(f, in_axes=(0, None))`: an unmapped argument is broadcast, still traced
            elif kw in _ARGUMENT_OPTIONS and not (in_axes_read and kw == "in_axes"):
                return False
        if transform in BATCHING and positional(call, 1) is not None and not in_axes_read:
            return False  # vmap(f, in_axes)
    return True


class Staging:
    """Which traced functions are staged out (abstract arguments, Python run once per trace)."""

    def __init__(self, model: "StagingView") -> None:
        self.model = model
        self._memo: dict[tuple[int, bool, bool], bool] = {}
        self._active: set[tuple[int, bool, bool]] = set()
        self._values: StagedValues | None = None

    @property
    def values(self) -> "StagedValues":
        if self._values is None:
            self._values = StagedValues(self.model)
        return self._values

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


class StagedValues(ValueAnalysis):
    """TRACED here means: an abstract tracer derived from the arguments of a staged function.

    Stricter than the general analysis, to keep the rules that use it free of false
    positives: eager transforms (`grad`, `custom_jvp`) give UNKNOWN arguments; `jnp` results
    are TRACED only when computed from TRACED inputs; attributes of a traced pytree
    (`state.step`, `cfg.use_bias`) may be static fields, so they are UNKNOWN; loop variables
    over traced containers (dict keys) are UNKNOWN; `in` tests are UNKNOWN.
    """

    model: "StagingView"

    def _reason_param_kind(self, fn: "Function", name: str, r) -> Kind:
        if self._string_annotated(fn, name):
            return STATIC  # `jac: Literal["fwd", "bwd"]`, `mode: str`: JAX cannot trace a string
        if r.kind in ("control-flow", "driver", "decorator", "transform"):
            bound = self._partial_bound_kind(fn, name, r)
            if bound is not None:
                # `lax.scan(partial(step, flag=True), ...)`, `jax.vmap(partial(loss, n=3))`: the
                # parameter holds what the partial bound (static if that value is).
                return bound
        if r.kind == "control-flow":
            # lax passes the loop index and carry (or the operands) positionally; a parameter
            # with a default or a keyword-only one keeps its Python value.
            if name in fn.params_with_default or self._keyword_only(fn, name):
                return UNKNOWN
            return TRACED
        if r.kind in ("decorator", "transform"):
            t = r.transform
            if t in FILTERED:
                # equinox keeps non-array arguments static: only a parameter annotated as an
                # array, or passed arrays by every call in the module, is known to be a tracer.
                return TRACED if self._array_annotated(fn, name) or self._passed_arrays(fn, name) else UNKNOWN
            if t in BATCHING:
                mapped = self._mapped(fn, name, r)
                if mapped is False:
                    # `vmap(f, in_axes=(0, None))`: an unmapped argument is passed through as is.
                    return self._passed_through(fn, name, r)
                if mapped is True:
                    if not options_understood(r, t, in_axes_read=True):
                        return UNKNOWN
                    return super()._reason_param_kind(fn, name, r)
            if t in STAGING or t in BATCHING:
                if not options_understood(r, t):
                    return UNKNOWN
                return super()._reason_param_kind(fn, name, r)
            if staging(self.model).reason_is_staged(r, batching=True):
                if t in DIFFERENTIATING and r.kind == "transform":
                    # `jax.grad(f)(t, i - 1)`: only `argnums` become tracers of the transform;
                    # the other arguments are whatever the caller passes.
                    argnums = self._argnums(r)
                    index = self._param_index(fn, name, r)
                    if argnums is None or index is None:
                        return UNKNOWN
                    if index not in argnums:
                        return self._passed_through(fn, name, r)
                return super()._reason_param_kind(fn, name, r)
            return UNKNOWN
        if r.kind == "passed":
            return self._tree_map_param_kind(fn, name, r)
        if r.kind == "framework":
            return self._framework_param_kind(fn, name)
        if r.kind == "driver":
            # The route's table entry says which parameters receive tracers (diffrax's `t`, `y`).
            rt = routes.route(r.transform)
            params = [p for p in fn.params if p not in fn.star_params]
            shift = self._partial_positionals(fn, r)
            if shift is None:
                return UNKNOWN
            params = params[shift:]
            if fn.cls is not None and params and params[0] in ("self", "cls"):
                params = params[1:]
            if rt is None or not rt.traced_params or name not in params or name in fn.params_with_default \
                    or self._keyword_only(fn, name):
                return UNKNOWN
            return TRACED if params.index(name) in rt.traced_params else UNKNOWN
        if r.kind == "entry":
            return self._entry_param_kind(fn, name, r)
        if r.kind == "called" and r.partial is not None:
            return self._partial_param_kind(fn, name, r)
        if r.kind == "external" and r.arg_kinds:
            params = [p for p in fn.params if p not in fn.star_params]
            if fn.cls is not None and params and params[0] in ("self", "cls"):
                params = params[1:]
            if name not in params or params.index(name) >= len(r.arg_kinds):
                return UNKNOWN
            return TRACED if r.arg_kinds[params.index(name)] == "T" else UNKNOWN
        if r.kind == "external" and r.params_traced:
            if name in fn.params_with_default or self._keyword_only(fn, name) or name in fn.star_params:
                return UNKNOWN
            if self._is_static_param(fn, name, r):
                return STATIC
            return TRACED
        return super()._reason_param_kind(fn, name, r)

    def _framework_param_kind(self, fn: "Function", name: str) -> Kind:
        """A Module body's (or a transformed function's) parameters: an array-annotated one is a
        tracer, and so is the input (the first positional parameter after `self`, without a
        default, not annotated as something else); flags, options and keyword-only parameters
        are whatever the caller passes (often Python values: `train`, `deterministic`)."""
        if self._array_annotated(fn, name):
            return TRACED
        if fn.cls is not None and fn.name != "__call__" and not any(
                (self.model.qn(d.decorator, fn.parent or self.model.index.scope) or "").endswith(".compact")
                for d in fn.node.decorators):
            return UNKNOWN  # other methods (haiku's `initial_state(batch_size)`) take anything
        params = [p for p in fn.params if p not in fn.star_params and not self._keyword_only(fn, p)]
        if fn.cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        if not params or params[0] != name or name in fn.params_with_default:
            return UNKNOWN
        p = fn.param_nodes.get(name)
        return TRACED if p is None or p.annotation is None else UNKNOWN

    def _string_annotated(self, fn: "Function", name: str) -> bool:
        p = fn.param_nodes.get(name)
        if p is None or p.annotation is None:
            return False
        ann = p.annotation.annotation
        scope = fn.parent or self.model.index.scope
        if isinstance(ann, cst.Subscript):
            if self.model.qn(ann.value, scope) not in ("typing.Literal", "typing_extensions.Literal"):
                return False
            values = [el.slice.value for el in ann.slice if isinstance(el.slice, cst.Index)]
            return bool(values) and all(isinstance(v, cst.SimpleString) for v in values)
        return self.model.qn(ann, scope) == "builtins.str"

    def _passed_arrays(self, fn: "Function", name: str) -> bool:
        """Whether the module calls fn, and every call passes an array for `name` (a `jnp`
        result, a NumPy or device array, a tracer of staged code)."""
        m = self.model
        if name in fn.params_with_default or self._keyword_only(fn, name) or name in fn.star_params:
            return False
        analysis = m.traced_analysis()
        seen = False
        for site in m.index.calls:
            if not any(f is fn for f, _ in analysis.callables(site.call.func, site.scope, direct_only=True)):
                continue
            if any(a.star for a in site.call.args):
                return False
            arg = m.argument_for(site.call, fn, name)
            if arg is None or not self._array_value(arg, site.scope):
                return False
            seen = True
        return seen

    def _array_value(self, e: cst.BaseExpression, scope: "Scope") -> bool:
        m = self.model
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None and qn.startswith(("jax.numpy.", "jax.random.", "jax.lax.", "jax.nn.")) \
                    and qn not in JNP_STATIC_FUNCTIONS and qn not in STATIC_RESULT_FUNCTIONS \
                    and not qn.startswith(("jax.random.PRNGKey", "jax.random.key")):
                return True
        if m.numpy_arrays.is_array(e, scope) or m.device_arrays.is_array(e, scope):
            return True
        return self.kind(e, scope) is TRACED

    def _array_annotated(self, fn: "Function", name: str) -> bool:
        p = fn.param_nodes.get(name)
        if p is None or p.annotation is None or name in fn.params_with_default:
            return False
        ann = p.annotation.annotation
        scope = fn.parent or self.model.index.scope
        if isinstance(ann, cst.Subscript):
            qn = self.model.qn(ann.value, scope)
            return qn is not None and qn.startswith(routes.ARRAY_ANNOTATION_ROOTS) and "PyTree" not in qn
        qn = self.model.qn(ann, scope)
        return qn in routes.ARRAY_ANNOTATIONS

    def _tree_map_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """`jax.tree_util.tree_map(f, tree, *rest)` in staged code: f's i-th parameter gets the
        leaves of the (i+1)-th tree, tracers when the tree is traced."""
        call = r.node
        if not isinstance(call, cst.Call) or r.caller is None or any(a.star for a in call.args):
            return UNKNOWN
        if self.model.qn(call.func, r.caller) not in TREE_MAPS or positional(call, 0) is None:
            return UNKNOWN
        given = positional(call, 0)
        bound = 0
        if isinstance(given, cst.Call) and self.model.qn(given.func, r.caller) == "functools.partial":
            if any(a.star for a in given.args) or any(a.keyword is not None and a.keyword.value == name for a in given.args):
                return UNKNOWN
            bound = sum(1 for a in given.args[1:] if a.keyword is None)
            given = positional(given, 0)
        if self.model.index.function_of.get(given) is not fn and not (
                isinstance(given, cst.Name) and self.model.function_named(given.value, r.caller) is fn):
            return UNKNOWN
        params = [p for p in fn.params if p not in fn.star_params]
        if name not in params or name in fn.params_with_default or params.index(name) < bound:
            return UNKNOWN
        tree = positional(call, 1 + params.index(name) - bound)
        if tree is None:
            return UNKNOWN
        return TRACED if self.kind(tree, r.caller) is TRACED else UNKNOWN

    def _partial_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """`g = partial(f, a); g(x)`: f's parameters take the partial's arguments, then the call's."""
        p, call = r.partial, r.node
        if not isinstance(call, cst.Call) or r.caller is None or any(a.star for a in (*p.args, *call.args)):
            return UNKNOWN
        for a in (*call.args, *p.args):
            if a.keyword is not None and a.keyword.value == name:
                return self.kind(a.value, r.caller if a in call.args else self.model.scope_of(p))
        params = [q for q in fn.params if q not in fn.star_params]
        if name not in params:
            return UNKNOWN
        i = params.index(name)
        bound = [a.value for a in p.args[1:] if a.keyword is None]
        if i < len(bound):
            return self.kind(bound[i], self.model.scope_of(p))
        arg = positional(call, i - len(bound))
        return self.kind(arg, r.caller) if arg is not None else UNKNOWN

    def _entry_param_kind(self, fn: "Function", name: str, r) -> Kind:
        """`model.apply(variables, x)`: x goes to `__call__`'s first parameter after `self`."""
        call = r.node
        if r.arg_offset is None or not isinstance(call, cst.Call) or r.caller is None:
            return UNKNOWN
        if any(a.star for a in call.args):
            return UNKNOWN
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return self.kind(a.value, r.caller)
        params = [p for p in fn.params if p not in fn.star_params]
        if fn.cls is not None and params and params[0] in ("self", "cls"):
            params = params[1:]
        if name not in params:
            return UNKNOWN
        arg = positional(call, r.arg_offset + params.index(name))
        if arg is None:
            return UNKNOWN
        return self.kind(arg, r.caller)

    @staticmethod
    def _keyword_only(fn: "Function", name: str) -> bool:
        node = fn.node
        return any(p.name.value == name for p in node.params.kwonly_params)

    def _param_index(self, fn: "Function", name: str, r) -> int | None:
        """The position of parameter `name` among the arguments the transformed callable takes
        (past `self` of a bound method and the partial's positional arguments)."""
        params = [p for p in fn.params if p not in fn.star_params]
        if r.bound_method and params and params[0] in ("self", "cls"):
            params = params[1:]
        shift = self._partial_positionals(fn, r)
        if shift is None or name not in params or self._keyword_only(fn, name):
            return None
        index = params.index(name) - shift
        return index if index >= 0 else None

    def _mapped(self, fn: "Function", name: str, r) -> bool | None:
        """Whether `vmap`'s `in_axes` maps parameter `name`: True, False (`None` axis), or None
        when the model cannot read it (no `in_axes`: None too, the default maps everything)."""
        if r.kind != "transform" and not isinstance(r.node, cst.Decorator):
            return None
        calls = option_calls(r)
        for call in calls:
            excluded = keyword(call, "excluded")  # `jnp.vectorize(f, excluded={1})`
            if excluded is not None:
                index = self._param_index(fn, name, r)
                if index is None:
                    return None
                ints, strs = _literal_ints(excluded), _literal_strs(excluded)
                if not _literal_options(excluded) and not isinstance(excluded, cst.Set):
                    return None
                if index in ints or name in strs:
                    return False
        axes = None
        for call in calls:
            found = keyword(call, "in_axes")
            if found is None and self.model.qn(call.func, self.model.scope_of(call)) in BATCHING:
                found = positional(call, 1)
            if found is not None:
                axes = found
        if axes is None:
            return None
        index = self._param_index(fn, name, r)
        if index is None:
            return None
        if isinstance(axes, (cst.Tuple, cst.List)):
            if any(isinstance(el, cst.StarredElement) for el in axes.elements) or index >= len(axes.elements):
                return None
            axes = axes.elements[index].value
        if isinstance(axes, cst.Name) and axes.value == "None":
            return False
        if isinstance(axes, cst.Integer) or (isinstance(axes, cst.UnaryOperation)
                                             and isinstance(axes.expression, cst.Integer)):
            return True
        return None

    def _argnums(self, r) -> frozenset[int] | None:
        """The literal `argnums` of a differentiating transform (default 0); None when unread."""
        out: frozenset[int] = frozenset({0})
        for call in option_calls(r):
            if any(a.star for a in call.args):
                return None
            found = keyword(call, "argnums")
            if found is None:
                continue
            if isinstance(found, cst.Integer):
                out = frozenset({int(found.value, 0)})
            elif isinstance(found, (cst.Tuple, cst.List)) and all(
                    isinstance(el.value, cst.Integer) for el in found.elements):
                out = frozenset(int(el.value.value, 0) for el in found.elements)
            else:
                return None
        return out

    def _passed_through(self, fn: "Function", name: str, r) -> Kind:
        """A parameter the transform hands over unchanged: the kind of the argument where the
        transformed function is called at once (`jax.vmap(f, in_axes=(0, None))(x, 1.0)`)."""
        call = r.node
        outer = self.model.parent(call) if isinstance(call, cst.Call) else None
        index = self._param_index(fn, name, r)
        if not isinstance(outer, cst.Call) or outer.func is not call or index is None:
            return UNKNOWN
        if any(a.star for a in outer.args):
            return UNKNOWN
        arg = positional(outer, index)
        if arg is None:
            return UNKNOWN
        return self.kind(arg, self.model.scope_of(outer))

    def _partial_of(self, fn: "Function", r) -> "tuple[cst.Call, Scope] | None":
        """The `functools.partial(fn, ...)` through which a transform or a lax driver received
        fn (directly, through a name bound to it, or inside other transforms), and its scope."""
        m = self.model
        call = r.node.decorator if isinstance(r.node, cst.Decorator) else r.node
        if not isinstance(call, cst.Call) or r.kind == "decorator":
            return None
        scope = m.scope_of(call)
        if r.kind == "transform":
            candidates = [positional(call, 0) or keyword(call, "fun") or keyword(call, "f")]
        else:
            qn = m.qn(call.func, scope)
            if qn not in CONTROL_FLOW:
                return None
            candidates = list(m.traced_analysis().control_flow_functions(call, qn))
        for target in candidates:
            owner = scope
            for _ in range(6):
                if isinstance(target, cst.Name):  # `inner = partial(f, n=3); jax.vmap(inner)`
                    found = m.lookup(target.value, owner)
                    if found is None or len(found[1]) != 1 or found[1][0].kind != "assign" \
                            or found[1][0].index is not None:
                        break
                    owner, target = found[0], found[1][0].value
                if not isinstance(target, cst.Call):
                    break
                qn = m.qn(target.func, owner)
                if qn == "functools.partial":
                    inner = positional(target, 0)
                    if inner is not None and any(f is fn for f, _ in m.traced_analysis().callables(inner, owner)):
                        return target, owner
                    break
                if qn not in TRANSFORMS:
                    break
                target = positional(target, 0)
        return None

    def _partial_bound_kind(self, fn: "Function", name: str, r) -> Kind | None:
        """The kind of what `partial(fn, ...)` binds to `name` (None: the partial does not bind
        it, or fn was not handed over through a partial)."""
        found = self._partial_of(fn, r)
        if found is None:
            return None
        p, scope = found
        if any(a.star for a in p.args):
            return UNKNOWN
        for a in p.args[1:]:
            if a.keyword is not None and a.keyword.value == name:
                return self.kind(a.value, scope)
        bound = [a.value for a in p.args[1:] if a.keyword is None]
        params = [q for q in fn.params if q not in fn.star_params]
        if name in params and params.index(name) < len(bound):
            return self.kind(bound[params.index(name)], scope)
        return None

    def _partial_positionals(self, fn: "Function", r) -> int | None:
        """How many leading positional parameters a partial binds (0 without one; None: `*args`)."""
        found = self._partial_of(fn, r)
        if found is None:
            return 0
        p, _ = found
        if any(a.star for a in p.args):
            return None
        return sum(1 for a in p.args[1:] if a.keyword is None)

    def binding_kind(self, b: "Binding", owner: "Scope", depth: int = 0) -> Kind:
        if b.kind == "for" and b.value is not None:
            return self._loop_target_kind(b, owner, depth)
        if b.kind in ("except", "with"):
            return UNKNOWN
        return super().binding_kind(b, owner, depth)

    def _loop_target_kind(self, b: "Binding", owner: "Scope", depth: int) -> Kind:
        it = b.value
        if isinstance(it, cst.Call):
            qn = self.model.qn(it.func, owner)
            args = [a.value for a in it.args if a.keyword is None and not a.star]
            if qn == "builtins.range":
                return combine(self.kind(a, owner, depth) for a in args)
            if qn == "builtins.enumerate" and args:
                if b.index == 0:
                    return STATIC
                if b.index == 1:
                    return self._element_kind(args[0], owner, depth)
                return UNKNOWN
            if qn == "builtins.zip" and b.index is not None and b.index < len(args):
                return self._element_kind(args[b.index], owner, depth)
        if b.index is None:
            return self._element_kind(it, owner, depth)
        if self.kind(it, owner, depth) is TRACED and self.is_array(it, owner, depth):
            return TRACED  # `for a, b in pairs`: the items of a traced array's rows
        return UNKNOWN

    def _element_kind(self, it: cst.BaseExpression, scope: "Scope", depth: int) -> Kind:
        """The kind of the items of an iterable: static for static iterables; unknown for a
        traced one (rows of an array are traced, but keys of a dict pytree are not), except the
        leaves of a traced pytree (`tree_leaves(params)`), which are tracers."""
        if isinstance(it, cst.Call) and self.model.qn(it.func, scope) == "builtins.range":
            return combine(self.kind(a.value, scope, depth) for a in it.args)
        if isinstance(it, cst.Call) and self.model.qn(it.func, scope) in TREE_LEAVES:
            tree = positional(it, 0)
            return TRACED if tree is not None and self.kind(tree, scope, depth) is TRACED else UNKNOWN
        if isinstance(it, (cst.Tuple, cst.List)):
            return combine(self.kind(el.value, scope, depth) for el in it.elements)
        k = self.kind(it, scope, depth)
        if k is TRACED and self.is_array(it, scope, depth):
            return TRACED  # the rows of a traced array are tracers (its leading axis is static)
        if self._captured_device_array(it, scope):
            st = staging(self.model)
            if st.omnistaged(scope) and not st.compile_time_eval(it, scope):
                return TRACED  # the rows of a captured jax array are sliced out under the trace
        return STATIC if k is STATIC else UNKNOWN

    def is_array(self, e: cst.BaseExpression, scope: "Scope", depth: int = 0) -> bool:
        """Whether e is known to be an array (not a dict, a list or another pytree): what a jax
        array operation returns, an array method, view or index of an array, arithmetic on one,
        or a name every reaching binding of which is one (a parameter counts when annotated as
        an array, given a shape, or used as one: `x.shape`, `x.T`, `x[:, 0]`)."""
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        if depth > self.MAX_DEPTH:
            return False
        depth += 1
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None:
                return omnistaged_function(qn) and qn not in NOT_AN_ARRAY
            if isinstance(e.func, cst.Attribute) and e.func.attr.value in ARRAY_METHODS:
                return self.is_array(e.func.value, scope, depth)
            return False
        if isinstance(e, cst.Attribute):
            return e.attr.value in ("T", "mT", "real", "imag") and self.is_array(e.value, scope, depth)
        if isinstance(e, cst.Subscript):
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.BinaryOperation):
            if isinstance(e.operator, (cst.BitOr, cst.Add, cst.Multiply)):
                # `d1 | d2` merges dicts; `a + b`, `a * 2` join or repeat lists: both operands must be arrays
                return self.is_array(e.left, scope, depth) and self.is_array(e.right, scope, depth)
            return self.is_array(e.left, scope, depth) or self.is_array(e.right, scope, depth)
        if isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
            return self.is_array(e.expression, scope, depth)
        if not isinstance(e, cst.Name):
            return False
        found = m.bindings_at(e, scope)
        if found is None or not isinstance(found[0], Function) or not found[1]:
            return False
        owner, bindings = found
        for b in bindings:
            if b.kind == "param":
                if not self._param_is_array(owner, b.name):
                    return False
            elif b.kind in ("assign", "annassign", "walrus") and b.index is None and b.value is not None:
                if not self.is_array(b.value, owner, depth):
                    return False
            else:
                return False
        return True

    def _param_is_array(self, fn: "Function", name: str) -> bool:
        if name in fn.star_params:
            return False
        if self._array_annotated(fn, name):
            return True
        shape = self.model.shapes.param_shape(fn, name)
        if shape is not None and shape.rank != 0:
            return True
        for read in fn.reads:
            if read.name.value != name or self.model.bindings_at(read.name, fn) is None:
                continue
            parent = self.model.parent(read.name)
            if isinstance(parent, cst.Attribute) and parent.value is read.name and parent.attr.value in _ARRAY_ONLY:
                return True
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARRAY_ONLY_OPERATORS):
                return True  # a list, tuple or dict has no `-`, `/`, `**`, `@`
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
                return True
            if isinstance(parent, cst.Subscript) and parent.value is read.name and len(parent.slice) > 1 and any(
                    isinstance(el.slice, cst.Slice) or (isinstance(el.slice, cst.Index) and (
                        isinstance(el.slice.value, cst.Ellipsis) or
                        (isinstance(el.slice.value, cst.Name) and el.slice.value.value == "None")))
                    for el in parent.slice):
                return True
        return self._passed_an_array(fn, name)

    def _passed_an_array(self, fn: "Function", name: str) -> bool:
        """Whether a call of fn in this module (by its name) passes an array for `name`: a jax
        array operation's result, or a jax or NumPy array bound to a name (`f(jnp.ones(3))`,
        `f(X_TRAIN)`)."""
        m = self.model
        for site in m.index.calls:
            call = site.call
            if not isinstance(call.func, cst.Name) or call.func.value != fn.name or any(a.star for a in call.args):
                continue
            if m.function_named(call.func.value, site.scope) is not fn:
                continue
            arg = m.argument_for(call, fn, name)
            if arg is None:
                continue
            if isinstance(arg, cst.Call):
                qn = m.qn(arg.func, site.scope)
                if omnistaged_function(qn) and qn not in NOT_AN_ARRAY:
                    return True
            if m.device_arrays.is_array(arg, site.scope) or m.numpy_arrays.is_array(arg, site.scope):
                return True
        return False

    def _captured_device_array(self, e: cst.CSTNode, scope: "Scope") -> bool:
        """A name read in staged code that holds a concrete jax array bound outside traced code
        (`K = jnp.arange(3)` at module level): any jax operation on it there is staged out."""
        from jaxfuse_lint.model.scopes import Function

        if not isinstance(e, cst.Name) or not isinstance(scope, Function):
            return False
        found = self.model.bindings_at(e, scope)
        if found is None:
            return False
        owner, bindings = found
        if owner is scope or (isinstance(owner, Function) and self.model.is_traced(owner)):
            return False
        return self.model.device_arrays.binding_is_array(bindings, owner)

    def _operates_on_captured_array(self, e: cst.CSTNode, scope: "Scope") -> bool:
        """`K[0]`, `K > 0`, `-K`, `K.sum()` on a captured jax array in staged code: a tracer,
        though K itself is a concrete value (its `.shape`, `bool(K)`, `float(K)` are not)."""
        from jaxfuse_lint.model.scopes import Function

        if isinstance(e, cst.Subscript):
            operands = [e.value]
        elif isinstance(e, cst.BinaryOperation):
            operands = [e.left, e.right]
        elif isinstance(e, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in e.comparisons):
                return False
            operands = [e.left, *(c.comparator for c in e.comparisons)]
        elif isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
            operands = [e.expression]
        elif isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in ARRAY_METHODS:
            operands = [e.func.value]
        else:
            return False
        if not any(self._captured_device_array(o, scope) for o in operands):
            return False
        st = staging(self.model)
        return isinstance(scope, Function) and st.omnistaged(scope) and not st.compile_time_eval(e, scope)

    def _kind(self, e: cst.CSTNode, scope: "Scope", depth: int) -> Kind:
        if self._operates_on_captured_array(e, scope):
            return TRACED
        if isinstance(e, cst.Attribute):
            attr = e.attr.value
            if attr not in STATIC_ATTRIBUTES and attr not in ARRAY_VIEW_ATTRIBUTES and self.model.qn(e, scope) is None:
                # A field of a traced pytree may be declared static (flax `pytree_node=False`,
                # `eqx.field(static=True)`): only a static base is known to give a static field.
                base = self.kind(e.value, scope, depth)
                return STATIC if base is STATIC else UNKNOWN
        if isinstance(e, cst.Comparison) and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in e.comparisons):
            return STATIC  # `result is old_result`: object identity is a Python bool, even of tracers
        if isinstance(e, cst.Comparison) and any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in e.comparisons):
            return UNKNOWN  # `"w" in params`: membership in a pytree container is static
        if isinstance(e, cst.Comparison) and any(
                isinstance(x, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                for x in (e.left, *(c.comparator for c in e.comparisons))):
            return STATIC  # `jac == "fwd"`: an option compared with a string (no array is a string)
        if isinstance(e, cst.Comparison) and all(isinstance(c.operator, (cst.Equal, cst.NotEqual))
                                                 for c in e.comparisons) and any(
                isinstance(x, (cst.Tuple, cst.List, cst.Dict)) and not getattr(x, "elements", None)
                for x in (e.left, *(c.comparator for c in e.comparisons))):
            return STATIC  # `xs == ()`: a pytree container compared with an empty one
        return super()._kind(e, scope, depth)

    def _call_kind(self, e: cst.Call, scope: "Scope", depth: int) -> Kind:
        from jaxfuse_lint.model.scopes import Function

        qn = self.model.qn(e.func, scope)
        if qn in STATIC_RESULT_FUNCTIONS:
            return STATIC
        if omnistaged_function(qn) and isinstance(scope, Function) and staging(self.model).omnistaged(scope) \
                and not staging(self.model).compile_time_eval(e, scope):
            return TRACED  # omnistaging: staged out whatever its inputs are
        if (qn is not None and qn.startswith("jax.") and qn not in JNP_STATIC_FUNCTIONS
                and not qn.startswith(("jax.tree", "jax.debug", "jax.dtypes"))):
            # A jnp/lax result is derived from the traced arguments only if its inputs are.
            kinds = [self.kind(a.value, scope, depth) for a in e.args]
            return TRACED if TRACED in kinds else UNKNOWN
        if isinstance(e.func, cst.Call) and self.model.qn(e.func.func, scope) in TRANSFORMS:
            # `jax.value_and_grad(loss)(params, batch)`, `jax.vmap(f)(x)`: traced in, traced out.
            kinds = [self.kind(a.value, scope, depth) for a in e.args]
            return TRACED if TRACED in kinds else UNKNOWN
        if qn is None and isinstance(e.func, cst.Attribute) and e.func.attr.value not in ARRAY_METHODS:
            # `a.is_traced()`, `model.apply(...)`: a traced pytree may be any object.
            base = super()._call_kind(e, scope, depth)
            return UNKNOWN if base is TRACED else base
        return super()._call_kind(e, scope, depth)


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


__all__ = ["STAGING", "BATCHING", "Staging", "StagedValues", "option_calls", "options_understood", "own_nodes",
           "staging"]
