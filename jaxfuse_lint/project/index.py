"""The whole-project index: the least fixpoint over all module summaries, which gives each file
its external map.

A function defined in one module and jitted, vmapped or used as a loop body in
another runs under tracing too. The per-file model sees only its own module, so
this index carries the cross-module facts: `ProjectIndex` is built from the files'
prescans (prescan.py) and grows incrementally as their summaries (summary.py) arrive.
`external(i)` is the `external_traced` map of file i: {top-level function or
`Class.method`: why}, plus `shape:<callee>` entries for the return shapes of the other
modules' functions it calls, which the file's model seeds.

Tracing flows from an importer to the module it imports, so the runner analyses
importers first (import_graph.py); a file analysed before all the facts about it
were known (an import cycle) is analysed again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

# The external map's format (SHAPE_PREFIX, COMPILED_MARKER) is shared with the model.
from jaxfuse_lint.core.external_map import CALL_PATTERNS_PREFIX, CALLS_PREFIX, COMPILED_MARKER, SHAPE_PREFIX, merge_calls
from jaxfuse_lint.project.module_names import ModuleNamer, import_spellings, package_of
from jaxfuse_lint.project.prescan import Prescan, prescan
from jaxfuse_lint.project.summary import Summary

# How a function comes to be traced from another module, most direct first.
KIND_ORDER = {"transform": 0, "control-flow": 1, "called": 2, "entry": 2, "passed": 3}
MAX_REEXPORT_HOPS = 8


def _with_compiled(phrase: str) -> str:
    """The phrase with COMPILED_MARKER on its marker line."""
    return phrase + (" " if "\n" in phrase else "\n") + COMPILED_MARKER


def _with_all_calls(reasons: set[tuple[int, int, str]]) -> str:
    """The most direct reason's phrase, its `calls=` word standing for every reason's calls (none
    when some route's calls are not known: it may be any call)."""
    phrase = min(reasons)[2]
    head, nl, marker = phrase.partition("\n")
    words = [w for w in marker.split() if not w.startswith(CALL_PATTERNS_PREFIX)]
    merged = merge_calls(sorted(p.partition("\n")[2] for _, _, p in reasons))
    if merged is not None:
        words.append(merged)
    return head + ("\n" + " ".join(words) if words else "")


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
        # file -> key -> the other modules' host calls of it: (how, phrase, calling file, calling key)
        self.calls: dict[int, dict[str, set[tuple[str, str, int, str]]]] = {}
        # (calling file, calling key) -> the files it calls into (their call facts change when
        # the caller turns out to be traced)
        self.call_targets: dict[tuple[int, str], set[int]] = {}

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
        for ref, how, detail, caller in summary.calls:
            found = self.resolve(ref)
            if found is None or found[0] == i:
                continue
            j, key = found
            self.call_targets.setdefault((i, caller), set()).add(j)
            entries = self.calls.setdefault(j, {}).setdefault(key, set())
            if (how, detail, i, caller) not in entries:
                entries.add((how, detail, i, caller))
                changed.add(j)
        return changed

    def call_facts(self, i: int) -> dict[str, str]:
        """`calls:<key>` -> "<many|once|unknown>\n<how>" for file i's functions that other modules
        call from host code."""
        out: dict[str, str] = {}
        defs = self._defs.get(i)
        for key, entries in sorted(self.calls.get(i, {}).items()):
            if defs is not None and key not in defs:
                continue
            # A call from a function another module traces runs while tracing: no evidence.
            host = {(how, detail, j) for how, detail, j, caller in entries if caller not in self.marked.get(j, ())}
            if host:
                out[CALLS_PREFIX + key] = _call_phrase(host)
        return out

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
        if spread:
            changed |= self.call_targets.get((j, key), set())  # its calls now run while tracing
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
                                                   if k in defs or k.startswith((SHAPE_PREFIX, CALLS_PREFIX))}

    def external(self, i: int) -> dict[str, str]:
        """{name: why} for file i's functions that other modules trace (the most direct reason),
        and `shape:<callee>` entries for the return shapes of other modules' functions it calls."""
        reasons = self.reasons.get(i)
        shapes = {**self.shape_facts(i), **self.call_facts(i)}
        if not reasons:
            return shapes
        defs = self._defs.get(i)
        compiled = self.compiled.get(i, ())
        traced = {key: _with_compiled(_with_all_calls(rs)) if key in compiled else _with_all_calls(rs)
                  for key, rs in sorted(reasons.items()) if defs is None or key in defs}
        return {**traced, **shapes}


def _call_phrase(entries: set[tuple[str, str, int]]) -> str:
    """How often the project's other modules call a function, from their call sites."""
    for how in ("same", "many"):
        for h, detail, _ in sorted(entries):
            if h == how:
                return f"{how}\n{detail}"
    if len(entries) >= 2:
        callers = ", ".join(sorted({d.partition("`")[2].partition("`")[0] for _, d, _ in entries}))
        return f"many\nfrom {len(entries)} places in the project ({callers})"
    how, detail, _ = next(iter(entries))
    return f"{'once' if how == 'once' else 'unknown'}\n{detail}"


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
