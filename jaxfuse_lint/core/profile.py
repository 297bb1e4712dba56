"""The runtime profile: what a real run traced and compiled (`.jaxfuse_lint/profile.json`).

`jaxfuse-lint record -- COMMAND` writes it (see `recorder.py`); `check`, `verify`,
`explain` and `review` read it. This module is the format and its loader, and it
never imports jax: `check` reads profiles.

The file is JSON, versioned (`format`, `version`). Every fact names the file it
is about (`file`, a label relative to the directory `record` ran in where
possible), the SHA-256 of that file's text (`sha256`), and the SHA-256 of the
source of its function (`source`: `function_sources`; a line's fact names the
function holding the line, `function`): facts for the recorded text apply as
they are; in an edited text, those of each function whose own source is
unchanged apply at its lines now, and a program's (its costs, constants,
compilations) only while its entry point and everything it called (`calls`) are
unchanged. Layout:

    {"format": "jaxfuse-lint-profile", "version": 1, "jax_version": ..., "command": [...],
     "processes": [{"pid": 12, "where": "tests/test_a.py::test_x", "backend": "cpu"}, ...],
     "entries": [                       # one per jit entry point (jax.jit / pjit object's function)
       {"id": "<sha>:<qualname>:<line>", "file": "pkg/m.py", "sha256": ..., "source": ..., "qualname": "step",
        "line": 12, "api": "jax.jit", "arg_names": ["x", "n"], "static_argnums": [1],
        "static_argnames": ["n"], "calls": [["pkg/m.py", "helper", "<source>"]],
        "signatures": [{"args": [{"name": "x", "shape": [4096, 3], "dtype": "float32",
                                  "weak_type": false}],
                        "pytree": "PyTreeDef(((*, *), {}))", "static": {"n": "3"},
                        "backend": "cpu", "where": "tests/test_a.py::test_x"}],
        "compilations": [{"signature": 0, "pid": 12, "cause": "first compilation",
                          "kind": "first" | "static" | "shape" | "fresh-callable" | "other",
                          "where": ..., "seconds": 0.03, "program": "<key in programs>" | null}],
        "constants": [{"bytes": 1200000, "shape": "f32[300000]",
                       "lines": [{"file": "pkg/m.py", "sha256": ..., "line": 8, "function": {...}}],  # uses
                       "captures": [...],      # the reads that pulled it in (closure, global, attribute)
                       "entry_lines": [...]}]}],   # the entry's own lines that led to its use
     "programs": {"<key>": <attribution JSON>},   # each distinct compiled program's account, once
     "lines": [{"file": ..., "sha256": ..., "line": 8, "entry": "<entry id>", "backend": "cpu",
                "temp_bytes": 1048576, "constant_bytes": 0, "kernels": 2, "kernel_names": ["fusion.1", ...],
                "copies": 0, "function": {"qualname": "step", "line": 12, "source": ...}}],  # max over compilations
     "functions": [                     # every function whose lines appear under an entry
       {"file": ..., "sha256": ..., "source": ..., "qualname": "helper", "line": 3, "entry": "<entry id>",
        "api": "jax.jit", "entry_name": "step", "transforms": ["vmap"], "chain": ["step", "helper"],
        "where": "tests/test_a.py::test_x"}],
     "traced": [                        # every function any trace called: what its parameters held
       {"file": ..., "sha256": ..., "source": ..., "qualname": "Layer.__call__", "line": 9, "calls": 4,
        "where": "tests/test_a.py::test_x",
        "params": {"decode": {"tracer": 0, "python": 4, "other": 0, "values": ["False"], "types": ["bool"],
                              "where": {"python": "tests/test_a.py::test_x"}}}}]}

A program's account is `jaxfuse_lint.verify.attribution.Attribution.to_json()`: its kernels,
temporaries and folded constants per line (older profiles keep it inline, as `costs`).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator

# Keys of Settings.extra that carry the chosen profile to the engine and its workers
# (runtime/use.py sets them, model/runtime_facts.py reads them): its path and content digest.
PROFILE_KEY = "profile"
PROFILE_DIGEST_KEY = "profile-digest"

# What a traced function's parameter held in one call (the recorder's `traced` facts): a tracer
# (or a container holding one), a concrete Python value, or an object that may hold tracers.
TRACER, PYTHON, OTHER = "tracer", "python", "other"

FORMAT = "jaxfuse-lint-profile"
VERSION = 1
# The default profile's folder (`.jaxfuse_lint/profile.json`): it ignores itself in git.
PROFILE_FOLDER = ".jaxfuse_lint"
# Where recording processes leave their parts, next to the profile, until `record` merges them.
PARTS_DIR_SUFFIX = ".parts"

_SHORT_DTYPE = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}


class ProfileError(Exception):
    """A profile that cannot be used: reported on one line."""


def text_digest(text: str) -> str:
    """The key of a file's facts: SHA-256 of its text (UTF-8), whatever its encoding on disk."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def file_digest(path: str | os.PathLike) -> str | None:
    import tokenize

    try:
        with tokenize.open(path) as fh:
            return text_digest(fh.read())
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return None


@dataclass(frozen=True)
class FunctionSource:
    """One function of a text as a profile keys its facts: its qualified name (`__qualname__`),
    its first line (`co_firstlineno`: the first decorator's), its last, and the digest of its
    own source (those lines, dedented): an edit elsewhere in the file keeps it."""

    qualname: str
    first: int
    last: int
    digest: str


def function_sources(text: str) -> dict[tuple[str, int], FunctionSource]:
    """{(qualname, first line): FunctionSource} of every def and lambda in `text` ({} where it
    does not parse). The recorder and `check` both call this on the same text, so the keys agree."""
    import ast
    import textwrap

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    out: dict[tuple[str, int], FunctionSource] = {}

    def add(node: ast.AST, qualname: str) -> None:
        decorators = getattr(node, "decorator_list", [])
        first = min([node.lineno, *(d.lineno for d in decorators)])
        last = node.end_lineno or node.lineno
        body = textwrap.dedent("\n".join(lines[first - 1:last]))
        out[(qualname, first)] = FunctionSource(qualname, first, last, text_digest(f"{qualname}\n{body}"))

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                add(child, prefix + child.name)
                visit(child, prefix + child.name + ".<locals>.")
            elif isinstance(child, ast.Lambda):
                add(child, prefix + "<lambda>")
                visit(child, prefix + "<lambda>.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def enclosing_source(sources: dict[tuple[str, int], FunctionSource], line: int) -> FunctionSource | None:
    """The innermost function whose lines hold `line`."""
    best = None
    for src in sources.values():
        if src.first <= line <= src.last and (best is None or src.first >= best.first):
            best = src
    return best


def spec(arg: dict[str, Any]) -> str:
    """`f32[4096,3]` (with `~` for a weak type: a Python scalar promoted by JAX)."""
    dtype = _SHORT_DTYPE.get(arg.get("dtype", ""), arg.get("dtype", "?"))
    shape = arg.get("shape")
    if shape is None:
        return str(arg.get("repr", dtype))
    weak = "~" if arg.get("weak_type") else ""
    return f"{weak}{dtype}[{','.join(str(d) for d in shape)}]"


def signature_text(sig: dict[str, Any], limit: int = 3) -> str:
    """`x: f32[4096,3], n=3` for messages (the first `limit` arguments)."""
    parts = [f"{a.get('name') or '?'}: {spec(a)}" for a in sig.get("args", [])]
    parts += [f"{k}={v}" for k, v in sig.get("static", {}).items()]
    if len(parts) > limit:
        parts = parts[:limit] + ["…"]
    return ", ".join(parts)


# -- reading ----------------------------------------------------------------------------------

@dataclass
class FileFacts:
    """What the profile knows about one file's text: entries and traced functions."""

    digest: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    functions: list[dict[str, Any]] = field(default_factory=list)
    lines: list[dict[str, Any]] = field(default_factory=list)  # per-line costs of compiled programs
    # Constants captured by a trace on one of this text's lines: {bytes, shape, line, entry, entry_qualname}.
    constants: list[dict[str, Any]] = field(default_factory=list)
    # What each function's parameters held when it was called under any trace (see `traced` above).
    traced: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries or self.functions or self.lines or self.constants or self.traced)

    def entries_named(self, qualname: str) -> list[dict[str, Any]]:
        return [e for e in self.entries if e.get("qualname") == qualname]

    def functions_named(self, qualname: str) -> list[dict[str, Any]]:
        return [f for f in self.functions if f.get("qualname") == qualname]


class Profile:
    def __init__(self, data: dict[str, Any], path: str = "") -> None:
        self.data = data
        self.path = path
        self.entries: list[dict[str, Any]] = list(data.get("entries", []))
        self.functions: list[dict[str, Any]] = list(data.get("functions", []))
        self._by_digest: dict[str, FileFacts] = {}
        for e in self.entries:
            self._facts(e.get("sha256")).entries.append(e)
            for index, const in enumerate(e.get("constants", [])):
                # Where the constant is to be named: the reads that captured it from outside the
                # trace; without one (a constant made while tracing), the entry's own lines that
                # use it; in older profiles, the lines of the operations that use it.
                role, refs = next(((r, const.get(r)) for r in ("captures", "entry_lines", "lines") if const.get(r)),
                                  ("lines", []))
                for ref in refs:
                    if isinstance(ref, dict) and ref.get("sha256"):
                        self._facts(ref["sha256"]).constants.append({
                            "bytes": const.get("bytes", 0), "shape": const.get("shape", ""),
                            "line": ref.get("line"), "entry": e.get("id"), "entry_qualname": e.get("qualname"),
                            "api": e.get("api", "jax.jit"), "role": role, "constant": f"{e.get('id')}#{index}",
                            "function": ref.get("function")})
        for f in self.functions:
            self._facts(f.get("sha256")).functions.append(f)
        self.lines: list[dict[str, Any]] = list(data.get("lines", []))
        for item in self.lines:
            self._facts(item.get("sha256")).lines.append(item)
        self.traced: list[dict[str, Any]] = [t for t in data.get("traced", []) if isinstance(t, dict)]
        for item in self.traced:
            self._facts(item.get("sha256")).traced.append(item)

    def _facts(self, digest: str | None) -> FileFacts:
        key = digest or ""
        if key not in self._by_digest:
            self._by_digest[key] = FileFacts(key)
        return self._by_digest[key]

    def for_text(self, text: str) -> FileFacts | None:
        """The facts recorded for this text (None where none hold): all of them for the recorded
        text; for an edited one, the facts of each function whose own source is unchanged
        (`function_sources`: an edit elsewhere in the file keeps them), at its lines now, and of
        the programs of entry points neither they nor what they call changed since."""
        digest = text_digest(text)
        facts = self._by_digest.get(digest)
        if facts:
            return facts
        if not self._keyed or not any(name in text for name in self._names):
            return None
        facts = self._by_function(text, digest)
        return facts if facts else None

    # -- facts kept across edits: keyed by each function's own source ------------------------------
    @property
    def root(self) -> Path:
        """Where `record` ran (the recorded paths are relative to it): the folder holding
        `.jaxfuse_lint/`, else the current directory."""
        path = Path(self.path).resolve() if self.path else Path.cwd()
        return path.parent.parent if path.parent.name == PROFILE_FOLDER else Path.cwd()

    @functools.cached_property
    def _keyed(self) -> dict[tuple[str, str], list[tuple[str, dict[str, Any]]]]:
        """{(qualname, source digest): [(kind, fact)]} of every fact keyed by its function's source;
        line facts under the function that holds the line."""
        out: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
        for kind, items in (("entries", self.entries), ("functions", self.functions), ("traced", self.traced)):
            for item in items:
                if isinstance(item.get("source"), str):
                    out.setdefault((str(item.get("qualname")), item["source"]), []).append((kind, item))
        line_facts = [("lines", item) for item in self.lines]
        line_facts += [("constants", c) for facts in self._by_digest.values() for c in facts.constants]
        for kind, item in line_facts:
            fn = item.get("function")
            if isinstance(fn, dict) and isinstance(fn.get("source"), str):
                out.setdefault((str(fn.get("qualname")), fn["source"]), []).append((kind, item))
        return out

    @functools.cached_property
    def _names(self) -> set[str]:
        """The last part of each keyed function's name, as its text spells it (`lambda` for a lambda)."""
        return {q.rsplit(".", 1)[-1].replace("<lambda>", "lambda") for q, _ in self._keyed}

    def _by_function(self, text: str, digest: str) -> FileFacts:
        sources = function_sources(text)
        now = {(src.qualname, src.digest): src for src in sources.values()}
        facts = FileFacts(digest)
        valid: dict[str, bool] = {}

        def entry_ok(entry_id: Any) -> bool:
            """Whether an entry's programs still hold: it and every function it called unchanged."""
            if not isinstance(entry_id, str):
                return False
            if entry_id not in valid:
                entry = next((e for e in self.entries if e.get("id") == entry_id), None)
                valid[entry_id] = entry is not None and self._unchanged(entry, now)
            return valid[entry_id]

        for key, src in now.items():
            for kind, item in self._keyed.get(key, ()):
                if kind in ("entries", "functions", "traced"):
                    if kind == "entries" and not entry_ok(item.get("id")):
                        continue
                    getattr(facts, kind).append({**item, "line": src.first, "sha256": digest})
                    continue
                if not entry_ok(item.get("entry")):
                    continue  # a program of an entry that changed since: its costs may have too
                line = item.get("line")
                if isinstance(line, int):
                    line += src.first - int(item["function"].get("line") or 0)
                getattr(facts, kind).append({**item, "line": line, "sha256": digest})
        return facts

    def _unchanged(self, entry: dict[str, Any], now: dict[tuple[str, str], FunctionSource]) -> bool:
        """Whether an entry point and each function it called are as recorded: those in the text
        being checked by its functions (`now`), those in other files by those files' text now."""
        if not isinstance(entry.get("source"), str):
            return False
        if (str(entry.get("qualname")), entry["source"]) not in now:
            other = self._sources_of(str(entry.get("file") or ""))
            if (str(entry.get("qualname")), entry["source"]) not in other:
                return False
        for call in entry.get("calls") or []:
            if not isinstance(call, (list, tuple)) or len(call) != 3:
                return False
            file, qualname, source = call
            if (qualname, source) in now:
                continue
            if (qualname, source) not in self._sources_of(str(file)):
                return False
        return True

    def _sources_of(self, label: str) -> set[tuple[str, str]]:
        """(qualname, source digest) of the functions of a recorded file as it is now (read once)."""
        memo = self.__dict__.setdefault("_other_sources", {})
        if label not in memo:
            import tokenize

            path = Path(label) if os.path.isabs(label) else self.root / label
            try:
                with tokenize.open(path) as fh:
                    found = function_sources(fh.read())
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                found = {}
            memo[label] = {(src.qualname, src.digest) for src in found.values()}
        return memo[label]

    def files(self) -> dict[str, str]:
        """{recorded path: digest} of every file with facts."""
        out: dict[str, str] = {}
        for item in (*self.entries, *self.functions, *self.traced):
            if item.get("file") and item.get("sha256"):
                out.setdefault(item["file"], item["sha256"])
        return out

    def stale_files(self, root: str | os.PathLike = ".") -> list[str]:
        """Recorded files whose text has changed since (or that are gone)."""
        out = []
        for path, digest in sorted(self.files().items()):
            p = Path(path) if os.path.isabs(path) else Path(root) / path
            if file_digest(p) != digest:
                out.append(path)
        return out

    def entries_in(self, path: str | os.PathLike) -> list[dict[str, Any]]:
        """The entries recorded for the current text of the file at `path`."""
        digest = file_digest(path)
        facts = self._by_digest.get(digest or "")
        return list(facts.entries) if facts else []


def validate(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ProfileError(f"{where}: not a jaxfuse-lint profile (write one with `jaxfuse-lint record -- COMMAND`)")
    version = data.get("version")
    if not isinstance(data.get("programs", {}), dict):
        raise ProfileError(f"{where}: `programs` must be an object")
    if not isinstance(version, int) or version > VERSION:
        raise ProfileError(f"{where}: profile version {version!r} is newer than this jaxfuse-lint reads "
                           f"({VERSION}); record it again or upgrade jaxfuse-lint")
    for key in ("entries", "functions", "lines", "traced"):
        if not isinstance(data.get(key, []), list):
            raise ProfileError(f"{where}: `{key}` must be a list")
    return data


def load_profile(path: str | os.PathLike) -> Profile:
    """Read and check a profile; ProfileError with a one-line reason when it cannot be used."""
    p = Path(path)
    try:
        with open(p, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise ProfileError(f"{p}: profile not found (write one with `jaxfuse-lint record -- COMMAND`)") from None
    except OSError as exc:
        raise ProfileError(f"{p}: cannot read the profile: {exc.strerror}") from None
    except ValueError as exc:
        raise ProfileError(f"{p}: the profile is not valid JSON: {exc}") from None
    return Profile(validate(data, str(p)), str(p))


@lru_cache(maxsize=4)
def cached_profile(path: str, digest: str) -> Profile:
    """One parse per process for a given profile content (worker processes call this per file)."""
    del digest  # part of the cache key: a rewritten profile is read again
    return load_profile(path)


def profile_digest(path: str | os.PathLike) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


# -- writing and merging ---------------------------------------------------------------------------

def empty_profile(**meta: Any) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, **meta, "processes": [], "entries": [], "functions": [],
            "lines": [], "traced": [], "programs": {}}


def _function_key(f: dict[str, Any]) -> tuple:
    return (f.get("sha256"), f.get("qualname"), f.get("line"), f.get("entry"), tuple(f.get("transforms", ())),
            tuple(f.get("chain", ())))


def merge(parts: Iterable[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    """One profile from the parts written by each recording process.

    Entries with the same id are joined: their signatures are deduplicated and
    their compilations kept (each carries its process id, so counts stay per run
    of a process), and compilations point at the merged signature list."""
    out = empty_profile(**meta)
    entries: dict[str, dict[str, Any]] = {}
    seen_functions: set[tuple] = set()
    lines: dict[tuple, dict[str, Any]] = {}
    traced: dict[tuple, dict[str, Any]] = {}
    for part in parts:
        out["processes"].extend(part.get("processes", []))
        for key in ("jax_version",):
            if part.get(key) and not out.get(key):
                out[key] = part[key]
        for e in part.get("entries", []):
            target = entries.get(e["id"])
            if target is None:
                target = {k: v for k, v in e.items() if k not in ("signatures", "compilations", "constants")}
                target.update(signatures=[], compilations=[], constants=[])
                entries[e["id"]] = target
            elif e.get("calls"):  # another process traced other callees (another branch)
                calls = {tuple(c) for c in target.get("calls") or []} | {tuple(c) for c in e["calls"]}
                target["calls"] = sorted(list(c) for c in calls)
            remap = {}
            for i, sig in enumerate(e.get("signatures", [])):
                key = _sig_key(sig)
                for j, existing in enumerate(target["signatures"]):
                    if _sig_key(existing) == key:
                        remap[i] = j
                        break
                else:
                    remap[i] = len(target["signatures"])
                    target["signatures"].append(sig)
            for c in e.get("compilations", []):
                c = dict(c)
                if isinstance(c.get("signature"), int):
                    c["signature"] = remap.get(c["signature"], c["signature"])
                target["compilations"].append(c)
            for const in e.get("constants", []):
                if const not in target["constants"]:
                    target["constants"].append(const)
        for f in part.get("functions", []):
            k = _function_key(f)
            if k not in seen_functions:
                seen_functions.add(k)
                out["functions"].append(f)
        for item in part.get("lines", []):
            k = (item.get("sha256"), item.get("line"), item.get("entry"))
            have = lines.get(k)
            if have is None:
                lines[k] = dict(item)
            else:
                for field_name in ("temp_bytes", "constant_bytes", "kernels", "copies"):
                    have[field_name] = max(have.get(field_name, 0), item.get(field_name, 0))
        programs = part.get("programs")
        if isinstance(programs, dict):
            for key, costs in programs.items():
                out["programs"].setdefault(key, costs)
        for item in part.get("traced", []):
            k = (item.get("sha256"), item.get("qualname"), item.get("line"))
            have = traced.get(k)
            if have is None:
                traced[k] = json.loads(json.dumps(item))  # a copy: merged into below
            else:
                _merge_traced(have, item)
    out["traced"] = sorted(traced.values(), key=lambda t: (t.get("file", ""), t.get("line", 0), t.get("qualname", "")))
    out["entries"] = sorted(entries.values(), key=lambda e: (e.get("file", ""), e.get("line", 0), e["id"]))
    out["functions"].sort(key=lambda f: (f.get("file", ""), f.get("line", 0), f.get("qualname", "")))
    out["lines"] = sorted(lines.values(), key=lambda x: (x.get("file", ""), x.get("line", 0)))
    return out


def compilation_costs(data: dict[str, Any], compilation: dict[str, Any]) -> dict[str, Any] | None:
    """The per-line account (attribution JSON) of one compilation's program: stored once per
    distinct program in `programs` (`"program": key`), or inline (`"costs"`, older profiles);
    with that compilation's own compile time."""
    costs = compilation.get("costs")
    key = compilation.get("program")
    if costs is None and isinstance(key, str):
        costs = (data.get("programs") or {}).get(key)
    if not isinstance(costs, dict):
        return None
    if compilation.get("seconds") is not None:
        costs = {**costs, "compile_seconds": compilation["seconds"]}
    return costs


def with_costs_inline(data: dict[str, Any]) -> dict[str, Any]:
    """The profile with each compilation's account in place (`"costs"`) and no `programs` table:
    what readers that walk compilations for accounts expect. Nothing is copied but the dicts
    on the way."""
    out = {k: v for k, v in data.items() if k != "programs"}
    entries = []
    for e in data.get("entries", []) or []:
        if not isinstance(e, dict):
            continue
        comps = [{**c, "costs": compilation_costs(data, c)} if isinstance(c, dict) else c
                 for c in e.get("compilations", []) or []]
        entries.append({**e, "compilations": comps})
    out["entries"] = entries
    return out


def _merge_traced(have: dict[str, Any], item: dict[str, Any]) -> None:
    """One function's parameter facts from two processes: counts added, examples kept (a few)."""
    have["calls"] = int(have.get("calls", 0)) + int(item.get("calls", 0))
    params = have.setdefault("params", {})
    for name, p in (item.get("params") or {}).items():
        mine = params.get(name)
        if mine is None:
            params[name] = json.loads(json.dumps(p))
            continue
        for kind in (TRACER, PYTHON, OTHER):
            mine[kind] = int(mine.get(kind, 0)) + int(p.get(kind, 0))
        for key in ("types", "values"):
            kept = mine.setdefault(key, [])
            for v in p.get(key, []):
                if v not in kept and len(kept) < 4:
                    kept.append(v)
        where = mine.setdefault("where", {})
        for kind, w in (p.get("where") or {}).items():
            where.setdefault(kind, w)


def param_kinds(records: Iterable[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """What parameter `name` held over the `traced` records of one function: counts per kind,
    the Python values seen and where each kind was first seen (None: never recorded)."""
    out: dict[str, Any] = {TRACER: 0, PYTHON: 0, OTHER: 0, "values": [], "types": [], "where": {}}
    found = False
    for record in records:
        p = (record.get("params") or {}).get(name)
        if not isinstance(p, dict):
            continue
        found = True
        for kind in (TRACER, PYTHON, OTHER):
            out[kind] += int(p.get(kind, 0) or 0)
        for key in ("values", "types"):
            out[key] += [v for v in p.get(key, []) if v not in out[key]]
        for kind, w in (p.get("where") or {}).items():
            out["where"].setdefault(kind, w)
    return out if found else None


def _sig_key(sig: dict[str, Any]) -> str:
    return json.dumps({k: sig.get(k) for k in ("args", "pytree", "static", "backend")}, sort_keys=True)


def read_parts(directory: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The parts left in a directory by recording processes (unreadable ones are skipped)."""
    d = Path(directory)
    if not d.is_dir():
        return
    for p in sorted(d.glob("*.json")):
        try:
            with open(p, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("format") == FORMAT:
            yield data


def write_profile(path: str | os.PathLike, data: dict[str, Any]) -> None:
    from jaxfuse_lint.core.writer import write_atomic

    target = Path(path)
    folder = target.parent
    made = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    if made or folder.name == PROFILE_FOLDER:
        ignore_folder(folder)
    write_atomic(target, json.dumps(data, indent=1, sort_keys=False) + "\n")  # a new file: 0666 less the umask


def ignore_folder(folder: Path) -> None:
    """Make the profile's folder ignore itself in git (as ruff's and pytest's caches do): a
    `.gitignore` of `*` in it, unless it has one. Only in a folder `record` made, or the default
    `.jaxfuse_lint/`: never a folder of the user's (`-o run.json` in the project's root)."""
    from jaxfuse_lint.core.writer import write_atomic

    ignore = folder / ".gitignore"
    if ignore.exists() or ignore.is_symlink():
        return
    write_atomic(ignore, "# Created by jaxfuse-lint record: a recorded run's profile, not source.\n*\n")
