"""The JAX semantic model of one module: the single object every rule queries.

It builds the analyses and hands itself to each; they read it through protocols declared
below them (model/view.py's `ModelView`, extended next to each analysis that reads another
one through the model), which `SemanticModel` implements.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.core.external_map import CALLS_PREFIX
from jaxfuse_lint.model.api import LOOPS
from jaxfuse_lint.model.flow import Flow
from jaxfuse_lint.model.names import NameResolver
from jaxfuse_lint.model.return_shapes import split_external
from jaxfuse_lint.model.scopes import Binding, ClassInfo, Function, ModuleIndex, Scope, build_index
from jaxfuse_lint.model.shape_analysis import ShapeAnalysis
from jaxfuse_lint.model.shapes import Shape
from jaxfuse_lint.model.traced import TracedAnalysis, TracedRegions, TraceReason, _unbound_call, keyword, positional
from jaxfuse_lint.model.values import Kind, ValueAnalysis

if TYPE_CHECKING:
    from jaxfuse_lint.model.device_arrays import DeviceArrays
    from jaxfuse_lint.model.host_code import HostCode
    from jaxfuse_lint.model.static_use import StaticUses
    from jaxfuse_lint.model.dtypes import DType, DTypeAnalysis
    from jaxfuse_lint.model.numpy_values import NumpyArrays
    from jaxfuse_lint.model.runtime_facts import RuntimeFacts


@dataclass(eq=False)
class LoopSite:
    """A lax loop call and the functions it runs once per iteration."""

    call: cst.Call
    qualified_name: str
    scope: Scope
    bodies: list[Function]


class SemanticModel:
    def __init__(self, module: cst.Module, jax_modules: tuple[str, ...] = ("jax",),
                 external_traced: dict[str, str] | None = None, runtime: "RuntimeFacts | None" = None,
                 recorded_dtypes: dict[str, dict[str, str]] | None = None) -> None:
        self.module = module
        self.index: ModuleIndex = build_index(module)
        self.resolver = NameResolver(self.index.scope, jax_modules)
        self.values = ValueAnalysis(self)
        self.shapes = ShapeAnalysis(self)
        # Functions traced from other modules of the project: {function name: why}; and the
        # return shapes of other modules' functions this one calls (model/return_shapes.py).
        self.external_traced, self.external_shapes = split_external(external_traced)
        # The file's dotted module name (or a callable giving it), set by the engine.
        self.module_name = None
        # How often the project's other modules call this module's functions (model/call_frequency.py).
        self.external_calls = {k[len(CALLS_PREFIX):]: v for k, v in self.external_traced.items()
                               if k.startswith(CALLS_PREFIX)}
        if self.external_calls:
            self.external_traced = {k: v for k, v in self.external_traced.items() if not k.startswith(CALLS_PREFIX)}
        # What a recorded run saw this module's text do (model/runtime_facts.py), or None.
        self.runtime = runtime
        # Parameter dtypes recorded at run time: {function display name: {parameter: dtype name}}.
        self.recorded_dtypes = recorded_dtypes or {}
        # Library mode: (module name, `assume-traced` patterns), set by the engine (model/assumed.py).
        self.assume_traced: tuple[str, tuple[str, ...]] | None = None

    # -- structure ------------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.index.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.index.parents.get(node)
        while p is not None:
            yield p
            p = self.index.parents.get(p)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self.index.scope_of_node.get(node, self.index.scope)

    def function_of(self, node: cst.CSTNode) -> Function | None:
        """The innermost def/lambda whose body contains node."""
        s: Scope | None = self.scope_of(node)
        while s is not None and not isinstance(s, Function):
            s = s.parent
        return s

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement (simple or compound) that contains node."""
        n: cst.CSTNode | None = node
        while n is not None and not isinstance(n, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            n = self.index.parents.get(n)
        return n

    # -- names ----------------------------------------------------------------------------------
    def qn(self, expr: cst.CSTNode | None, scope: Scope) -> str | None:
        if expr is None:
            return None
        return self.resolver.qualified_name(expr, scope)

    def lookup(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        return self.resolver.lookup(name, scope)

    @cached_property
    def flow(self) -> Flow:
        return Flow(self)

    def bindings_at(self, name: cst.Name, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        """Like `lookup`, but for a read in a function's own body only the bindings that may
        reach it (model/flow.py); all of them where the flow is unknown."""
        found = self.resolver.lookup(name.value, scope)
        if found is None:
            return None
        owner, bindings = found
        if len(bindings) > 1 and any(b.kind == "for" and isinstance(b.node, cst.CompFor) for b in bindings):
            own = self._comprehension_bindings(name, bindings)
            if own:
                return owner, own
        if owner is scope and isinstance(owner, Function) and len(bindings) > 1:
            reaching = self.flow.reaching(name, owner)
            if reaching:
                return owner, list(reaching)
        return found

    def _comprehension_bindings(self, name: cst.Name, bindings: list[Binding]) -> list[Binding] | None:
        """A read inside a comprehension that binds the name sees only the comprehension's own
        variable (`tuple(i for i in range(n) if i != axis)` inside `def body(i, x)`). The first
        `for`'s iterable is evaluated outside the comprehension."""
        child: cst.CSTNode = name
        for a in self.ancestors(name):
            if isinstance(a, (cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Module)):
                return None
            if isinstance(a, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                fors = []
                f = a.for_in
                while f is not None:
                    fors.append(f)
                    f = f.inner_for_in
                if child is fors[0] and self._within(name, fors[0].iter):
                    child = a
                    continue
                own = [b for b in bindings if b.kind == "for" and any(b.node is f for f in fors)]
                if own:
                    return own
            child = a
        return None

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        if node is container:
            return True
        return any(a is container for a in self.ancestors(node))

    def narrowed(self, name: cst.Name, scope: Scope) -> str | None:
        """`flow.PYTHON` / `flow.CONTAINER` where an isinstance / `is None` test narrows this read."""
        if isinstance(scope, Function):
            return self.flow.narrowed(name, scope)
        return None

    def function_named(self, name: str, scope: Scope) -> Function | None:
        """The def (or lambda assigned to a name) that `name` refers to from `scope`, if unique."""
        found = self.resolver.lookup(name, scope)
        if found is None:
            return None
        owner, bindings = found
        fns = [b.function for b in bindings if b.function is not None]
        if len(fns) == 1 and len(bindings) == 1:
            return fns[0]
        if fns and all(b.kind == "def" for b in bindings):
            return fns[-1]  # redefinitions: the last one wins at call time
        if fns and bindings[0].kind == "def" and all(
                b.kind == "def" or self.rewraps(b, owner) for b in bindings):
            # `f = jax.jit(f)` (at module level, in a function, in a loop): the name still runs
            # the def, through the transform.
            return fns[-1]
        return None

    def functions_at(self, name: cst.Name, scope: Scope) -> list[Function] | None:
        """The defs (or lambdas assigned to a name) this read of `name` may run, flow-sensitively:
        in a function's own body and at module level only the bindings that reach the read (the
        first of two nested `def step` for a `jax.jit(step)` between them; the def a notebook's
        earlier cell left, not a later cell's redefinition), through `f = jax.jit(f)`; read from a
        nested function, what the enclosing scope leaves once it has run. [] when a binding that
        is not a function may reach it; None when the flow is unknown (see `function_named`)."""
        found = self.resolver.lookup(name.value, scope)
        if found is None:
            return None
        owner, bindings = found
        if len(bindings) == 1:
            return None
        if owner is scope:
            reaching = self.flow.reaching_in(name, owner)
        elif owner is self.index.scope:
            reaching = self._module_bindings_when_run(name.value, scope)
        elif isinstance(owner, Function):
            reaching = self.flow.exit_bindings(name.value, owner)
        else:
            return None
        if not reaching:
            return None
        out: list[Function] = []
        for b in reaching:
            if b.function is not None:
                if b.function not in out:
                    out.append(b.function)
                continue
            inner = self._rewrapped_read(b, owner)
            if inner is None:
                return []
            fns = self.functions_at(inner, owner) if inner is not name else None
            if fns is None:
                fn = self.function_named(name.value, owner)
                fns = [fn] if fn is not None else []
            out.extend(f for f in fns if f not in out)
        return out

    def _module_bindings_when_run(self, name: str, scope: Scope) -> tuple[Binding, ...] | None:
        """The module-level bindings of `name` a function (defined in `scope`) reads when it runs:
        where its module-level function is used only by the module's own statements (a notebook's
        cells: `g(1.0)` in cell 3 runs before cell 4 redefines `f`), the binding each use follows;
        else what the module leaves once it has run."""
        module = self.index.scope
        top: Scope | None = scope
        while top is not None and top.parent is not module:
            top = top.parent
        at_end = self.flow.exit_bindings(name, module)
        if not isinstance(top, Function) or top.is_lambda:
            return at_end
        order = self._statement_order()
        uses = self.index.reads_named(top.name)
        if not uses or any(r.scope is not module for r in uses):
            return at_end  # called from functions too (or never here): when, is not known
        bindings = self.index.scope.bindings.get(name, [])
        placed = [(self._top_statement(b.node, order), b) for b in bindings]
        if any(i is None for i, _ in placed):
            return at_end
        out: list[Binding] = []
        for use in uses:
            at = self._top_statement(use.name, order)
            before = [(i, b) for i, b in placed if at is not None and i < at]
            if not before:
                continue
            last = max(i for i, _ in before)
            out.extend(b for i, b in before if i == last and b not in out)
        return tuple(out) or at_end

    def _statement_order(self) -> dict[int, int]:
        """id of each top-level statement -> its position (made once: asked per function, a dict
        of the whole module each time made a long file's analysis quadratic)."""
        order = self.__dict__.get("_top_order")
        if order is None:
            order = self.__dict__["_top_order"] = {id(stmt): i for i, stmt in enumerate(self.index.module.body)}
        return order

    def _top_statement(self, node: cst.CSTNode, order: dict[int, int]) -> int | None:
        """The position of the module's top-level statement that holds node."""
        n: cst.CSTNode | None = node
        while n is not None and id(n) not in order:
            n = self.index.parents.get(n)
        return order.get(id(n)) if n is not None else None

    def _rewrapped_read(self, b: Binding, owner: Scope) -> cst.Name | None:
        """The read of the name itself inside `f = jax.jit(f)`-style rebinding (None: not one)."""
        if not self.rewraps(b, owner):
            return None
        value: cst.BaseExpression | None = b.value
        for _ in range(6):
            if isinstance(value, cst.Name):
                return value
            if not isinstance(value, cst.Call):
                return None
            value = positional(value, 0) or keyword(value, "fun") or keyword(value, "f")
        return None

    def rewraps(self, b: Binding, owner: Scope) -> bool:
        """Whether binding `b` rebinds its name to a transform of itself: `f = jax.jit(f)`,
        `f = jit(f, static_argnums=1)`, `f = jax.jit(jax.vmap(f))`, `f = partial(jax.jit,
        static_argnums=0)(f)`."""
        if b.kind != "assign" or b.index is not None or not isinstance(b.value, cst.Call):
            return False
        from jaxfuse_lint.model.api import TRANSFORMS

        value: cst.BaseExpression | None = b.value
        for _ in range(6):
            if isinstance(value, cst.Name):
                return value.value == b.name
            if not isinstance(value, cst.Call):
                return False
            func = value.func
            qn = self.qn(func, owner)
            if qn not in TRANSFORMS:
                if not (isinstance(func, cst.Call) and self.qn(func.func, owner) == "functools.partial"
                        and self.qn(positional(func, 0), owner) in TRANSFORMS):
                    return False
            value = positional(value, 0) or keyword(value, "fun") or keyword(value, "f")
        return False

    def method_of(self, scope: Scope, name: str) -> Function | None:
        s: Scope | None = scope
        while s is not None and not isinstance(s, ClassInfo):
            s = s.parent
        if s is None:
            return None
        bindings = s.bindings.get(name, [])
        fns = [b.function for b in bindings if b.function is not None]
        return fns[-1] if fns else None

    def argument_for(self, call: cst.Call, fn: Function, name: str) -> cst.BaseExpression | None:
        """The argument expression a call passes for fn's parameter `name`."""
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return a.value
        params = fn.params
        if fn.cls is not None and params and params[0] in ("self", "cls") and not _unbound_call(fn, call):
            params = params[1:]
        if name not in params:
            return None
        idx = params.index(name)
        if name in fn.star_params:
            return None
        return positional(call, idx)

    # -- tracing ----------------------------------------------------------------------------------
    def traced_analysis(self) -> TracedAnalysis:
        """The analysis behind `traced` (its `callables`: which functions an expression runs)."""
        found = self.__dict__.get("_traced_analysis")
        if found is None:
            found = self.__dict__["_traced_analysis"] = TracedAnalysis(self)
        return found

    @cached_property
    def traced(self) -> TracedRegions:
        regions = self.traced_analysis().run(self.external_traced)
        if self.runtime is not None:
            self.runtime.add_reasons(self, regions)
        return regions

    def is_traced(self, fn: Function | None) -> bool:
        return fn is not None and fn in self.traced.reasons

    def is_kernel(self, fn: Function | None) -> bool:
        """A Pallas kernel body (or something it calls): traced, but not an XLA program."""
        return fn is not None and fn in self.traced.kernels

    def is_xla_traced(self, fn: Function | None) -> bool:
        """Traced into an XLA program: where the fusion rules apply."""
        return self.is_traced(fn) and not self.is_kernel(fn)

    def is_traced_scope(self, scope: Scope) -> bool:
        s: Scope | None = scope
        while s is not None and not isinstance(s, Function):
            s = s.parent
        return s is not None and s in self.traced.reasons

    def traced_function_of(self, node: cst.CSTNode) -> Function | None:
        fn = self.function_of(node)
        return fn if self.is_traced(fn) else None

    def trace_reason(self, fn: Function) -> TraceReason | None:
        reasons = self.traced.reasons.get(fn)
        if not reasons:
            return None
        order = {"decorator": 0, "transform": 1, "control-flow": 2, "driver": 2, "external": 3, "assumed": 3,
                 "called": 4, "entry": 4, "passed": 5, "framework": 6}
        return min(reasons, key=lambda r: order.get(r.kind, 9))

    # -- loops -----------------------------------------------------------------------------------
    @cached_property
    def loop_sites(self) -> list[LoopSite]:
        from jaxfuse_lint.model.traced import TracedAnalysis as _TA

        helper = _TA(self)
        out = []
        for site in self.index.calls:
            qn = self.qn(site.call.func, site.scope)
            if qn in LOOPS:
                bodies = []
                for arg in helper.control_flow_functions(site.call, qn):
                    for fn, _ in helper.callables(arg, site.scope):
                        bodies.append(fn)
                out.append(LoopSite(site.call, qn, site.scope, bodies))
        return out

    @cached_property
    def numpy_arrays(self) -> "NumpyArrays":
        from jaxfuse_lint.model.numpy_values import NumpyArrays

        return NumpyArrays(self)

    @cached_property
    def device_arrays(self) -> "DeviceArrays":
        from jaxfuse_lint.model.device_arrays import DeviceArrays

        return DeviceArrays(self)

    @cached_property
    def static_uses(self) -> "StaticUses":
        """Where values flow: static uses (shapes, axes, Python control...) or the program (model/static_use.py)."""
        from jaxfuse_lint.model.static_use import static_uses

        return static_uses(self)

    @cached_property
    def host_code(self) -> "HostCode":
        """Which functions run on the host, on concrete values: host callbacks, `ensure_compile_time_eval`
        (model/host_code.py)."""
        from jaxfuse_lint.model.host_code import host_code

        return host_code(self)

    # -- values -----------------------------------------------------------------------------------
    def kind(self, expr: cst.CSTNode, scope: Scope) -> Kind:
        return self.values.kind(expr, scope)

    def shape(self, expr: cst.CSTNode, scope: Scope) -> Shape | None:
        return self.shapes.shape(expr, scope)

    def runtime_param_shape(self, fn: Function, name: str) -> Shape | None:
        """The shape a recorded run saw for fn's parameter `name` (model/runtime_facts.py)."""
        return self.runtime.param_shape(self, fn, name) if self.runtime is not None else None
    @cached_property
    def dtypes(self) -> "DTypeAnalysis":
        """Dtypes as JAX computes them by default (x64 off); `dtypes_x64` with x64 on."""
        from jaxfuse_lint.model.dtypes import DTypeAnalysis

        return DTypeAnalysis(self, x64=False, recorded=self.recorded_dtypes)

    @cached_property
    def dtypes_x64(self) -> "DTypeAnalysis":
        from jaxfuse_lint.model.dtypes import DTypeAnalysis

        return DTypeAnalysis(self, x64=True, recorded=self.recorded_dtypes)

    def dtype(self, expr: cst.CSTNode, scope: Scope, x64: bool = False) -> "frozenset[DType] | None":
        """The dtypes expr may have (see model/dtypes.py); None when unknown."""
        return (self.dtypes_x64 if x64 else self.dtypes).dtype(expr, scope)

    def axis_size(self, expr: cst.CSTNode, scope: Scope, axis: int) -> int | None:
        s = self.shapes.shape(expr, scope)
        return s.size(axis) if s is not None else None


__all__ = ["SemanticModel", "LoopSite", "Kind", "Shape", "keyword", "positional"]
