"""The whole-project index: functions that other modules of the checked project trace.

A function defined in one module and jitted, vmapped or used as a loop body in
another runs under tracing too. The per-file model sees only its own module, so
this index carries the cross-module facts, in three layers:

1. `prescan(text)`: text only, no parse. Import statements give the project's
   module graph (who imports whom, within the checked paths); module-level
   `from .impl import f` lines are re-exports, so that `pkg.f` resolves to the
   module that defines `f`.
2. `summarize(model)`: from the parse the main pass needs anyway, what a module
   traces in other modules unconditionally (`base`: `jax.jit(other.f)`, calls to
   `other.g` from its own traced code) and, for each of its top-level functions,
   what it would trace if another module traced it (`edges`). A summary depends on
   the file's text alone (never on other files), so it is cached with the file.
3. `ProjectIndex`: the least fixpoint over all summaries, built incrementally as
   summaries arrive. `external(i)` is the `external_traced` map of file i:
   {top-level function or `Class.method`: why}, which the file's model seeds.

Tracing flows from an importer to the module it imports, so the runner analyses
importers first (`analysis_order`); a file analysed before all the facts about it
were known (an import cycle) is analysed again.
"""
from __future__ import annotations

import functools
import heapq
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

# The external map's format (SHAPE_PREFIX, PARAMS_TRACED, COMPILED_MARKER) is shared with the model.
from jaxfuse_lint.core.external_map import COMPILED_MARKER, PARAMS_TRACED, SHAPE_PREFIX

# Layers 1 and 3 need no parse: libcst and the model are imported by the summarizer (layer
# 2) only, so that a run whose files all come from the cache never loads them.
if TYPE_CHECKING:
    import libcst as cst

    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.semantic import SemanticModel

# How a function comes to be traced from another module, most direct first.
KIND_ORDER = {"transform": 0, "control-flow": 1, "called": 2, "entry": 2, "passed": 3}
MAX_REEXPORT_HOPS = 8


def import_spellings(qualified: str, package: str) -> list[str]:
    """How the model spells an imported name (`scopes.Binding.qualified_name`, then attributes):
    `physics.mesh.kvec_mesh` absolutely, or relative to `package`: `.mesh.kvec_mesh` for
    `from .mesh import kvec_mesh`, `..mesh` for `from . import mesh`."""
    out = [qualified]
    parts = package.split(".") if package else []
    for level in range(1, len(parts) + 1):
        base = ".".join(parts[: len(parts) - (level - 1)])
        if qualified.startswith(base + "."):
            rest = qualified[len(base) + 1:]
            out.append("." * level + rest)
            if "." not in rest:
                out.append("." * (level + 1) + rest)  # `from . import rest`
    return out


@functools.cache
def _entry_attributes() -> dict[str, int]:
    """Entry points of framework Modules that run `__call__` (`model.apply(variables, x)`)."""
    from jaxfuse_lint.model.routes import MODULE_BASES

    return {attr: offset for entries in MODULE_BASES.values() for attr, offset in entries}


# -- module names --------------------------------------------------------------------------------

class ModuleNamer:
    """Dotted module names from paths: packages are directories with an `__init__.py`."""

    def __init__(self) -> None:
        self._is_package_dir: dict[Path, bool] = {}
        self._prefixes: dict[str, tuple[str, ...]] = {}

    def _package_dir(self, d: Path) -> bool:
        found = self._is_package_dir.get(d)
        if found is None:
            found = (d / "__init__.py").is_file()
            self._is_package_dir[d] = found
        return found

    def name(self, path: str | os.PathLike) -> tuple[str, bool] | None:
        """(dotted name, is a package `__init__`), or None for a file that is no module."""
        directory, _, filename = os.path.abspath(path).rpartition(os.sep)
        stem, dot, suffix = filename.rpartition(".")
        if not dot or suffix != "py" or not stem.isidentifier():
            return None
        is_package = stem == "__init__"
        if is_package:  # a package's `__init__.py` is named by its folder
            head, _, folder = directory.rpartition(os.sep)
            parts = [*self._prefix(head or os.sep), folder]
        else:
            parts = [*self._prefix(directory), stem]
        if not parts or not all(x.isidentifier() for x in parts):
            return None
        return ".".join(parts), is_package

    def _prefix(self, directory: str) -> tuple[str, ...]:
        """The dotted package path of a folder (its name and its parents' while each holds an
        `__init__.py` and is an identifier); () when it is no package. Cached per folder."""
        found = self._prefixes.get(directory)
        if found is None:
            d = Path(directory)
            if d.parent != d and d.name.isidentifier() and self._package_dir(d):
                found = (*self._prefix(str(d.parent)), d.name)
            else:
                found = ()
            self._prefixes[directory] = found
        return found


def package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def absolute(level: int, module: str, package: str) -> str | None:
    """`from ..x import y` seen from `package` -> the absolute module `x` names."""
    if level == 0:
        return module or None
    if not package:  # a relative import outside a package fails at run time
        return None
    parts = package.split(".")
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base) or None


# -- 1. the text prescan ---------------------------------------------------------------------------

_IMPORT = re.compile(
    r"^([ \t]*)(?:from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)|import[ \t]+([^\n;#]*))",
    re.M,
)
_COMMENT = re.compile(r"#[^\n]*")
_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")


@dataclass
class Prescan:
    """What the text of one file says about imports, without parsing it."""

    imports: set[str] = field(default_factory=set)  # absolute module names (and `from m import x`: m.x)
    reexports: dict[str, str] = field(default_factory=dict)  # module-level name -> absolute qualified name
    called: set[str] = field(default_factory=set)  # names written right before `(`: what it may call

    def to_json(self) -> dict:
        return {"imports": sorted(self.imports), "reexports": self.reexports, "called": sorted(self.called)}

    @classmethod
    def from_json(cls, data: dict) -> "Prescan":
        return cls(set(data["imports"]), dict(data["reexports"]), set(data.get("called", ())))


def _split_names(text: str) -> Iterator[tuple[str, str]]:
    text = _COMMENT.sub("", text).strip().strip("()").replace("\\\n", " ")
    for part in text.split(","):
        bits = part.split()
        if not bits:
            continue
        name = bits[0]
        alias = bits[2] if len(bits) == 3 and bits[1] == "as" else name
        yield name, alias


def prescan(text: str, module: str, is_package: bool) -> Prescan:
    out = Prescan()
    package = package_of(module, is_package)
    for m in _IMPORT.finditer(text):
        indent, dots, mod, names, plain = m.groups()
        top = indent == ""
        if plain is not None:
            for name, alias in _split_names(plain):
                if not all(x.isidentifier() for x in name.split(".")):
                    continue
                out.imports.add(name)
                if top and alias != name:
                    out.reexports[alias] = name
            continue
        base = absolute(len(dots), mod, package)
        if base is None:
            continue
        out.imports.add(base)
        for name, alias in _split_names(names):
            if name == "*" or not name.isidentifier() or not alias.isidentifier():
                continue
            out.imports.add(f"{base}.{name}")
            if top:
                out.reexports[alias] = f"{base}.{name}"
    out.imports.discard(module)
    out.called = set(_CALLED.findall(text))
    return out


# -- 2. the summary of one parsed module ----------------------------------------------------------

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

    def to_json(self) -> dict:
        return {"defs": self.defs, "base": [list(r) for r in self.base],
                "edges": {k: [loc, [list(r) for r in refs]] for k, (loc, refs) in self.edges.items()},
                "shapes": self.shapes, "compiled": [list(r) for r in self.compiled]}

    @classmethod
    def from_json(cls, data: dict) -> "Summary":
        return cls(
            defs=list(data["defs"]),
            base=[tuple(r) for r in data["base"]],
            edges={k: (list(v[0]), [tuple(r) for r in v[1]]) for k, v in data["edges"].items()},
            shapes=dict(data.get("shapes", {})),
            compiled=[tuple(r) for r in data.get("compiled", ())],
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
        from jaxfuse_lint.model.staging import staging as staging_of

        if "_values" not in self.__dict__:
            self._values = None
            if not self.model.external_traced:
                self._values = staging_of(self.model).values
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

        m, helper = self.model, self.helper
        local: list[Function] = []
        refs: list[tuple[str, str]] = []
        for site in fn.calls:
            call = site.call
            if m.qn(call.func, fn) in CALLBACKS:
                continue
            if m.static_uses.at_compile_time(call, fn):
                continue  # under `jax.ensure_compile_time_eval()`: run eagerly on concrete values
            local.extend(callee for callee, _ in helper.callables(call.func, fn, direct_only=True))
            r = self.ref(call.func, fn)
            if r is not None:
                refs.append((r, "called"))
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
                    ref = (r, "transform", t[0] + transform_marker(t[0], t[1], call, direct))
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
        return out

    def caller_name(self, fn: "Function", keys: dict["Function", str]) -> str:
        f: Function | None = fn
        while f is not None:
            if f in keys:
                return f"{self.module}.{keys[f]}"
            f = next(f.enclosing_functions(), None)
        return self.module


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


# -- 3. the project-wide fixpoint ------------------------------------------------------------------

def transform_marker(transform: str, options: cst.Call | None, call: cst.Call, direct: bool) -> str:
    """PARAMS_TRACED for a staging transform applied straight to an imported function with
    options the model reads (`jax.jit(other.f, static_argnums=1)`); "" when unsure."""
    from jaxfuse_lint.model.staging import FILTERED, STAGING, options_understood
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


def _with_compiled(phrase: str) -> str:
    """The phrase with COMPILED_MARKER on its marker line."""
    return phrase + (" " if "\n" in phrase else "\n") + COMPILED_MARKER


def describe(kind: str, detail: str, origin: str) -> str:
    """The phrase a rule shows for a function traced from another module."""
    detail, nl, marker = detail.partition("\n")
    return _describe(kind, detail, origin) + nl + marker


def _describe(kind: str, detail: str, origin: str) -> str:
    if kind == "entry":
        return detail
    short = detail.replace("jax.numpy.", "jnp.").replace("jax.lax.", "lax.")
    if kind == "transform":
        return f"passed to `{short}` in `{origin}`"
    if kind == "control-flow":
        return f"the function traced by `{short}` in `{origin}`"
    if kind == "called":
        return f"called from traced `{detail}`"
    return f"passed as an argument in traced `{detail}`"


@dataclass
class ProjectFile:
    path: str
    module: str | None  # None: not importable (ambiguous or not a module name)
    is_package: bool = False
    prescan: Prescan = field(default_factory=Prescan)


class ProjectIndex:
    """Cross-module traced functions, as a fixpoint that grows as summaries arrive."""

    def __init__(self, files: list[ProjectFile]) -> None:
        self.files = files
        by_name: dict[str, list[int]] = {}
        for i, f in enumerate(files):
            if f.module:
                by_name.setdefault(f.module, []).append(i)
        # Two files claiming one module name (two roots): neither is resolved.
        self.modules = {name: ids[0] for name, ids in by_name.items() if len(ids) == 1}
        self.summaries: dict[int, Summary] = {}
        self._defs: dict[int, frozenset[str]] = {}
        self.marked: dict[int, set[str]] = {}
        # file -> its marked keys whose route from some module ends in a compiled program
        self.compiled: dict[int, set[str]] = {}
        # key -> reasons, each (kind order, rank of the file it comes from, phrase)
        self.reasons: dict[int, dict[str, set[tuple[int, int, str]]]] = {}
        # Where each file comes in the analysis order: of two equally direct reasons, the one
        # from the earlier file is shown, so the reason a file is first analysed with
        # usually stays the one it ends with (a changed map means analysing it again).
        self.rank: list[int] = list(range(len(files)))

    # -- the module graph ------------------------------------------------------------------------
    def imports_of(self, i: int) -> set[int]:
        out = set()
        for name in self.files[i].prescan.imports:
            # `import a.b.c` runs a, a.b and a.b.c.
            parts = name.split(".")
            for n in range(1, len(parts) + 1):
                j = self.modules.get(".".join(parts[:n]))
                if j is not None and j != i:
                    out.add(j)
        return out

    def graph(self) -> list[set[int]]:
        return [self.imports_of(i) for i in range(len(self.files))]

    # -- resolution ------------------------------------------------------------------------------
    def resolve(self, qualified: str) -> tuple[int, str] | None:
        """`pkg.mod.f` -> (file of pkg.mod, "f"), following re-exports; None outside the project."""
        for _ in range(MAX_REEXPORT_HOPS):
            parts = qualified.split(".")
            for n in range(len(parts) - 1, 0, -1):
                i = self.modules.get(".".join(parts[:n]))
                if i is not None:
                    rest = parts[n:]
                    break
            else:
                return None
            if len(rest) > 2:
                return None
            defs = self._defs.get(i)
            key = ".".join(rest)
            if defs is not None and key in defs:
                return i, key
            target = self.files[i].prescan.reexports.get(rest[0])
            if target is None or target == qualified:
                return (i, key) if defs is None or key in defs else None
            qualified = target + ("." + rest[1] if len(rest) == 2 else "")
        return None

    # -- the fixpoint ----------------------------------------------------------------------------
    def add_summary(self, i: int, summary: Summary) -> set[int]:
        """Record file i's summary; the files whose external map may have changed."""
        if i in self.summaries:
            return set()
        self.summaries[i] = summary
        self._defs[i] = frozenset(summary.defs)
        changed: set[int] = set()
        work: list[tuple[int, str]] = []
        origin = self.files[i].module or self.files[i].path
        compiled = set(summary.compiled)
        for ref in summary.base:
            r, kind, detail = ref
            self._reach(r, (KIND_ORDER[kind], self.rank[i], describe(kind, detail, origin)), changed, work,
                        ref in compiled)
        # Keys marked before this summary was known now spread.
        work.extend((i, k) for k in sorted(self.marked.get(i, ())))
        self._drain(work, changed)
        changed |= self._shape_users(i)
        return changed

    # -- return shapes (model/return_shapes.py) ------------------------------------------------------
    def shape_facts(self, i: int) -> dict[str, str]:
        """`shape:<import as the model spells it>` -> return Shape JSON, for the functions file i
        imports (or reaches through an imported module) and calls by name, whose summaries know
        their return shapes. From file i's prescan, so its own summary is not needed."""
        f = self.files[i]
        package = package_of(f.module, f.is_package) if f.module else ""
        out: dict[str, str] = {}
        for q in sorted(f.prescan.imports):
            found = self.resolve(q)
            if found is not None and found[0] in self.summaries and found[1] in self.summaries[found[0]].shapes \
                    and found[1].rpartition(".")[2] in f.prescan.called:
                for spelled in import_spellings(q, package):
                    out[SHAPE_PREFIX + spelled] = self.summaries[found[0]].shapes[found[1]]
            j = self.modules.get(q)
            if j is not None and j != i and j in self.summaries:
                for key, shape in self.summaries[j].shapes.items():
                    if key.rpartition(".")[2] not in f.prescan.called:
                        continue  # the file never calls it: the fact cannot matter
                    for spelled in import_spellings(q, package):
                        out[f"{SHAPE_PREFIX}{spelled}.{key}"] = shape
        return out

    def _shape_users(self, j: int) -> set[int]:
        """Files that import a function of file j with a known return shape (or file j itself)."""
        if not self.summaries[j].shapes:
            return set()
        users = set()
        for i, f in enumerate(self.files):
            if i == j:
                continue
            for q in f.prescan.imports:
                found = self.resolve(q)
                if self.modules.get(q) == j and any(k.rpartition(".")[2] in f.prescan.called
                                                    for k in self.summaries[j].shapes) or (
                        found is not None and found[0] == j and found[1] in self.summaries[j].shapes
                        and found[1].rpartition(".")[2] in f.prescan.called):
                    users.add(i)
                    break
        return users

    def _reach(self, ref: str, reason: tuple[int, int, str], changed: set[int], work: list, compiled: bool) -> None:
        found = self.resolve(ref)
        if found is None:
            return
        j, key = found
        reasons = self.reasons.setdefault(j, {}).setdefault(key, set())
        if reason not in reasons:
            reasons.add(reason)
            changed.add(j)
        self._mark(j, key, work, compiled, changed)

    def _mark(self, j: int, key: str, work: list, compiled: bool, changed: set[int]) -> None:
        marked = self.marked.setdefault(j, set())
        spread = key not in marked
        marked.add(key)
        if compiled and key not in self.compiled.setdefault(j, set()):
            # Known compiled only now (first reached eagerly): what it traces is compiled too.
            self.compiled[j].add(key)
            changed.add(j)
            spread = True
        if spread and j in self.summaries:
            work.append((j, key))

    def _drain(self, work: list[tuple[int, str]], changed: set[int]) -> None:
        while work:
            j, key = work.pop()
            edge = self.summaries[j].edges.get(key)
            if edge is None:
                continue
            local, refs = edge
            compiled = key in self.compiled.get(j, ())
            for k in local:
                self._mark(j, k, work, compiled, changed)
            origin = self.files[j].module or self.files[j].path
            for r, kind, detail in refs:
                self._reach(r, (KIND_ORDER[kind], self.rank[j], describe(kind, detail, origin)), changed, work,
                            compiled)

    def external_of(self, i: int, mapping: dict[str, str]) -> dict[str, str]:
        """`mapping` without the names that are not functions of file i (once that is known)."""
        defs = self._defs.get(i)
        return dict(mapping) if defs is None else {k: v for k, v in mapping.items()
                                                   if k in defs or k.startswith(SHAPE_PREFIX)}

    def external(self, i: int) -> dict[str, str]:
        """{name: why} for file i's functions that other modules trace (the most direct reason),
        and `shape:<callee>` entries for the return shapes of other modules' functions it calls."""
        reasons = self.reasons.get(i)
        shapes = self.shape_facts(i)
        if not reasons:
            return shapes
        defs = self._defs.get(i)
        compiled = self.compiled.get(i, ())
        traced = {key: _with_compiled(min(rs)[2]) if key in compiled else min(rs)[2]
                  for key, rs in sorted(reasons.items()) if defs is None or key in defs}
        return {**traced, **shapes}


def build_project(paths: Iterable[str], texts: Iterable[str | None]) -> ProjectIndex:
    """The index of a set of files, from their text (None: unreadable)."""
    namer = ModuleNamer()
    files = []
    for path, text in zip(paths, texts):
        named = namer.name(path)
        if named is None:
            files.append(ProjectFile(path, None))
            continue
        module, is_package = named
        files.append(ProjectFile(path, module, is_package, prescan(text or "", module, is_package)))
    return ProjectIndex(files)


# -- the order of analysis --------------------------------------------------------------------------

def canonical_order(graph: list[set[int]], names: list[str]) -> list[int]:
    """analysis_order, independent of the order the files were listed in (ties go by name)."""
    by_name = sorted(range(len(graph)), key=lambda i: names[i])
    new_of = {old: new for new, old in enumerate(by_name)}
    permuted = [{new_of[j] for j in graph[old]} for old in by_name]
    return [by_name[v] for v in analysis_order(permuted)]


def analysis_order(graph: list[set[int]]) -> list[int]:
    """Files ordered so that importers come before what they import, as far as cycles allow
    (Eades, Lin and Smyth's greedy heuristic for a small feedback arc set)."""
    n = len(graph)
    succ = [set(s) - {i} for i, s in enumerate(graph)]
    pred: list[set[int]] = [set() for _ in range(n)]
    for i, s in enumerate(succ):
        for j in s:
            pred[j].add(i)
    out_deg = [len(s) for s in succ]
    in_deg = [len(p) for p in pred]
    alive = [True] * n
    left = n
    head: list[int] = []
    tail: list[int] = []
    sinks = [v for v in range(n) if out_deg[v] == 0]
    sources = [v for v in range(n) if in_deg[v] == 0 and out_deg[v] > 0]
    # Lazy max-heap on out_deg - in_deg for breaking cycles.
    delta = [(-(out_deg[v] - in_deg[v]), v) for v in range(n)]
    heapq.heapify(delta)

    def remove(v: int) -> None:
        nonlocal left
        alive[v] = False
        left -= 1
        for w in succ[v]:
            if alive[w]:
                in_deg[w] -= 1
                heapq.heappush(delta, (-(out_deg[w] - in_deg[w]), w))
                if in_deg[w] == 0:
                    sources.append(w)
        for u in pred[v]:
            if alive[u]:
                out_deg[u] -= 1
                heapq.heappush(delta, (-(out_deg[u] - in_deg[u]), u))
                if out_deg[u] == 0:
                    sinks.append(u)

    while left:
        while sinks or sources:
            while sinks:
                v = sinks.pop()
                if alive[v]:
                    remove(v)
                    tail.append(v)
            while sources:
                v = sources.pop()
                if alive[v] and out_deg[v] > 0:
                    remove(v)
                    head.append(v)
        while left:
            d, v = heapq.heappop(delta)
            if alive[v] and -d == out_deg[v] - in_deg[v]:
                remove(v)
                head.append(v)
                break
    return head + tail[::-1]


def upstream_masks(graph: list[set[int]]) -> list[int]:
    """For each file, a bitmask of the files that can reach it along import edges (itself and
    its whole import cycle included): the files whose summaries decide its external map."""
    n = len(graph)
    comp = [-1] * n
    comps: list[list[int]] = []
    # Tarjan's algorithm, iteratively; components come out sinks first.
    index = [0] * n
    low = [0] * n
    seen = [False] * n
    on_stack = [False] * n
    stack: list[int] = []
    counter = 1
    for root in range(n):
        if seen[root]:
            continue
        work = [(root, iter(sorted(graph[root])))]
        seen[root] = True
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if not seen[w]:
                    seen[w] = True
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                members = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = len(comps)
                    members.append(w)
                    if w == v:
                        break
                comps.append(members)
    # Sources first (reverse of Tarjan's order): a component's upstream is its own files plus
    # the upstream of every component that imports it.
    masks = [0] * len(comps)
    preds: list[set[int]] = [set() for _ in comps]
    for v in range(n):
        for w in graph[v]:
            if comp[v] != comp[w]:
                preds[comp[w]].add(comp[v])
    for c in reversed(range(len(comps))):
        m = 0
        for v in comps[c]:
            m |= 1 << v
        for p in preds[c]:
            m |= masks[p]
        masks[c] = m
    return [masks[comp[v]] for v in range(n)]
