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

import heapq
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator

# Layers 1 and 3 need no parse: libcst and the model are imported by the summarizer (layer
# 2) only, so that a run whose files all come from the cache never loads them.
if TYPE_CHECKING:
    import libcst as cst

    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.semantic import SemanticModel

# How a function comes to be traced from another module, most direct first.
KIND_ORDER = {"transform": 0, "control-flow": 1, "called": 2, "passed": 3}
MAX_REEXPORT_HOPS = 8


# -- module names --------------------------------------------------------------------------------

class ModuleNamer:
    """Dotted module names from paths: packages are directories with an `__init__.py`."""

    def __init__(self) -> None:
        self._is_package_dir: dict[Path, bool] = {}

    def _package_dir(self, d: Path) -> bool:
        found = self._is_package_dir.get(d)
        if found is None:
            found = (d / "__init__.py").is_file()
            self._is_package_dir[d] = found
        return found

    def name(self, path: str | os.PathLike) -> tuple[str, bool] | None:
        """(dotted name, is a package `__init__`), or None for a file that is no module."""
        p = Path(os.path.abspath(path))
        if p.suffix != ".py" or not p.stem.isidentifier():
            return None
        is_package = p.stem == "__init__"
        parts: list[str] = [] if is_package else [p.stem]
        d = p.parent
        if is_package:
            parts.insert(0, d.name)
            d = d.parent
        while self._package_dir(d) and d.name.isidentifier() and d.parent != d:
            parts.insert(0, d.name)
            d = d.parent
        if not parts or not all(x.isidentifier() for x in parts):
            return None
        return ".".join(parts), is_package


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


@dataclass
class Prescan:
    """What the text of one file says about imports, without parsing it."""

    imports: set[str] = field(default_factory=set)  # absolute module names (and `from m import x`: m.x)
    reexports: dict[str, str] = field(default_factory=dict)  # module-level name -> absolute qualified name

    def to_json(self) -> dict:
        return {"imports": sorted(self.imports), "reexports": self.reexports}

    @classmethod
    def from_json(cls, data: dict) -> "Prescan":
        return cls(set(data["imports"]), dict(data["reexports"]))


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
    return out


# -- 2. the summary of one parsed module ----------------------------------------------------------

Ref = tuple[str, str, str]  # (absolute qualified name, kind, detail: the transform or the traced caller)


@dataclass
class Summary:
    """What one module traces in the rest of the project. Independent of other files."""

    defs: list[str] = field(default_factory=list)  # top-level functions and `Class.method`s
    base: list[Ref] = field(default_factory=list)  # traced whatever other modules do
    # key -> (local keys it makes traced, refs it makes traced), for keys not traced locally
    edges: dict[str, tuple[list[str], list[Ref]]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"defs": self.defs, "base": [list(r) for r in self.base],
                "edges": {k: [loc, [list(r) for r in refs]] for k, (loc, refs) in self.edges.items()}}

    @classmethod
    def from_json(cls, data: dict) -> "Summary":
        return cls(
            defs=list(data["defs"]),
            base=[tuple(r) for r in data["base"]],
            edges={k: (list(v[0]), [tuple(r) for r in v[1]]) for k, v in data["edges"].items()},
        )


class _Summarizer:
    def __init__(self, model: "SemanticModel", module: str | None, is_package: bool, label: str) -> None:
        self.model = model
        self.module = module or label  # how messages name this module
        self.package = package_of(module, is_package) if module else ""
        from jaxfuse_lint.model.traced import TracedAnalysis

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
        import libcst as cst

        from jaxfuse_lint.model.api import TRANSFORMS
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
            local.extend(callee for callee, _ in helper.callables(call.func, fn, direct_only=True))
            r = self.ref(call.func, fn)
            if r is not None:
                refs.append((r, "called"))
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
        from jaxfuse_lint.model.traced import TracedAnalysis, keyword, positional

        m = self.model
        index = m.index
        keys: dict[Function, str] = {}
        for fn in index.functions:
            if fn.parent is index.scope or (fn.cls is not None and fn.cls.parent is index.scope):
                keys[fn] = fn.display_name
        local_traced = m.traced.reasons if not m.external_traced else TracedAnalysis(m).run(None).reasons
        out = Summary(defs=sorted(set(keys.values())))
        base: set[Ref] = set()

        # Transforms and lax control flow applied to imported functions, anywhere in the module.
        for site in index.calls:
            call = site.call
            t = self.helper.transform_of(call.func, site.scope)
            if t is not None and (t[1] is None or t[1] is not call):
                target = positional(call, 0) or keyword(call, "fun") or keyword(call, "f")
                for r in self.targets(target, site.scope):
                    base.add((r, "transform", t[0]))
                continue
            qn = m.qn(call.func, site.scope)
            if qn in CONTROL_FLOW:
                for arg in self.helper.control_flow_functions(call, qn):
                    for r in self.targets(arg, site.scope):
                        base.add((r, "control-flow", qn))

        # Imported functions that this module's traced code calls or passes on.
        for fn in local_traced:
            _, refs = self.spread(fn)
            caller = self.caller_name(fn, keys)
            base.update((r, kind, caller) for r, kind in refs)
        out.base = sorted(base)

        # What each top-level function not traced here would trace if another module traced it.
        for fn, key in keys.items():
            if fn in local_traced:
                continue
            caller = f"{self.module}.{key}"
            seen = {fn}
            stack = [fn]
            local_keys: set[str] = set()
            refs_out: set[Ref] = set()
            while stack:
                cur = stack.pop()
                callees, refs = self.spread(cur)
                refs_out.update((r, kind, caller) for r, kind in refs)
                for callee in callees:
                    if callee in seen or callee in local_traced:
                        continue
                    seen.add(callee)
                    if callee in keys:
                        local_keys.add(keys[callee])
                    else:
                        stack.append(callee)
            if local_keys or refs_out:
                out.edges[key] = (sorted(local_keys), sorted(refs_out))
        return out

    def caller_name(self, fn: "Function", keys: dict["Function", str]) -> str:
        f: Function | None = fn
        while f is not None:
            if f in keys:
                return f"{self.module}.{keys[f]}"
            f = next(f.enclosing_functions(), None)
        return self.module


def summarize(model: "SemanticModel", module: str | None, is_package: bool = False, label: str = "") -> Summary:
    """The summary of a parsed module. `module` is its dotted name (None: not importable, then
    relative imports do not resolve and `label` names it in messages)."""
    return _Summarizer(model, module, is_package, label or "<module>").run()


# -- 3. the project-wide fixpoint ------------------------------------------------------------------

def describe(kind: str, detail: str, origin: str) -> str:
    """The phrase a rule shows for a function traced from another module."""
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
        for r, kind, detail in summary.base:
            self._reach(r, (KIND_ORDER[kind], self.rank[i], describe(kind, detail, origin)), changed, work)
        # Keys marked before this summary was known now spread.
        work.extend((i, k) for k in sorted(self.marked.get(i, ())))
        self._drain(work, changed)
        return changed

    def _reach(self, ref: str, reason: tuple[int, int, str], changed: set[int], work: list) -> None:
        found = self.resolve(ref)
        if found is None:
            return
        j, key = found
        reasons = self.reasons.setdefault(j, {}).setdefault(key, set())
        if reason not in reasons:
            reasons.add(reason)
            changed.add(j)
        self._mark(j, key, work)

    def _mark(self, j: int, key: str, work: list) -> None:
        marked = self.marked.setdefault(j, set())
        if key not in marked:
            marked.add(key)
            if j in self.summaries:
                work.append((j, key))

    def _drain(self, work: list[tuple[int, str]], changed: set[int]) -> None:
        while work:
            j, key = work.pop()
            edge = self.summaries[j].edges.get(key)
            if edge is None:
                continue
            local, refs = edge
            for k in local:
                self._mark(j, k, work)
            origin = self.files[j].module or self.files[j].path
            for r, kind, detail in refs:
                self._reach(r, (KIND_ORDER[kind], self.rank[j], describe(kind, detail, origin)), changed, work)

    def external_of(self, i: int, mapping: dict[str, str]) -> dict[str, str]:
        """`mapping` without the names that are not functions of file i (once that is known)."""
        defs = self._defs.get(i)
        return dict(mapping) if defs is None else {k: v for k, v in mapping.items() if k in defs}

    def external(self, i: int) -> dict[str, str]:
        """{name: why} for file i's functions that other modules trace (the most direct reason)."""
        reasons = self.reasons.get(i)
        if not reasons:
            return {}
        defs = self._defs.get(i)
        return {key: min(rs)[2] for key, rs in sorted(reasons.items()) if defs is None or key in defs}


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
