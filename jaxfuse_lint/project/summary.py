"""The summary of one parsed module: what it traces in other modules of the project.

From the parse the main pass needs anyway, what a module traces in other modules
unconditionally (`base`: `jax.jit(other.f)`, calls to `other.g` from its own traced code),
which of those routes end in a program it compiles (`compiled`), the return shapes of its
top-level functions (`shapes`) and, for each of its top-level functions, what it would trace
if another module traced it (`edges`). A summary depends on the file's text alone (never on
other files), so it is cached with the file.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

from jaxfuse_lint.core.external_map import CALL_PATTERNS_PREFIX, PARAMS_TRACED
from jaxfuse_lint.core.json_types import str_list, str_map, str_tuple, typed
from jaxfuse_lint.project.module_names import absolute, package_of

# A warm run imports this module (for `Summary.from_json`) without libcst or the model: the
# summarizer imports them when it runs.
if TYPE_CHECKING:
    import libcst as cst

    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.semantic import SemanticModel


@functools.cache
def _entry_attributes() -> dict[str, int]:
    """Entry points of framework Modules that run `__call__` (`model.apply(variables, x)`)."""
    from jaxfuse_lint.model.routes import MODULE_BASES

    return {attr: offset for entries in MODULE_BASES.values() for attr, offset in entries}


Ref = tuple[str, str, str]  # (absolute qualified name, kind, detail: the transform or the traced caller)


@dataclass
class Summary:
    """What one module traces in the rest of the project. Independent of other files."""

    defs: list[str] = field(default_factory=list)  # top-level functions and `Class.method`s
    base: list[Ref] = field(default_factory=list)  # traced whatever other modules do
    # key -> (local keys it makes traced, refs it makes traced), for keys not compiled locally
    edges: dict[str, tuple[list[str], list[Ref]]] = field(default_factory=dict)
    # Return shapes of its top-level functions (model/return_shapes.py).
    shapes: dict[str, str] = field(default_factory=dict)
    # The base refs whose route ends in a program this module compiles (`jax.jit(other.f)`, or a
    # call from a function under jit); the others are traced eagerly here (`jax.jacrev`,
    # `jax.vmap`, a lax loop outside jit). An edge ref is compiled when its key is.
    compiled: list[Ref] = field(default_factory=list)
    # Its host code's calls of the project's functions: (absolute qualified name, how often the
    # call runs as this module shows it: same (many times, with the same arguments) | many | once
    # | unknown, a phrase naming the caller, the calling top-level function's key or "")
    # (model/call_frequency.py reads them through the external map: JF302's evidence).
    calls: list[tuple[str, str, str, str]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"defs": self.defs, "base": [list(r) for r in self.base],
                "edges": {k: [loc, [list(r) for r in refs]] for k, (loc, refs) in self.edges.items()},
                "shapes": self.shapes, "compiled": [list(r) for r in self.compiled],
                "calls": [list(r) for r in self.calls]}

    @classmethod
    def from_json(cls, data: dict) -> "Summary":
        """Inverse of to_json; ValueError if any value has the wrong type (a damaged cache entry)."""
        typed(data, dict, "summary")

        def refs(value, what: str) -> list[Ref]:
            return [str_tuple(r, 3, what) for r in typed(value, list, what)]

        edges = {}
        for k, v in typed(data["edges"], dict, "edges").items():
            if type(v) is not list or len(v) != 2:
                raise ValueError("edges: [keys, refs] expected")
            edges[k] = (list(str_list(v[0], "edges")), refs(v[1], "edges"))
        return cls(
            defs=list(str_list(data["defs"], "defs")),
            base=refs(data["base"], "base"),
            edges=edges,
            shapes=dict(str_map(data.get("shapes", {}), "shapes")),
            compiled=refs(data.get("compiled", []), "compiled"),
            calls=[str_tuple(r, 4, "calls") for r in typed(data.get("calls", []), list, "calls")],
        )


class _Summarizer:
    def __init__(self, model: "SemanticModel", module: str | None, is_package: bool, label: str) -> None:
        from jaxfuse_lint.model.traced import TracedAnalysis

        self.model = model
        self.module = module or label  # how messages name this module
        self.package = package_of(module, is_package) if module else ""
        self.helper = TracedAnalysis(model)

    def ref(self, expr: cst.BaseExpression, scope: "Scope") -> str | None:
        """The absolute qualified name an imported name (or attribute of one) stands for."""
        import libcst as cst

        if isinstance(expr, cst.Attribute):
            base = self.ref(expr.value, scope)
            return f"{base}.{expr.attr.value}" if base else None
        if not isinstance(expr, cst.Name):
            return None
        found = self.model.lookup(expr.value, scope)
        if found is None:
            return None
        names = {self._import_target(b.node, expr.value) if b.kind == "import" else None for b in found[1]}
        if len(names) != 1:
            return None
        return names.pop()

    def _import_target(self, node: cst.CSTNode, local: str) -> str | None:
        import libcst as cst
        from jaxfuse_lint.model.scopes import dotted_name

        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name) or ""
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    if alias.asname.name.value == local:
                        return full
                elif full.split(".")[0] == local:
                    return local
            return None
        if not isinstance(node, cst.ImportFrom) or isinstance(node.names, cst.ImportStar):
            return None
        base = absolute(len(node.relative), dotted_name(node.module) or "" if node.module else "", self.package)
        if base is None:
            return None
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            bound = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            if bound == local:
                return f"{base}.{name}"
        return None

    def targets(self, expr: cst.BaseExpression | None, scope: "Scope") -> Iterator[str]:
        """Imported functions an argument of a transform stands for (`other.f`, `partial(f, ...)`)."""
        from jaxfuse_lint.model.api import TRANSFORMS
        import libcst as cst
        from jaxfuse_lint.model.traced import positional

        if expr is None:
            return
        r = self.ref(expr, scope)
        if r is not None:
            yield r
        elif isinstance(expr, cst.Call):
            fqn = self.model.qn(expr.func, scope)
            if fqn == "functools.partial" or fqn in TRANSFORMS:
                yield from self.targets(positional(expr, 0), scope)

    def instance_refs(self, expr: cst.BaseExpression, scope: "Scope", depth: int = 0) -> Iterator[tuple[str, int | None]]:
        """Methods of another module's classes that calling `expr` runs: `model(x)`,
        `models.Block(3)(x)`, `model.apply(variables, x)` (a linen Module's `__call__`),
        `state.apply_fn(...)` where this module stored `model.apply` under that name."""
        from jaxfuse_lint.model.routes import FORWARDED_ATTRIBUTES
        import libcst as cst

        if depth > 3:
            return
        if isinstance(expr, cst.Call):
            cls = self.ref(expr.func, scope)
            if cls is not None and self.model.qn(expr.func, scope) is None:
                yield f"{cls}.__call__", 0
            return
        if isinstance(expr, cst.Name):
            cls = self.imported_instance(expr, scope)
            if cls is not None:
                yield f"{cls}.__call__", 0
            return
        if not isinstance(expr, cst.Attribute):
            return
        attr = expr.attr.value
        cls = self.imported_instance(expr.value, scope)
        if cls is not None:
            yield f"{cls}.{attr}", 0
            if attr in _entry_attributes():
                yield f"{cls}.__call__", _entry_attributes()[attr]
            return
        if attr in FORWARDED_ATTRIBUTES and self.model.qn(expr, scope) is None:
            for value in self.helper._forwarded_values(attr):
                yield from self.instance_refs(value, self.model.scope_of(value), depth + 1)

    def args_marker(self, call: cst.Call, fn: "Function", offset: int | None) -> str:
        """"\nargs=T,U" (tracer / unknown) for the positional arguments a staged caller passes
        after the entry point's own `offset` leading ones; "" when they are not known."""
        from jaxfuse_lint.model.values import Kind
        from jaxfuse_lint.model.staging import staging as staging_of

        if offset is None or any(a.star for a in call.args) or not call.args:
            return ""
        values = self.local_values()
        if values is None or not staging_of(values.model).is_staged(fn):
            return ""
        args = [a.value for a in call.args if a.keyword is None][offset:]
        if not args:
            return ""
        kinds = ["T" if values.kind(a, fn) is Kind.TRACED else "U" for a in args]
        return "\nargs=" + ",".join(kinds) if "T" in kinds else ""

    def local_values(self):
        """The staged value analysis of this module on its own (no other module's facts, so the
        summary depends on the file's text alone)."""
        from jaxfuse_lint.model.staged_values import staged_values

        if "_values" not in self.__dict__:
            self._values = None
            if not self.model.external_traced:
                self._values = staged_values(self.model)
        return self._values

    def imported_instance(self, expr: cst.BaseExpression, scope: "Scope") -> str | None:
        """The qualified name of the imported class `expr` is an instance of: `model = MLP()`,
        a parameter annotated `model: MLP`, `self.layer` set to `Block(...)`."""
        import libcst as cst

        m = self.model
        values: list[tuple[cst.BaseExpression, "Scope"]] = []
        if isinstance(expr, cst.Name):
            found = m.lookup(expr.value, scope)
            if found is None or len(found[1]) != 1:
                return None
            b = found[1][0]
            if b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                values.append((b.value, found[0]))
            elif b.kind == "param" and isinstance(b.node, cst.Param) and b.node.annotation is not None:
                owner = found[0].parent or m.index.scope
                return self.ref(b.node.annotation.annotation, owner)
        elif isinstance(expr, cst.Attribute):
            ci = self.helper.instances.instance_class(expr.value, scope)
            if ci is not None:
                for v in self.helper.instances.attribute_values(ci).get(expr.attr.value, []):
                    if isinstance(v, cst.Annotation):
                        return self.ref(v.annotation, ci.parent or m.index.scope)
                    values.append((v, m.scope_of(v)))
        refs = {self.ref(v.func, owner) if isinstance(v, cst.Call) else None for v, owner in values}
        return refs.pop() if len(refs) == 1 else None

    def spread(self, fn: "Function") -> tuple[list["Function"], list[tuple[str, str]]]:
        """Where tracing goes from fn, as TracedAnalysis.run spreads it: local functions and
        imported names that fn calls or hands to other calls."""
        from jaxfuse_lint.model.api import CALLBACKS

        from jaxfuse_lint.model.evidence import call_patterns

        m, helper = self.model, self.helper
        local: list[Function] = []
        refs: list[tuple[str, str]] = []
        for site in fn.calls:
            call = site.call
            if m.qn(call.func, fn) in CALLBACKS:
                continue
            if m.host_code.at_compile_time(call, fn):
                continue  # under `jax.ensure_compile_time_eval()`: run eagerly on concrete values
            local.extend(callee for callee, _ in helper.callables(call.func, fn, direct_only=True))
            r = self.ref(call.func, fn)
            if r is not None:
                refs.append((r, _with_calls("called" + self.args_marker(call, fn, 0), call_patterns([(call, fn)]))))
            for r, offset in self.instance_refs(call.func, fn):
                code = " ".join(m.module.code_for_node(call.func).split())[:40]
                refs.append((r, f"entry:{code}" + self.args_marker(call, fn, offset)))
            for a in call.args:
                local.extend(c for c, _ in helper.callables(a.value, fn, direct_only=True) if c is not fn)
                r = self.ref(a.value, fn)
                if r is not None:
                    refs.append((r, "passed"))
        for nested in fn.nested:
            if nested.is_lambda and not helper._is_callback_arg(nested, fn):
                local.append(nested)
        return local, refs

    def transform_patterns(self, call: cst.Call) -> list[str]:
        """The argument patterns of the calls that run what a transform call makes ([]: not known)."""
        from jaxfuse_lint.model.evidence import call_patterns, transform_calls

        found = transform_calls(self.model, call)
        return call_patterns(found) if found else []

    def run(self) -> Summary:
        from jaxfuse_lint.model.api import CONTROL_FLOW
        from jaxfuse_lint.model.traced import TracedAnalysis
        from jaxfuse_lint.model.traced import keyword
        from jaxfuse_lint.model.return_shapes import local_return_shapes
        from jaxfuse_lint.model.traced import positional
        from jaxfuse_lint.model.routes import route
        from jaxfuse_lint.model.api import COMPILING
        from jaxfuse_lint.model.staging import CompiledFunctions

        m = self.model
        index = m.index
        keys: dict[Function, str] = {}
        for fn in index.functions:
            if fn.parent is index.scope or (fn.cls is not None and fn.cls.parent is index.scope):
                keys[fn] = fn.display_name
        local_traced = m.traced.reasons if not m.external_traced else TracedAnalysis(m).run(None).reasons
        out = Summary(defs=sorted(set(keys.values())))
        base: set[Ref] = set()
        compiled: set[Ref] = set()
        compiled_here = CompiledFunctions(m, local_traced)

        # Transforms and lax control flow applied to imported functions, anywhere in the module.
        for site in index.calls:
            call = site.call
            t = self.helper.transform_of(call.func, site.scope)
            if t is not None and (t[1] is None or t[1] is not call):
                target = positional(call, 0) or keyword(call, "fun") or keyword(call, "f")
                for r in self.targets(target, site.scope):
                    direct = self.ref(target, site.scope) == r
                    detail = t[0] + transform_marker(t[0], t[1], call, direct)
                    if direct:  # the calls that run it here, for the other module to check (model/evidence.py)
                        detail = _with_calls(detail, self.transform_patterns(call))
                    ref = (r, "transform", detail)
                    base.add(ref)
                    if t[0] in COMPILING or compiled_here(m.function_of(call)):
                        compiled.add(ref)
                continue
            qn = m.qn(call.func, site.scope)
            if qn in CONTROL_FLOW:
                rt = route(qn)
                marker = PARAMS_TRACED if rt is None or rt.traced_params is None else ""
                for arg in self.helper.control_flow_functions(call, qn):
                    for r in self.targets(arg, site.scope):
                        ref = (r, "control-flow", qn + (marker if self.ref(arg, site.scope) == r else ""))
                        base.add(ref)
                        if compiled_here(m.function_of(call)):
                            compiled.add(ref)

        # Imported functions that this module's traced code calls or passes on.
        for fn in local_traced:
            _, refs = self.spread(fn)
            caller = self.caller_name(fn, keys)
            made = {_with_marker(r, kind, caller) for r, kind in refs}
            base.update(made)
            if compiled_here(fn):
                compiled.update(made)
        out.base = sorted(base)
        out.compiled = sorted(compiled)

        # What each top-level function not compiled here would trace if another module traced it
        # (or compiled it: a function this module only differentiates can be jitted elsewhere).
        for fn, key in keys.items():
            if compiled_here(fn):
                continue
            caller = f"{self.module}.{key}"
            seen = {fn}
            stack = [fn]
            local_keys: set[str] = set()
            refs_out: set[Ref] = set()
            while stack:
                cur = stack.pop()
                callees, refs = self.spread(cur)
                refs_out.update(_with_marker(r, kind, caller) for r, kind in refs)
                for callee in callees:
                    if callee in seen or compiled_here(callee):
                        continue
                    seen.add(callee)
                    if callee in keys:
                        local_keys.add(keys[callee])
                    else:
                        stack.append(callee)
            if local_keys or refs_out:
                out.edges[key] = (sorted(local_keys), sorted(refs_out))
        out.shapes = local_return_shapes(m)
        out.calls = self.host_calls(local_traced, keys)
        return out

    def host_calls(self, local_traced, keys: dict["Function", str]) -> list[tuple[str, str, str, str]]:
        """The calls this module's host code makes of functions it imports from outside the
        standard library and the well-known packages (the project's own, as far as a summary
        can tell), each with how often it runs as this module shows it, from this file alone."""
        import libcst as cst

        from jaxfuse_lint.model.call_frequency import MANY, ONCE, frequency
        from jaxfuse_lint.model.compile_cache import compiled_once_per_key
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        out: set[tuple[str, str, str, str]] = set()
        memo: dict[int, str] = {}

        def traced_scope(scope) -> bool:
            while scope is not None and not isinstance(scope, Function):
                scope = scope.parent
            return scope is not None and scope in local_traced

        for site in m.index.calls:
            if traced_scope(site.scope):
                continue
            refs = [r for r in (self.ref(site.call.func, site.scope),) if r is not None]
            if isinstance(site.call.func, cst.Attribute) and not refs:
                refs = [r for r, _ in self.instance_refs(site.call.func, site.scope)]
            refs = [r for r in refs if not _outside_project(r)]
            if not refs:
                continue
            caller = self.caller_name(site.scope, keys) if isinstance(site.scope, Function) else self.module
            if site.loop is not None and not compiled_once_per_key(m, site.call, site.scope):
                # "same": the same arguments on every iteration; "many": arguments the loop changes.
                how = "many" if self._arguments_vary(site, loops_only=True) else "same"
                detail = f"in a loop in `{caller}`"
            elif not isinstance(site.scope, Function):
                how, detail = "once", f"at module level in `{self.module}`"
            else:
                key = id(site.scope)
                if key not in memo:
                    f = frequency(m, site.scope, traced=local_traced, project=False)
                    memo[key] = "many" if f.kind == MANY else "once" if f.kind == ONCE else "unknown"
                how = memo[key]
                detail = f"in `{caller}`" + (", which runs many times" if how == "many" else "")
                if how == "many" and not self._arguments_vary(site, loops_only=False):
                    how = "same"  # `get_basis(3)` in a function that runs per frame
            key = keys.get(site.scope, "") if isinstance(site.scope, Function) else ""
            out.update((r, how, detail, key) for r in refs)
        return sorted(out)

    def _arguments_vary(self, site, loops_only: bool) -> bool:
        """Whether a call's arguments read a name the loops around it bind (`loops_only`), or any
        parameter or local of the function it is in: then each run may pass other values."""
        import libcst as cst

        from jaxfuse_lint.model.scopes import PYTHON_LOOPS, walk

        m = self.model
        loops = []
        for a in m.ancestors(site.call):
            if a is site.scope.node:
                break
            if isinstance(a, PYTHON_LOOPS):
                loops.append(a)
        for arg in site.call.args:
            if arg.star:
                return True
            for n in walk(arg.value):
                if not isinstance(n, cst.Name):
                    continue
                found = m.lookup(n.value, m.scope_of(n))
                if found is None:
                    continue
                if not loops_only and found[0] is not m.index.scope:
                    return True
                if any(b.node is loop or any(x is loop for x in m.ancestors(b.node))
                       for b in found[1] for loop in loops):
                    return True
        return False

    def caller_name(self, fn: "Function", keys: dict["Function", str]) -> str:
        f: Function | None = fn
        while f is not None:
            if f in keys:
                return f"{self.module}.{keys[f]}"
            f = next(f.enclosing_functions(), None)
        return self.module


@functools.cache
def _well_known_roots() -> frozenset[str]:
    import sys

    from jaxfuse_lint.model.routes import frameworks

    return frozenset(sys.stdlib_module_names) | frozenset(frameworks()) | frozenset({
        "jax", "jaxlib", "numpy", "scipy", "numpyro", "chex", "jaxtyping", "jraph", "orbax", "tensorflow",
        "tensorflow_probability", "torch", "matplotlib", "pandas", "sklearn", "absl", "ml_collections", "tqdm",
        "wandb", "einops", "pytest", "hypothesis", "PIL", "h5py", "yaml"})


def _outside_project(ref: str) -> bool:
    """A name from the standard library or a well-known package: not one of the project's."""
    return ref.split(".", 1)[0] in _well_known_roots()


def _with_calls(text: str, patterns: list[str]) -> str:
    """`text` with a `calls=` word on its marker line (nothing when no pattern is known)."""
    if not patterns:
        return text
    word = CALL_PATTERNS_PREFIX + "|".join(patterns)
    return text + (" " if "\n" in text else "\n") + word


def _with_marker(ref: str, kind: str, detail: str) -> Ref:
    """("called\nargs=T", caller) -> ("called", "caller\nargs=T"): markers travel with the detail."""
    kind, nl, marker = kind.partition("\n")
    if kind.startswith("entry:"):  # `state.apply_fn` is called in traced `train.train_step`
        kind, detail = "entry", f"`{kind[6:]}` is called in traced `{detail}`"
    return ref, kind, detail + nl + marker


def summarize(model: "SemanticModel", module: str | None, is_package: bool = False, label: str = "") -> Summary:
    """The summary of a parsed module. `module` is its dotted name (None: not importable, then
    relative imports do not resolve and `label` names it in messages)."""
    return _Summarizer(model, module, is_package, label or "<module>").run()


def transform_marker(transform: str, options: cst.Call | None, call: cst.Call, direct: bool) -> str:
    """PARAMS_TRACED for a staging transform applied straight to an imported function with
    options the model reads (`jax.jit(other.f, static_argnums=1)`); "" when unsure."""
    from jaxfuse_lint.model.staging_transforms import FILTERED, STAGING, options_understood
    from jaxfuse_lint.model.traced import TraceReason, _statics

    if not direct or transform not in STAGING or transform in FILTERED:
        return ""
    if not options_understood(TraceReason("transform", transform, call), transform):
        return ""
    nums, names = _statics(options)
    n2, s2 = _statics(call)
    out = PARAMS_TRACED
    if nums | n2:
        out += " static=" + ",".join(str(i) for i in sorted(nums | n2))
    if names | s2:
        out += " names=" + ",".join(sorted(names | s2))
    return out
