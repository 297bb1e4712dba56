"""The recorder that runs inside the user's Python processes under `jaxfuse-lint record`.

`record` puts a `sitecustomize` on PYTHONPATH (see `bootstrap/sitecustomize.py`); it
runs any sitecustomize the environment already had, then arms `install()` to run
right after `jax` is imported (nothing is imported early: processes that never use
jax pay nothing). At exit each process writes its part of the profile into the
parts directory; `record` merges the parts into one profile (profile.py).

## Which hook, and why

JAX's own diagnostics show where the information lives. `jax_log_compiles` logs
from `dispatch.log_elapsed_time` around tracing and around XLA compilation, and
`jax.monitoring` listeners receive the same events — but only as an event name,
a duration and a function *name*: no file, no shapes, no program. The
`jax_explain_cache_misses` explanation is built in `pjit._infer_params` from the
arguments of a tracing-cache miss. Wrapping the objects `jax.jit` returns would
change their type for the user's code (and miss the jits JAX builds itself), and
patching the lowering path sees MLIR, after the Python function is gone.

So the recorder wraps two functions, each called exactly once per event it
records and each returning the original's result untouched:

- `jax._src.pjit._trace_for_jit(fun, jit_info, mesh, debug_info, avals, args, kwargs)`:
  called on every tracing-cache miss of a `jax.jit`/`pjit` call (the miss that
  `jax_explain_cache_misses` explains), with the Python function, its static
  arguments and the abstract values of the others, and returning the traced
  jaxpr, whose equations carry the Python stack that made each operation.
- `jax._src.compiler.compile_or_get_cached(backend, module, ...)`: called for every
  XLA compilation (what `jax_log_compiles` times), returning the executable whose
  optimized HLO, with source locations, and memory statistics give the per-line
  costs (`attribution.attribute_hlo`).

and, to see every trace (not only jit's: `eval_shape`, `vmap`, `grad`, lax loop
bodies, Flax's lifted transforms), the context manager every trace is entered with:

- `jax._src.core.SetCurrentTraceContextManager` (`core.set_current_trace`): its
  `__enter__`/`__exit__` arm a `sys.setprofile` watcher while a trace is current
  (`watch_calls`: what each user function's parameters held: tracers, Python
  values, objects; arrays read from outside the trace), and disarm it when the
  top-level eval trace is current again.

All are private. If either of the first two is missing or its signature changed, `install()`
prints one line to stderr and records nothing for it; a failure inside the
recorder is caught and never reaches the user's program. Recording never
changes what JAX computes: no flag, option or argument is altered.

A function is *traced under* an entry point when one of its lines is in the
stack of an equation of that entry's jaxpr (sub-jaxprs included) and the stack
passed through JAX before reaching it: that keeps eager calls (`x * 2` outside
any jit, which JAX also traces, as a one-operation jit) from marking their
callers traced, and counts bodies handed to eager `lax.scan`/`vmap` as traced.
"""
from __future__ import annotations

import atexit
import enum
import functools
import inspect
import json
import os
import sys
import sysconfig
import threading
import time
import types
import uuid
import weakref
from typing import Any

# What a parameter held when a traced function was called (core/profile.py reads them back).
from jaxfuse_lint.core.profile import OTHER, PYTHON, TRACER

ENV_PARTS = "JAXFUSE_LINT_RECORD_PARTS"
ENV_ROOT = "JAXFUSE_LINT_RECORD_ROOT"
ENV_COSTS = "JAXFUSE_LINT_RECORD_COSTS"
# Constants captured by a trace smaller than this are not worth a profile entry.
MIN_CONSTANT_BYTES = 1024
_MAX_REPR = 80

# Values, types and abstract values kept per parameter.
_MAX_KEPT = 4
# Python values whose repr is longer than this are recorded by type only.
_MAX_VALUE_REPR = 40
_PYTHON_SCALARS = (bool, int, float, complex, str, bytes, type(None))

_TRANSFORM_NAMES = ("vmap", "jvp", "transpose", "grad", "vjp", "remat", "checkpoint", "pmap", "shard_map",
                    "xmap", "custom_jvp_call", "custom_vjp_call", "while", "scan", "cond", "switch")


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that fails is only a label
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 1] + "…"


class Recorder:
    def __init__(self, parts_dir: str, root: str, costs: bool = True) -> None:
        self.parts_dir = parts_dir
        self.root = os.path.abspath(root)
        self.costs = costs
        self.lock = threading.RLock()
        self.entries: dict[str, dict[str, Any]] = {}
        self.functions: dict[tuple, dict[str, Any]] = {}
        self.lines: dict[tuple, dict[str, Any]] = {}
        # {key: attribution JSON}: each distinct compiled program's per-line account, stored once.
        self.programs: dict[str, dict[str, Any]] = {}
        self._program_lines: dict[str, list[tuple]] = {}
        self._callables: dict[str, weakref.WeakSet] = {}
        self._callable_ids: dict[str, set[int]] = {}
        self._pending = threading.local()
        self._digests: dict[str, str | None] = {}
        self._paths: dict[str, str] = {}  # label -> absolute path
        self._source_memo: dict[str, dict] = {}  # path -> function_sources of its text
        self._user_file_memo: dict[str, bool] = {}
        self.errors: list[str] = []
        self.started = time.time()
        self._part_path: str | None = None
        self._last_flush = 0.0
        # Parameter avals of user functions called while a top-level trace runs:
        # {(file, qualname, first line): {param: [spec dict, ...]}}.
        self.param_avals: dict[tuple, dict[str, list[dict[str, Any]]]] = {}
        self._code_memo: dict[Any, tuple | None] = {}
        self._tracer_type = None
        self._trace_ctx = None
        # {(file, qualname, first line): {"calls": n, "where": ..., "params": {name: kinds}}}: what
        # each user function's parameters held when it was called under a trace (`watch_calls`).
        self.calls: dict[tuple, dict[str, Any]] = {}
        self._flags = threading.local()  # .jit: inside a jit's trace (parameter shapes are kept then)
        # {id(array): {(file, line)}}: large arrays traced code read from outside the trace during
        # the current top-level trace (`watch_calls`), matched to the program's constants.
        self._captures: dict[int, set[tuple[str, int]]] = {}
        self._reads_memo: dict[Any, list[tuple[str, str, str, int]]] = {}
        excluded = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
        import jax
        import jaxlib

        self.jax_dirs = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (jax, jaxlib))
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
        self.excluded = tuple(os.path.abspath(p) + os.sep for p in excluded if p) + self.jax_dirs + (here,)
        self.jax_version = jax.__version__

    # -- file facts -------------------------------------------------------------------------------
    def is_user_file(self, path: str) -> bool:
        known = self._user_file_memo.get(path)
        if known is None:
            ap = os.path.abspath(path)
            known = (not path.startswith("<") and not ap.startswith(self.excluded) and os.path.isfile(ap))
            self._user_file_memo[path] = known
        return known

    def is_jax_file(self, path: str) -> bool:
        return os.path.abspath(path).startswith(self.jax_dirs)

    def label(self, path: str) -> str:
        ap = os.path.abspath(path)
        rel = os.path.relpath(ap, self.root)
        label = ap if rel.startswith("..") else rel.replace(os.sep, "/")
        self._paths[label] = ap
        return label

    def digest(self, path: str) -> str | None:
        if path not in self._digests:
            from jaxfuse_lint.core.profile import file_digest

            self._digests[path] = file_digest(path)
        return self._digests[path]

    def where(self, stack: list[tuple[str, str, int]] | None = None) -> str:
        test = os.environ.get("PYTEST_CURRENT_TEST")
        if test:
            return test.rsplit(" (", 1)[0]
        for file, _, line in stack or ():
            return f"{self.label(file)}:{line}"
        return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "<python>"

    # -- the tracing hook ---------------------------------------------------------------------------
    def on_trace(self, fun, jit_info, dbg, avals, args, kwargs, traced) -> None:
        """`traced` is what `_trace_for_jit` returned (a PjitParams)."""
        from jax._src import core

        params = traced.params

        if not core.trace_state_clean():
            return  # a jit inside a trace: its operations are part of the outer entry's jaxpr
        target = _unwrap(fun)
        code = getattr(target, "__code__", None)
        call_site = _user_call_site(self)
        where = self.where(call_site)
        entry_id = None
        entry_name = getattr(target, "__name__", None) or getattr(fun, "__name__", "<fun>")
        if code is not None and self.is_user_file(code.co_filename):
            file = code.co_filename
            digest = self.digest(file)
            qualname = getattr(code, "co_qualname", getattr(target, "__qualname__", code.co_name))
            entry_id = f"{digest}:{qualname}:{code.co_firstlineno}"
            entry_name = qualname
            param_names = _param_names(target)
            sig = self._signature(jit_info, dbg, avals, args, kwargs, traced, where, param_names)
            with self.lock:
                entry = self.entries.get(entry_id)
                if entry is None:
                    entry = self.entries[entry_id] = {
                        "id": entry_id, "file": self.label(file), "sha256": digest, "qualname": qualname,
                        "line": code.co_firstlineno, "api": "jax.jit",
                        "arg_names": param_names,
                        "static_argnums": sorted(int(i) for i in (jit_info.static_argnums or ())),
                        "static_argnames": sorted(str(n) for n in (jit_info.static_argnames or ())),
                        "signatures": [], "compilations": [], "constants": [],
                    }
                kind, cause = self._cause(entry_id, entry, sig, fun)
                try:
                    index = entry["signatures"].index(sig)
                except ValueError:
                    index = len(entry["signatures"])
                    entry["signatures"].append(sig)
                self._pending.trace = {"entry": entry_id, "signature": index, "kind": kind, "cause": cause,
                                       "where": where, "name": getattr(fun, "__name__", entry_name)}
                self._add_function(file, qualname, code.co_firstlineno, entry_id, entry_name, [], [qualname], where)
        closed = params.get("jaxpr")
        if closed is None:
            return
        start = (code.co_filename, code.co_firstlineno) if entry_id is not None else None
        self._scan_jaxpr(closed, entry_id, entry_name, where, start)

    def _signature(self, jit_info, dbg, avals, args, kwargs, traced, where, params_names) -> dict[str, Any]:
        names = list(getattr(dbg, "arg_names", None) or ())
        out_args = []
        for i, aval in enumerate(avals):
            shape = getattr(aval, "shape", None)
            dtype = getattr(aval, "dtype", None)
            item = {"name": names[i] if i < len(names) else None}
            if shape is not None and dtype is not None:
                item.update(shape=[int(d) if isinstance(d, int) else str(d) for d in shape], dtype=str(dtype),
                            weak_type=bool(getattr(aval, "weak_type", False)))
            else:
                item["repr"] = _short_repr(aval)
            out_args.append(item)
        static: dict[str, str] = {}
        for i in jit_info.static_argnums or ():
            if 0 <= i < len(args):
                name = params_names[i] if i < len(params_names) else f"args[{i}]"
                static[name] = _short_repr(args[i])
        for name in jit_info.static_argnames or ():
            if name in kwargs:
                static[name] = _short_repr(kwargs[name])
        backend = jit_info.backend
        if not backend:
            try:
                from jax._src import xla_bridge

                backend = xla_bridge.default_backend()
            except Exception:  # noqa: BLE001
                backend = ""
        return {"args": out_args, "pytree": str(getattr(traced, "in_tree", "")),
                "static": static, "backend": backend, "where": where}

    def _cause(self, entry_id: str, entry: dict[str, Any], sig: dict[str, Any], fun) -> tuple[str, str]:
        """Why this trace happened, compared with the signatures this process traced before."""
        seen = self._callables.setdefault(entry_id, weakref.WeakSet())
        ids = self._callable_ids.setdefault(entry_id, set())
        try:
            fresh = fun not in seen
            seen.add(fun)
        except TypeError:
            fresh = id(fun) not in ids
            ids.add(id(fun))
        mine = [entry["signatures"][c["signature"]] for c in entry["compilations"] if c.get("pid") == os.getpid()]
        if not mine:
            return "first", "first compilation"
        same = [s for s in mine if _same_avals(s, sig) and s.get("static") == sig.get("static")]
        if same:
            if fresh:
                return "fresh-callable", (f"fresh callable: a new function object for `{entry['qualname']}` "
                                          "with a signature already compiled")
            return "other", "same signature compiled again (cache evicted or a different context)"
        last = mine[-1]
        if _same_avals(last, sig):
            changed = [f"{k}: {last['static'].get(k, '-')} -> {v}" for k, v in sig["static"].items()
                       if last["static"].get(k) != v]
            return "static", "new static value " + "; ".join(changed)
        from jaxfuse_lint.core.profile import spec

        diffs = []
        for a, b in zip(last["args"], sig["args"]):
            if spec(a) != spec(b):
                diffs.append(f"{b.get('name') or '?'}: {spec(a)} -> {spec(b)}")
        if len(last["args"]) != len(sig["args"]) or last.get("pytree") != sig.get("pytree"):
            diffs.append("a different argument structure")
        kind = "shape" if last.get("static") == sig.get("static") else "shape+static"
        return kind, "new shape " + "; ".join(diffs)

    def _add_function(self, file, qualname, line, entry_id, entry_name, transforms, chain, where) -> None:
        digest = self.digest(file)
        key = (digest, qualname, line, entry_id)
        with self.lock:
            item = self.functions.get(key)
            if item is None:
                self.functions[key] = {
                    "file": self.label(file), "sha256": digest, "qualname": qualname, "line": line,
                    "entry": entry_id, "entry_name": entry_name, "api": "jax.jit",
                    "transforms": sorted(set(transforms)), "chain": list(chain), "where": where,
                }
            else:
                merged = sorted(set(item["transforms"]) | set(transforms))
                item["transforms"] = merged

    def _scan_jaxpr(self, closed, entry_id, entry_name, where, start) -> None:
        from jax._src import core

        jaxpr = getattr(closed, "jaxpr", closed)
        consts = list(getattr(closed, "consts", ()) or ())
        const_lines: dict[int, list[tuple]] = {}
        entry_lines: dict[int, list[tuple]] = {}
        use_lines: dict[int, set[tuple[str, int]]] = {}
        constvars = {id(v): i for i, v in enumerate(getattr(jaxpr, "constvars", ()))}
        todo = [jaxpr]
        seen: set[int] = set()
        top = True
        while todo:
            j = todo.pop()
            if id(j) in seen:
                continue
            seen.add(id(j))
            for eqn in j.eqns:
                frames = self._traced_frames(eqn, start)
                if frames:
                    transforms = _transforms(eqn)
                    chain: list[str] = []
                    for file, qualname, fline, _ in frames:
                        chain.append(qualname)
                        self._add_function(file, qualname, fline, entry_id, entry_name, transforms, chain, where)
                    if top and constvars:
                        for v in eqn.invars:
                            i = constvars.get(id(v))
                            if i is not None:
                                f = frames[-1]
                                const_lines.setdefault(i, []).append(
                                    (self.label(f[0]), self.digest(f[0]), f[3]))
                                use_lines.setdefault(i, set()).add((f[0], f[3]))
                                f = frames[0]  # the entry's own line that led to this use
                                entry_lines.setdefault(i, []).append((self.label(f[0]), self.digest(f[0]), f[3]))
            try:
                todo.extend(core.subjaxprs(j))
            except Exception:  # noqa: BLE001
                pass
            top = False
        if entry_id is None:
            return
        entry = self.entries[entry_id]
        for i, c in enumerate(consts):
            nbytes = int(getattr(c, "nbytes", 0) or 0)
            if nbytes < MIN_CONSTANT_BYTES:
                continue
            lines = [{"file": f, "sha256": d, "line": n} for f, d, n in sorted(set(const_lines.get(i, [])))]
            item = {"bytes": nbytes, "shape": _const_spec(c), "lines": lines,
                    # Where the traced code read the array from outside the trace (a closed-over
                    # variable, a global, an attribute of an object passed in): what captured it.
                    "captures": [{"file": self.label(f), "sha256": self.digest(f), "line": n}
                                 for f, n in self._capture_lines(c, use_lines.get(i, set())) if self.digest(f)],
                    "entry_lines": [{"file": f, "sha256": d, "line": n}
                                    for f, d, n in sorted(set(entry_lines.get(i, [])))]}
            with self.lock:
                if item not in entry["constants"]:
                    entry["constants"].append(item)

    def _capture_lines(self, const: Any, uses: set[tuple[str, int]]) -> list[tuple[str, int]]:
        """The lines that read `const`'s array from outside the trace: of those, the ones whose
        operations use it where there are some (`jnp.asarray(TABLE)[i]`, not `TABLE.shape[0]`),
        else all (`F = lambda p: TABLE`, used elsewhere)."""
        reads = self._captures.get(id(_root_array(const)), set())
        return sorted(reads & uses or reads)

    def _traced_frames(self, eqn, start) -> list[tuple[str, str, int, int]]:
        """(file, qualname, first line, line) of the user frames traced, outermost first.

        `start` is the entry function's (file, first line): frames from it inward are
        traced. Without one (JAX's own eager jits), user frames called from inside JAX
        are (the body given to an eager `lax.scan`), and the user code that called
        JAX is not."""
        tb = getattr(eqn.source_info, "traceback", None)
        if tb is None:
            return []
        frames = list(tb.frames)
        frames.reverse()  # outermost first
        out = []
        inside = False
        for fr in frames:
            fname = fr.file_name
            if self.is_jax_file(fname):
                inside = True
                continue
            if not inside and start is not None and fr.function_start_line == start[1] and fname == start[0]:
                inside = True
            if inside and self.is_user_file(fname):
                out.append((fname, fr.function_name, fr.function_start_line, fr.line_num))
        return out

    # -- what the parameters of the functions a trace calls were -------------------------------------
    def watch_calls(self):
        """A `sys.setprofile` function, armed while any trace runs (a jit's, `eval_shape`'s, a
        `vmap`, `grad`, a lax loop body's, a Flax lifted transform's: see `install`), recording
        for every user function called then which parameters were tracers (with their abstract
        values) and which were Python values (type, and the value where small and hashable).
        Tracing happens once per signature under jit, so this costs nothing per step there."""
        if self._tracer_type is None:
            from jax._src import core

            self._tracer_type = core.Tracer
            self._trace_ctx = core.trace_ctx
        tracer = self._tracer_type
        ctx = self._trace_ctx
        memo = self._code_memo
        avals = self.param_avals
        calls = self.calls
        flags = self._flags
        reads = self._reads_memo
        captures = self._captures

        def on_event(frame, event, arg):
            if event != "call":
                return
            code = frame.f_code
            key = memo.get(code, False)
            if key is False:
                key = None
                if self.is_user_file(code.co_filename):
                    n = code.co_argcount + code.co_kwonlyargcount
                    key = (code.co_filename, getattr(code, "co_qualname", code.co_name), code.co_firstlineno,
                           code.co_varnames[:n])
                memo[code] = key
            if key is None:
                return
            try:
                observe(frame, code, key)
            except Exception as exc:  # noqa: BLE001 - an error here would reach the user's code
                if len(self.errors) < 20:
                    self.errors.append(f"call of {key[1]}: {type(exc).__name__}: {exc}")

        def observe(frame, code, key) -> None:
            local = frame.f_locals
            seen = []
            traced_now = False
            for name in key[3]:
                if name not in local:
                    continue
                value = local[name]
                kind = _kind(value, tracer)
                traced_now = traced_now or kind == TRACER
                seen.append((name, value, kind))
            if not traced_now and ctx.is_top_level():
                return  # called outside any trace (eagerly, or under `ensure_compile_time_eval`)
            spots = reads.get(code)
            if spots is None:
                spots = reads[code] = _outside_reads(code, key[3])
            for where_from, name, attr, line in spots:
                if where_from == "free":
                    value = local.get(name)
                elif where_from == "global":
                    value = frame.f_globals.get(name)
                else:  # an attribute of a parameter: `self.table`
                    holder = getattr(local.get(name), "__dict__", None)
                    value = holder.get(attr) if isinstance(holder, dict) else None
                if value is not None and _array_bytes(value, tracer) >= MIN_CONSTANT_BYTES:
                    captures.setdefault(id(_root_array(value)), set()).add((code.co_filename, line))
            with self.lock:
                item = calls.get(key[:3])
                if item is None:
                    item = calls[key[:3]] = {"calls": 0, "where": self.where(), "params": {}}
                item["calls"] += 1
                for name, value, kind in seen:
                    self._note_param(item["params"], name, value, kind)
            if getattr(flags, "jit", False):
                for name, value, kind in seen:
                    if kind != TRACER or not isinstance(value, tracer):
                        continue
                    shape = getattr(value.aval, "shape", None)
                    if shape is None:
                        continue
                    spec = {"shape": [int(d) if isinstance(d, int) else str(d) for d in shape],
                            "dtype": str(getattr(value.aval, "dtype", "")),
                            "weak_type": bool(getattr(value.aval, "weak_type", False))}
                    have = avals.setdefault(key[:3], {}).setdefault(name, [])
                    if spec not in have and len(have) < 16:
                        have.append(spec)

        return on_event

    def _note_param(self, params: dict[str, Any], name: str, value: Any, kind: str) -> None:
        p = params.get(name)
        if p is None:
            p = params[name] = {TRACER: 0, PYTHON: 0, OTHER: 0, "types": [], "values": [], "where": {}}
        p[kind] += 1
        if kind not in p["where"]:
            p["where"][kind] = self.where()
        type_name = type(value).__name__
        if type_name not in p["types"] and len(p["types"]) < _MAX_KEPT:
            p["types"].append(type_name)
        if kind == PYTHON:
            text = _small_value(value)
            if text is not None and text not in p["values"] and len(p["values"]) < _MAX_KEPT:
                p["values"].append(text)

    # -- the compilation hook -------------------------------------------------------------------------
    def on_compile(self, backend, module_name: str, executable, seconds: float) -> None:
        pending = getattr(self._pending, "trace", None)
        if pending is None:
            return
        name = module_name[4:] if module_name.startswith("jit_") else module_name
        # The module is named `jit_<function name>`, with characters MLIR does not allow replaced.
        if _alnum(name) != _alnum(pending["name"]):
            return
        self._pending.trace = None
        program = None
        if self.costs:
            program = self._costs(executable, getattr(backend, "platform", ""), pending["entry"])
        with self.lock:
            entry = self.entries[pending["entry"]]
            entry["compilations"].append({
                "signature": pending["signature"], "pid": os.getpid(), "kind": pending["kind"],
                "cause": pending["cause"], "where": pending["where"], "seconds": round(seconds, 4),
                "program": program,
            })

    def _costs(self, executable, platform: str, entry_id: str) -> str | None:
        """The key in `programs` of the per-line account of this compiled program (attributed
        once per distinct program: the same program compiled again, in another test or for
        another entry, is only looked up), and its per-line costs added to `lines`."""
        import hashlib

        from jaxfuse_lint.verify.attribution import attribute_hlo

        try:
            text = executable.hlo_modules()[0].to_string()
            key = hashlib.sha256(f"{platform}\n{text}".encode()).hexdigest()[:24]
            with self.lock:
                known = key in self.programs
            if not known:
                temp = None
                try:
                    temp = int(executable.get_compiled_memory_stats().temp_size_in_bytes)
                except Exception:  # noqa: BLE001 - not every backend reports it
                    temp = None
                result = attribute_hlo(text, temp_bytes=temp, backend=platform)
                data = _relabel(result.to_json(), {acc.file: self.label(acc.file) for acc in result.lines
                                                     if self.is_user_file(acc.file)})
                lines = []
                for acc in result.lines:
                    if self.is_user_file(acc.file):
                        lines.append((acc.file, acc.line, bool(acc.own_kernels), int(acc.temp_bytes),
                                      int(acc.constant_bytes), sorted(acc.kernels), len(acc.copies)))
                with self.lock:
                    self.programs[key] = data
                    self._program_lines[key] = lines
        except Exception as exc:  # noqa: BLE001 - costs are optional; the run goes on
            self.errors.append(f"attribution failed: {type(exc).__name__}: {exc}")
            return None
        # Per-line costs, keyed by file digest, for the rules that read them.
        for file, line, own, temp_bytes, constant_bytes, kernels, copies in self._program_lines.get(key, ()):
            digest = self.digest(file)
            with self.lock:
                item = self.lines.setdefault((digest, line, entry_id), {
                    "file": self.label(file), "sha256": digest, "line": line, "entry": entry_id,
                    "backend": platform, "temp_bytes": 0, "constant_bytes": 0, "kernels": 0,
                    "kernel_names": [], "copies": 0, "own": False})
                item["own"] = item["own"] or own
                item["temp_bytes"] = max(item["temp_bytes"], temp_bytes)
                item["constant_bytes"] = max(item["constant_bytes"], constant_bytes)
                item["kernels"] = max(item["kernels"], len(kernels))
                if temp_bytes >= item["temp_bytes"]:
                    item["kernel_names"] = kernels[:16]
                item["copies"] = max(item["copies"], copies)
        return key

    # -- output ---------------------------------------------------------------------------------------
    def part(self) -> dict[str, Any]:
        from jaxfuse_lint.core.profile import FORMAT, VERSION

        with self.lock:
            for f in self.functions.values():
                for (file, qualname, line), params in self.param_avals.items():
                    if f["qualname"] == qualname and f["line"] == line and f["file"] == self.label(file):
                        f["params"] = params
            functions = [self._keyed(f) for f in self.functions.values()]
            entries = []
            for e in self.entries.values():
                e = self._keyed(e)
                # What it calls: an edit to one of them invalidates the entry's programs and costs.
                e["calls"] = sorted({(f["file"], f["qualname"], f["source"]) for f in functions
                                     if f.get("entry") == e["id"] and f.get("source") and
                                     (f["file"], f["qualname"]) != (e["file"], e["qualname"])})
                e["constants"] = [{**c, **{role: [self._keyed_line(ref) for ref in c.get(role, [])]
                                           for role in ("lines", "captures", "entry_lines")}}
                                  for c in e.get("constants", [])]
                entries.append(e)
            return {
                "format": FORMAT, "version": VERSION, "jax_version": self.jax_version,
                "processes": [{"pid": os.getpid(), "argv": [_short_repr(a) for a in sys.argv[:8]],
                               "seconds": round(time.time() - self.started, 3), "errors": self.errors[:20]}],
                "entries": entries,
                "functions": functions,
                "lines": [self._keyed_line(item) for item in self.lines.values()],
                "programs": dict(self.programs),
                "traced": [self._keyed({"file": self.label(file), "sha256": self.digest(file), "qualname": qualname,
                                        "line": line, **item})
                           for (file, qualname, line), item in self.calls.items() if self.digest(file)],
            }

    # -- facts keyed by the function's own source (core/profile.py `function_sources`) ------------------
    def _sources(self, label: str) -> dict:
        from jaxfuse_lint.core.profile import function_sources

        path = self._paths.get(label, label)
        found = self._source_memo.get(path)
        if found is None:
            try:
                import tokenize

                with tokenize.open(path) as fh:
                    found = function_sources(fh.read())
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
                found = {}
            self._source_memo[path] = found
        return found

    def _keyed(self, item: dict[str, Any]) -> dict[str, Any]:
        """A copy of a function's fact with the digest of its own source (`source`)."""
        sources = self._sources(item.get("file", ""))
        src = sources.get((item.get("qualname"), item.get("line")))
        if src is None:
            named = [s for s in sources.values() if s.qualname == item.get("qualname")]
            src = named[0] if len(named) == 1 else None
        return {**item, "source": src.digest} if src is not None else dict(item)

    def _keyed_line(self, item: dict[str, Any]) -> dict[str, Any]:
        """A copy of a line's fact naming the function that holds the line (its qualified name,
        first line and source digest), so that the line can be found again after edits elsewhere."""
        from jaxfuse_lint.core.profile import enclosing_source

        line = item.get("line")
        src = enclosing_source(self._sources(item.get("file", "")), line) if isinstance(line, int) else None
        if src is None:
            return dict(item)
        return {**item, "function": {"qualname": src.qualname, "line": src.first, "source": src.digest}}

    def after_fork_in_child(self) -> None:
        """A forked child records its own compilations, into its own part."""
        self.lock = threading.RLock()
        self.entries, self.functions, self.lines = {}, {}, {}
        self.programs, self._program_lines = {}, {}
        # (Emptied in place: the call watcher made at install holds them.)
        for kept in (self.param_avals, self.calls, self._captures):
            kept.clear()
        self._flags.jit = False
        self._callables, self._callable_ids = {}, {}
        self._pending = threading.local()
        self._part_path = None
        self.started = time.time()

    def maybe_flush(self, interval: float = 2.0) -> None:
        """Write the part now and then, not only at exit: processes that end with `os._exit`
        (forked workers, some test runners) run no exit handlers."""
        now = time.monotonic()
        if (self.entries or self.functions or self.calls) and now - self._last_flush >= interval:
            self._last_flush = now
            self.write()

    def write(self) -> None:
        if not self.entries and not self.functions and not self.calls:
            return
        if not os.path.isdir(self.parts_dir):
            return  # removed: the `record` this process belonged to is over (a process that outlived it)
        try:
            if self._part_path is None:
                self._part_path = os.path.join(self.parts_dir, f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json")
            path = self._part_path
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(self.part(), fh)
            os.replace(tmp, path)
        except Exception as exc:  # noqa: BLE001 - never fail the user's process at exit
            print(f"jaxfuse-lint record: could not write the profile part: {exc}", file=sys.stderr)


def _relabel(data: Any, labels: dict[str, str]) -> Any:
    """The attribution JSON with the user's absolute paths written as the profile's labels
    (relative to the directory `record` ran in), so that a profile can be moved."""
    if isinstance(data, str):
        if data in labels:
            return labels[data]
        head, sep, tail = data.rpartition(":")
        if sep and head in labels and tail.isdigit():
            return f"{labels[head]}:{tail}"
        return data
    if isinstance(data, list):
        return [_relabel(x, labels) for x in data]
    if isinstance(data, dict):
        return {k: _relabel(v, labels) for k, v in data.items()}
    return data


def _kind(value: Any, tracer: type, depth: int = 0) -> str:
    """TRACER (a tracer, or a list/tuple/dict holding one), PYTHON (a concrete value: a Python
    scalar, string, None, a function or class, a NumPy or concrete jax array, or a container
    of those), else OTHER (an object whose attributes may hold tracers: a Module, a dataclass)."""
    if isinstance(value, tracer):
        return TRACER
    t = type(value)
    if t in _PYTHON_SCALARS:
        return PYTHON
    if isinstance(value, (tuple, list, dict)):
        items = list(value.values()) if isinstance(value, dict) else value
        if depth >= 3 or len(items) > 64:
            return OTHER
        kinds = {_kind(v, tracer, depth + 1) for v in items}
        return TRACER if TRACER in kinds else OTHER if OTHER in kinds else PYTHON
    if isinstance(value, (enum.Enum, type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType)):
        return PYTHON
    module = getattr(t, "__module__", "") or ""
    if module.startswith(("numpy", "jaxlib")) and hasattr(value, "dtype"):
        return PYTHON  # a NumPy array or scalar, a concrete jax array: values known while tracing
    return OTHER


def _array_bytes(value: Any, tracer: type) -> int:
    """The size of a concrete NumPy or jax array (0 for anything else, tracers included)."""
    module = getattr(type(value), "__module__", "") or ""
    if not module.startswith(("numpy", "jax")) or isinstance(value, tracer):
        return 0
    try:
        return int(getattr(value, "nbytes", 0) or 0)
    except Exception:  # noqa: BLE001 - a deleted buffer
        return 0


def _root_array(value: Any) -> Any:
    """The array a NumPy view looks into (jax keeps a captured NumPy array as a view of it)."""
    seen = 0
    while getattr(value, "base", None) is not None and seen < 8 and hasattr(value, "__array_interface__"):
        value = value.base
        seen += 1
    return value


def _outside_reads(code: Any, params: tuple[str, ...]) -> list[tuple[str, str, str, int]]:
    """(kind, name, attribute, line) of each read in `code` of a value from outside the call: a
    closed-over variable ("free"), a global ("global"), an attribute of a parameter ("attr":
    `self.table`); once per line."""
    import dis

    out: dict[tuple[str, str, str], int] = {}
    previous = None
    try:
        instructions = list(dis.get_instructions(code))
    except Exception:  # noqa: BLE001
        return []
    for ins in instructions:
        line = getattr(getattr(ins, "positions", None), "lineno", None) or ins.starts_line
        if line:
            key = None
            if ins.opname in ("LOAD_DEREF", "LOAD_CLASSDEREF") and ins.argval in code.co_freevars:
                key = ("free", str(ins.argval), "")
            elif ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                key = ("global", str(ins.argval), "")
            elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD") and previous is not None and \
                    previous.opname == "LOAD_FAST" and previous.argval in params:
                key = ("attr", str(previous.argval), str(ins.argval))
            if key is not None:
                out.setdefault((*key, int(line)), None)
        previous = ins
    return list(out)


def _small_value(value: Any) -> str | None:
    """The repr of a small hashable Python value (`False`, `3`, `'fwd'`), else None."""
    if type(value) not in _PYTHON_SCALARS and not isinstance(value, (enum.Enum, tuple)):
        return None
    try:
        hash(value)
        text = repr(value)
    except Exception:  # noqa: BLE001 - an unhashable tuple, a repr that fails
        return None
    return text if len(text) <= _MAX_VALUE_REPR else None


def _alnum(name: str) -> str:
    return "".join(ch for ch in name if ch.isalnum())


def _same_avals(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("args") == b.get("args") and a.get("pytree") == b.get("pytree")


def _transforms(eqn) -> list[str]:
    stack = str(getattr(eqn.source_info, "name_stack", "") or "")
    out = []
    for part in stack.split("/"):
        head = part.split("(", 1)[0]
        if head in _TRANSFORM_NAMES:
            out.append(head)
    return out


def _const_spec(c: Any) -> str:
    from jaxfuse_lint.core.profile import spec

    shape = getattr(c, "shape", None)
    dtype = getattr(c, "dtype", None)
    if shape is None or dtype is None:
        return type(c).__name__
    return spec({"shape": list(shape), "dtype": str(dtype)})


def _unwrap(fun: Any) -> Any:
    seen = 0
    while seen < 20:
        seen += 1
        if isinstance(fun, functools.partial):
            fun = fun.func
            continue
        inner = getattr(fun, "__wrapped__", None)
        if inner is not None and callable(inner):
            fun = inner
            continue
        func = getattr(fun, "__func__", None)  # a bound method
        if func is not None:
            fun = func
            continue
        break
    return fun


def _param_names(fun: Any) -> list[str]:
    try:
        return list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return []


def _user_call_site(rec: Recorder) -> list[tuple[str, str, int]]:
    """The user's frames that called into jax (innermost first): where the entry was called."""
    out = []
    f = sys._getframe(2)
    depth = 0
    while f is not None and depth < 200:
        depth += 1
        file = f.f_code.co_filename
        if rec.is_user_file(file) and not rec.is_jax_file(file):
            out.append((file, f.f_code.co_name, f.f_lineno))
            if len(out) >= 1:
                break
        f = f.f_back
    return out


_RECORDER: Recorder | None = None


def install(parts_dir: str | None = None, root: str | None = None) -> Recorder | None:
    """Wrap JAX's trace and compile functions (see the module docstring). Idempotent."""
    global _RECORDER
    if _RECORDER is not None:
        return _RECORDER
    parts_dir = parts_dir or os.environ.get(ENV_PARTS)
    if not parts_dir:
        return None
    try:
        from jax._src import compiler, pjit
    except Exception as exc:  # noqa: BLE001
        print(f"jaxfuse-lint record: this jax has no recordable compilation path ({exc}); nothing recorded",
              file=sys.stderr)
        return None
    rec = Recorder(parts_dir, root or os.environ.get(ENV_ROOT) or os.getcwd(),
                   costs=os.environ.get(ENV_COSTS, "1") != "0")
    trace = getattr(pjit, "_trace_for_jit", None)
    compile_fn = getattr(compiler, "compile_or_get_cached", None)
    if trace is None or _arity(trace) != 7 or compile_fn is None:
        print(f"jaxfuse-lint record: jax {rec.jax_version} changed the functions the recorder wraps "
              "(pjit._trace_for_jit, compiler.compile_or_get_cached); nothing recorded", file=sys.stderr)
        return None

    from jax._src import core

    watcher = rec.watch_calls()
    armed = _arm_on_every_trace(core, watcher)

    @functools.wraps(trace)
    def traced(fun, ji, ctx_mesh, dbg, avals, args, kwargs):
        # Inside a jit's trace the parameters' abstract values are kept too (recorded shapes).
        # Where jax has no trace context to hook, the calls are watched during jit traces only.
        top = core.trace_state_clean()
        watch = top and not armed and sys.getprofile() is None
        if top:
            rec._flags.jit = True
            rec._captures.clear()
        if watch:
            sys.setprofile(watcher)
        try:
            result = trace(fun, ji, ctx_mesh, dbg, avals, args, kwargs)
        finally:
            if watch:
                sys.setprofile(None)
            if top:
                rec._flags.jit = False
        try:
            rec.on_trace(fun, ji, dbg, avals, args, kwargs, result)
        except Exception as exc:  # noqa: BLE001 - recording must never break the user's program
            rec.errors.append(f"trace of {getattr(fun, '__name__', fun)!r}: {type(exc).__name__}: {exc}")
        return result

    @functools.wraps(compile_fn)
    def compiled(backend, computation, *rest, **kw):
        started = time.perf_counter()
        executable = compile_fn(backend, computation, *rest, **kw)
        try:
            name = str(computation.operation.attributes["sym_name"]).strip('"')
        except Exception:  # noqa: BLE001
            name = ""
        try:
            rec.on_compile(backend, name, executable, time.perf_counter() - started)
            rec.maybe_flush()
        except Exception as exc:  # noqa: BLE001
            rec.errors.append(f"compile of {name}: {type(exc).__name__}: {exc}")
        return executable

    pjit._trace_for_jit = traced
    compiler.compile_or_get_cached = compiled
    _RECORDER = rec
    atexit.register(rec.write)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=rec.after_fork_in_child)
    return rec


def _arm_on_every_trace(core: Any, watcher: Any) -> bool:
    """Watch the calls (`Recorder.watch_calls`) whenever a trace is current, whatever started it:
    jax enters every trace (a jit's, `eval_shape`'s, `vmap`'s, `grad`'s, a lax loop body's) with
    `core.set_current_trace`, so its `__enter__`/`__exit__` arm the watcher when the current trace
    stops being the top-level one and disarm it when it is again (per thread, as jax's trace
    state is). Never when another profiler (cProfile...) is active. False where this jax has no
    such context manager."""
    manager = getattr(core, "SetCurrentTraceContextManager", None)
    ctx = getattr(core, "trace_ctx", None)
    if manager is None or ctx is None or not hasattr(ctx, "is_top_level"):
        return False
    enter, leave = manager.__enter__, manager.__exit__
    state = threading.local()

    def sync() -> None:
        armed = getattr(state, "armed", False)
        if not ctx.is_top_level():
            if not armed and sys.getprofile() is None:
                sys.setprofile(watcher)
                state.armed = True
        elif armed:
            if sys.getprofile() is watcher:
                sys.setprofile(None)
            state.armed = False

    def __enter__(self):
        result = enter(self)
        try:
            sync()
        except Exception:  # noqa: BLE001 - recording must never break the user's program
            pass
        return result

    def __exit__(self, *exc_info):
        result = leave(self, *exc_info)
        try:
            sync()
        except Exception:  # noqa: BLE001
            pass
        return result

    try:
        manager.__enter__ = __enter__
        manager.__exit__ = __exit__
    except (AttributeError, TypeError):
        return False
    return True


def _arity(fn: Any) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return -1
