"""Run the engine over many files: in worker processes, with the project index and the cache.

The run, for `check` and `--fix` alike:

1. Every file is read and hashed here. A cache hit gives its import prescan and project
   summary; otherwise the text is decoded and prescanned (regular expressions, no parse).
2. The project index (project.py) is built from the prescans and the cached summaries.
3. Files that need analysis go to worker processes, importers before what they import,
   and a file waits for the summaries of the files that import it where the import graph
   allows, so that it is analysed with its final `external_traced` map. Each worker parses
   a file once: rules and the file's project summary come from the same model. In an
   import cycle that cannot be: a file analysed while its map may still change is analysed
   again only if its map did change (its fixes are computed the first time too: that costs
   far less than the second parse that leaving them out used to force when the map turned
   out final). Files that never mention JAX are not parsed unless another module traces
   their functions.
4. Results stream back as workers finish and are kept in the input order, so the output
   is the same whatever the number of workers and the order they finish in.

A worker that dies (a crash in the native parser) or runs past the per-file time limit is
replaced; that file gets a JF000 diagnostic when CPython also rejects it, else a one-line
internal error, and the run goes on. Nothing here writes source files.
"""
from __future__ import annotations

import heapq
import os
import re
import signal
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.engine.pipeline import (
    FileResult,
    FixOutcome,
    check_source,
    decode,
    fix_source,
    mentions_jax,
    parse_check,
    syntax_error_diagnostic,
    too_large,
)
from jaxfuse_lint.project.import_graph import canonical_order, upstream_masks
from jaxfuse_lint.project.index import ProjectFile, ProjectIndex
from jaxfuse_lint.project.module_names import ModuleNamer
from jaxfuse_lint.project.prescan import Prescan, prescan
from jaxfuse_lint.project.summary import Summary, summarize

if TYPE_CHECKING:
    from jaxfuse_lint.run.cache import RecordedFile

# A file whose analysis takes longer than this is abandoned (reported, not fatal).
FILE_TIMEOUT = 300.0
# Workers load the whole tool up front when more files than this are to be analysed.
PRELOAD_FROM = 8
# Lines this long, or brackets nested this deep, are checked by CPython's parser before
# libcst's, whose native parser can overflow its stack on such input.
LONG_LINE = 4000
DEEP_BRACKETS = 150


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    fixes: list[FixOutcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # files, analysed (parsed by a worker), cached (results reused), reanalysed (import cycles)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        out = [d for r in self.results for d in r.diagnostics]
        out.sort(key=Diagnostic.sort_key)
        return out

    @property
    def sources(self) -> dict[str, str]:
        """The text of every file with diagnostics (what reporters show)."""
        return {r.filename: r.source for r in self.results if r.source is not None}


def read_file(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# -- guarding the native parser ---------------------------------------------------------------------

_NOT_BRACKETS = re.compile(r"[^()\[\]{}]+")
_PAIR = re.compile(r"\(\)|\[\]|\{\}")


def _deep_brackets(text: str, limit: int = DEEP_BRACKETS) -> bool:
    """Brackets nested more than `limit` deep: innermost pairs are removed one level at a
    time (strings and comments are not told apart: a false alarm costs a CPython parse)."""
    s = _NOT_BRACKETS.sub("", text)
    for _ in range(limit):
        s, n = _PAIR.subn("", s)
        if not n:
            return False
    return _PAIR.search(s) is not None


def cpython_rejects(text: str, filename: str) -> BaseException | None:
    """CPython's own verdict on a text: the exception compile() raises, or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return exc
    return None


def parse_guard(data: bytes | str, filename: str) -> Diagnostic | None:
    """JF000 for text that CPython rejects and that is shaped to hurt libcst's parser."""
    try:
        text = decode(data)[0] if isinstance(data, bytes) else data
    except Exception:
        return None  # the engine reports undecodable files itself
    if filename.lower().endswith(".ipynb"):  # the cells' code, not the JSON (and its outputs)
        from jaxfuse_lint.parse.notebook import guard_cells

        return guard_cells(text, filename, _parse_guard_text)
    return _parse_guard_text(text, filename)


_LOGICAL_BREAKS = re.compile(r"[()\[\]{}]|\\?\n")
_ELIF = re.compile(r"^[ \t]*elif\b", re.MULTILINE)
# More `elif`s than this in a file: CPython's parser recurses once per `elif` of a chain.
MANY_ELIFS = 400


def _long_logical_line(text: str, limit: int = LONG_LINE) -> bool:
    """A logical line (physical lines joined inside brackets or by a backslash) longer than
    `limit`: the only way to nest expressions deeply with short lines (`(-\n-\n-\n...1)`).
    Strings and comments are not told apart: a false alarm costs a CPython parse."""
    depth, start = 0, 0
    for m in _LOGICAL_BREAKS.finditer(text):
        c = m.group()
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and c == "\n":
            if m.start() - start > limit:
                return True
            start = m.end()
    return len(text) - start > limit


def needs_cpython_check(text: str) -> bool:
    """Whether a text may nest deeply enough to overflow libcst's native parser's stack (a
    segfault) or make it run for minutes: then CPython's parser, which stops at its own
    limits with an exception, looks at it first."""
    return (max(map(len, text.split("\n")), default=0) >= LONG_LINE or _deep_brackets(text)
            or _long_logical_line(text) or len(_ELIF.findall(text)) > MANY_ELIFS)


def _parse_guard_text(text: str, filename: str) -> Diagnostic | None:
    if not needs_cpython_check(text):
        return None
    exc = cpython_rejects(text, filename)
    if exc is None:
        return None
    return _cpython_diagnostic(filename, exc)


def _cpython_diagnostic(filename: str, exc: BaseException) -> Diagnostic:
    if isinstance(exc, SyntaxError):
        return syntax_error_diagnostic(filename, exc)
    d = syntax_error_diagnostic(filename, ValueError(f"{type(exc).__name__}: {exc}"))
    if isinstance(exc, (RecursionError, MemoryError)):  # CPython's parser says MemoryError on a deep stack
        d.message = "Could not parse file: too deeply nested for CPython to compile it"
    return d


# -- the worker side -------------------------------------------------------------------------------

@dataclass
class _Task:
    index: int
    filename: str
    data: bytes
    external: dict[str, str]
    module: str | None
    is_package: bool
    want_summary: bool
    mode: str  # check | fix
    unsafe: bool = False


@dataclass
class _Reply:
    index: int
    result: FileResult | None = None
    outcome: FixOutcome | None = None
    summary: dict | None = None
    parsed: bool = False
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0  # the worker's time on this file


def analyse(task: _Task, settings: Settings) -> _Reply:
    """One file, as a worker does it (also run in-process by tests)."""
    reply = _Reply(task.index)

    def hook(model) -> None:
        reply.parsed = True
        if task.want_summary:
            try:
                reply.summary = summarize(model, task.module, task.is_package, task.filename).to_json()
            except Exception as exc:
                reply.errors.append(f"{task.filename}: internal error in the project index: "
                                    f"{type(exc).__name__}: {exc}")

    guard = parse_guard(task.data, task.filename)
    external = task.external or None
    if task.mode == "check":
        if guard is not None:
            reply.result = FileResult(task.filename, [guard])
            return reply
        try:
            result = check_source(task.data, task.filename, settings,
                                  external_traced=external, model_hook=hook)
        except Exception as exc:  # check_source catches what it expects; anything else is a bug
            result = FileResult(task.filename, errors=[f"{task.filename}: internal error: {type(exc).__name__}: {exc}"])
        if not result.diagnostics:
            result.source = None  # the text travels back only when a reporter will show it
        reply.result = result
        return reply
    if guard is not None:
        reply.result = FileResult(task.filename, [guard])
        return reply
    try:
        outcome = fix_source(task.data, task.filename, settings, unsafe=task.unsafe,
                             external_traced=external, model_hook=hook)
    except Exception as exc:  # unparsable: JF000, and the file is left alone
        text = None
        try:
            text = decode(task.data)[0]
        except Exception:
            pass
        reply.result = FileResult(task.filename, [syntax_error_diagnostic(task.filename, exc, text)])
        return reply
    reply.outcome = outcome
    return reply


def _preload_tool() -> None:
    """Load the codemods too, then take everything alive now out of the garbage collector's
    sight: its full collections no longer walk the tool itself (about 8% of a worker's time
    on the jax source)."""
    try:
        from jaxfuse_lint.codemods import fixers

        fixers()
    except Exception:
        pass  # reported per file by the engine, where it matters
    import gc

    gc.collect()
    gc.freeze()


def _worker_main(conn, settings: Settings) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the coordinator handles Ctrl-C
    import faulthandler

    faulthandler.disable()  # a crash is reported by the coordinator, on one line
    # compile() of the user's code (validating fixes) must not print its SyntaxWarnings.
    warnings.simplefilter("ignore", SyntaxWarning)
    warnings.simplefilter("ignore", DeprecationWarning)
    # The parser, the model and the rules, while the coordinator may still be reading the
    # cache (a worker can be started as soon as one file needs analysis). The codemods, the
    # heaviest import, come with PRELOAD (many files), else when a finding has a fix.
    try:
        from jaxfuse_lint.rules import all_rules

        all_rules()
    except Exception:
        pass  # reported per file by the engine, where it matters
    try:
        conn.send(READY)
    except (OSError, ValueError):
        return
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        if task == PRELOAD:
            _preload_tool()
            try:
                conn.send(READY)
            except (OSError, ValueError):
                return
            continue
        started = time.perf_counter()
        try:
            reply = analyse(task, settings)
        except Exception as exc:
            reply = _Reply(task.index, FileResult(task.filename), errors=[
                f"{task.filename}: internal error: {type(exc).__name__}: {exc}"])
        reply.seconds = time.perf_counter() - started
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


PRELOAD = "preload"  # a message to a worker: load the whole tool now
# A worker's message: it has loaded the tool (at start, after PRELOAD). The time limit of
# the task it was given counts from then: loading is not the file's fault.
READY = "ready"


class _Worker:
    def __init__(self, ctx, settings: Settings) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, settings), daemon=True)
        self.proc.start()
        child.close()
        self.task: _Task | None = None
        self.started = 0.0
        self.preloaded = False

    def send(self, task: _Task) -> None:
        self.task = task
        self.started = time.monotonic()
        self.conn.send(task)

    def kill(self) -> None:
        try:
            self.proc.kill()
            self.proc.join(5)
        except (OSError, ValueError):
            pass
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.proc.join(1)
        if self.proc.is_alive():
            self.kill()
        else:
            self.conn.close()


def start_method() -> str:
    """fork where it is safe (fast: workers start with everything imported); with other
    threads running (an editor integration) or where fork is unsafe, a fresh interpreter."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    # Native thread pools (jax's, when a test or `verify` imported it) are invisible to
    # `threading` but make fork deadlock-prone: then start fresh interpreters instead.
    native_threads = any(m in sys.modules for m in ("jax", "jaxlib", "torch", "tensorflow"))
    if "fork" in methods and sys.platform != "darwin" and threading.active_count() == 1 and not native_threads:
        return "fork"
    return "forkserver" if "forkserver" in methods else "spawn"


class _Pool:
    """Worker processes, one task each at a time, so a crash points at its file."""

    def __init__(self, jobs: int, settings: Settings, timeout: float) -> None:
        self.jobs = jobs
        self.preload = False  # set when many files are to be analysed
        self.settings = settings
        self.timeout = timeout
        import multiprocessing  # here: a run whose results all come from the cache starts no process

        self.ctx = multiprocessing.get_context(start_method())
        self.idle: list[_Worker] = []
        self.busy: list[_Worker] = []

    def free_slots(self) -> int:
        return self.jobs - len(self.busy)

    def submit(self, task: _Task) -> None:
        worker = self.idle.pop() if self.idle else _Worker(self.ctx, self.settings)
        try:
            self._send(worker, task)
        except (OSError, ValueError):  # it died while idle: start another
            worker.kill()
            worker = _Worker(self.ctx, self.settings)
            self._send(worker, task)
        self.busy.append(worker)

    def _send(self, worker: _Worker, task: _Task) -> None:
        if self.preload and not worker.preloaded:
            worker.conn.send(PRELOAD)
            worker.preloaded = True
        worker.send(task)

    def warm_up(self) -> None:
        """Start a worker ahead of its first task, so that it loads the parser meanwhile."""
        if not self.idle and not self.busy and self.jobs > 0:
            self.idle.append(_Worker(self.ctx, self.settings))

    def collect(self) -> list[tuple[_Task, _Reply | str]]:
        """Wait for at least one busy worker to finish; (task, reply or why it failed)."""
        from multiprocessing.connection import wait as wait_for

        out: list[tuple[_Task, _Reply | str]] = []
        while not out and self.busy:
            now = time.monotonic()
            deadline = min(w.started for w in self.busy) + self.timeout
            waitables = [w.conn for w in self.busy] + [w.proc.sentinel for w in self.busy]
            ready = set(wait_for(waitables, timeout=max(0.0, deadline - now)))
            for w in list(self.busy):
                task = w.task
                assert task is not None
                failure = None
                if w.conn in ready:
                    try:
                        reply = w.conn.recv()
                    except (EOFError, OSError):
                        failure = self._death(w)
                    else:
                        if reply == READY:
                            w.started = time.monotonic()
                            continue
                        self.busy.remove(w)
                        w.task = None
                        self.idle.append(w)
                        out.append((task, reply))
                        continue
                elif w.proc.sentinel in ready:
                    failure = self._death(w)
                elif time.monotonic() - w.started >= self.timeout:
                    failure = f"it took longer than {self.timeout:g} s"
                if failure is not None:
                    self.busy.remove(w)
                    w.kill()
                    out.append((task, failure))
        return out

    @staticmethod
    def _death(w: _Worker) -> str:
        w.proc.join(1)
        code = w.proc.exitcode
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            return f"the worker process died ({name})"
        return f"the worker process died (exit code {code})"

    def close(self, kill: bool = False) -> None:
        for w in self.busy:
            w.kill()
        for w in self.idle:
            w.kill() if kill else w.stop()
        self.busy, self.idle = [], []


# -- the coordinator -------------------------------------------------------------------------------

PENDING, RUNNING, UNSETTLED, DONE = "pending", "running", "unsettled", "done"


@dataclass
class _State:
    index: int
    path: Path
    filename: str
    module: str | None = None
    is_package: bool = False
    digest: str | None = None
    key: str | None = None
    signature: list[int] | None = None  # cache.file_signature, taken before reading
    jax: bool = True
    entry: dict | None = None  # the cache entry read at the start
    # pending: never analysed; running; unsettled: has a result that may not be final (its
    # external map may still change); done: final.
    status: str = PENDING
    first_done: bool = False
    analysed: bool = False  # parsed by a worker at least once
    used: dict[str, str] | None = None  # the external map of the current result
    result: FileResult | None = None
    outcome: FixOutcome | None = None
    errors: list[str] = field(default_factory=list)


class _Run:
    def __init__(self, files: Iterable[Path | str], settings: Settings, mode: str, unsafe: bool,
                 jobs: int | None, use_cache: bool, progress, timeout: float) -> None:
        self.settings = settings
        self.mode = mode
        self.unsafe = unsafe
        self.jobs = max(1, jobs or default_jobs())
        self.progress = progress
        self.timeout = timeout
        self.states = [_State(i, Path(p), str(p)) for i, p in enumerate(files)]
        self.stat_time_ns = time.time_ns()  # before any file's signature is taken
        self.cache = None
        if use_cache and mode == "check":
            from jaxfuse_lint.run.cache import Cache, default_directory

            self.cache = Cache(default_directory(settings), settings)
        self.stats: dict[str, Any] = {"files": len(self.states), "analysed": 0, "cached": 0, "reanalysed": 0,
                                      "crashed": 0, "worker_seconds": 0.0, "reanalysis_seconds": 0.0}
        self.done_count = 0
        self.unknown = 0  # bitmask of files whose summaries are not known yet
        self.unsettled: list[tuple[int, int]] = []
        self.dirty = False  # something changed that may settle an unsettled file
        self.replayed = False  # every result came from the record of the last run (prepare)
        # A file of the record was read and hashed (its stat signature could not vouch for it):
        # a replayed run then writes the record again, with signatures that now can.
        self.rehashed = False
        self.pool: _Pool | None = None  # started by the first file that needs a parse

    # -- 1 and 2: read, prescan, index ----------------------------------------------------------------
    def prepare(self) -> None:
        """Read and hash every file. When every file is as the last run of the same files left
        it, its results are replayed from the run's record (cache.py) and nothing else is
        done (`self.replayed`); otherwise the project index is built."""
        from jaxfuse_lint.run.cache import content_hash, file_signature, trusted_signature

        namer = ModuleNamer()
        pfiles: list[ProjectFile | None] = []
        record = self.cache.load_run(self._run_key()) if self.cache is not None else None
        if record is not None and len(record.files) != len(self.states):
            record = None
        deferred: list[_State] = []  # unchanged since the record: their entries are read only if needed
        for st in self.states:
            named = namer.name(st.path)
            if named is not None:
                st.module, st.is_package = named
            if self.cache is not None:
                # Before reading: a change made while the file is read shows in the next stat.
                st.signature = file_signature(st.path)
            recorded = record.files[st.index] if record is not None else None
            if (recorded is not None and recorded.filename == st.filename and recorded.module == st.module
                    and trusted_signature(recorded.signature, st.signature, record.stat_time_ns)):
                st.key = recorded.key  # unchanged since the record's run: not read or hashed
                deferred.append(st)
                pfiles.append(None)
                continue
            try:
                size = st.signature[0] if st.signature is not None else os.stat(st.path).st_size
                big = too_large(size, st.filename, self.settings)
                data = read_file(st.path) if big is None else None
            except OSError as exc:
                record = None
                pfiles.append(self._unreadable(st, exc))
                continue
            if data is None or (big := too_large(len(data), st.filename, self.settings)) is not None:
                record = None
                self._settle(st, FileResult(st.filename, [big]), used={})
                pfiles.append(ProjectFile(st.filename, None))
                continue
            st.digest = content_hash(data)
            if self.cache is not None:
                st.key = self.cache.key(st.filename, st.digest, st.module)
            if recorded is not None and (recorded.filename, recorded.key) == (st.filename, st.key):
                self.rehashed = True
                deferred.append(st)
                pfiles.append(None)
                continue
            record = None
            pfiles.append(self._prepare_one(st, data))  # first: a file to parse starts a worker
            for earlier in deferred:
                pfiles[earlier.index] = self._prepare_one(earlier, None)
            deferred = []
        self.replayed = record is not None and self._replay(record.files)
        if self.replayed:
            return
        for st in deferred:
            pfiles[st.index] = self._prepare_one(st, None)
        self.project = ProjectIndex(pfiles)
        self.graph = self.project.graph()
        order = canonical_order(self.graph, [st.filename for st in self.states])
        self.pos = {v: k for k, v in enumerate(order)}
        self.project.rank = [self.pos[i] for i in range(len(self.states))]
        for st in self.states:
            if st.entry is not None and st.entry.get("summary") is not None:
                self.project.add_summary(st.index, Summary.from_json(st.entry["summary"]))

    def _run_key(self) -> str:
        return self.cache.run_key([st.filename for st in self.states])

    def _replay(self, record: list[RecordedFile]) -> bool:
        try:
            results = [_result_from_json(st.filename, item.result) for st, item in zip(self.states, record)]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return False
        for st, result in zip(self.states, results):
            self.stats["cached"] += 1
            self._settle(st, result, used={})
        return True

    def _unreadable(self, st: _State, exc: OSError) -> ProjectFile:
        st.errors.append(f"{st.filename}: cannot read file: {exc.strerror or exc}")
        self._settle(st, None, used={})
        return ProjectFile(st.filename, None)

    def _prepare_one(self, st: _State, data: bytes | None) -> ProjectFile:
        """The file's prescan: from its cache entry, else from its text (`data`, read again
        when not given)."""
        if self.cache is not None:
            entry = self.cache.load(st.key)
            if entry is not None:
                try:
                    pre = Prescan.from_json(entry["prescan"])
                    st.jax = bool(entry["jax"])
                    if _entry_is_valid(st.filename, entry):
                        st.entry = entry
                        return ProjectFile(st.filename, st.module, st.is_package, pre)
                except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                    pass
                st.entry = None
        if data is None:
            try:
                data = read_file(st.path)
            except OSError as exc:
                return self._unreadable(st, exc)
        try:
            text, _ = decode(data)
        except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
            st.jax = False
            self._settle(st, FileResult(st.filename, [syntax_error_diagnostic(st.filename, exc, data=data)]), used={})
            return ProjectFile(st.filename, None)
        if st.filename.lower().endswith(".ipynb"):
            from jaxfuse_lint.parse.notebook import python_text

            code = python_text(text)  # the cells' code, not the JSON around it
            # A notebook that cannot be read goes to the engine, which reports why.
            st.jax = code is None or mentions_jax(code, self.settings)
            return ProjectFile(st.filename, st.module, st.is_package, prescan(code or "", st.module or "", st.is_package))
        st.jax = mentions_jax(text, self.settings)
        if not st.jax:
            # No rule will parse it unless another module traces it, but every checked
            # file gets its syntax checked (CPython's parser, to an AST only).
            broken = parse_check(text, st.filename)
            if broken is not None:
                self._settle(st, FileResult(st.filename, [broken]), used={})
                return ProjectFile(st.filename, None)
        if st.jax and self.pool is None:
            # This file will be parsed: a worker can load the parser while the rest is read.
            self.pool = _Pool(self.jobs, self.settings, self.timeout)
            self.pool.warm_up()
        pre = prescan(text, st.module or "", st.is_package)
        return ProjectFile(st.filename, st.module, st.is_package, pre)

    # -- 3: schedule ------------------------------------------------------------------------------------
    def schedule(self) -> None:
        project = self.project
        graph = self.graph
        self.upstream = upstream_masks(graph)
        # Files whose summaries are still to come. A file without JAX adds nothing unless
        # another module traces it, and then its own upstream decides when.
        for st in self.states:
            if st.status == PENDING and st.jax and st.index not in project.summaries:
                self.unknown |= 1 << st.index
        for st in self.states:
            if st.status != PENDING:
                continue
            external = project.external(st.index)
            entry = st.entry
            if entry is not None and entry.get("result") is not None and entry.get("external") == external:
                self.stats["cached"] += 1
                self._settle(st, _result_from_json(st.filename, entry["result"]), used=external)
            elif not st.jax and not external and self._final(st.index):
                self._settle(st, FileResult(st.filename, skipped=True), used={})
                self._store(st)
        # A file waits for the summaries of the files that import it and come earlier in the
        # order; an import cycle is cut where the order goes backwards.
        self.waiting = [0] * len(self.states)
        self.unblocks: list[list[int]] = [[] for _ in self.states]
        for j, targets in enumerate(graph):
            if self._known(j):
                continue
            for i in targets:
                if self.pos[j] < self.pos[i]:
                    self.waiting[i] += 1
                    self.unblocks[j].append(i)
        self.ready: list[tuple[int, int]] = []
        self.risky: list[tuple[int, int]] = []
        self.pending = 0
        for st in self.states:
            if st.status == PENDING:
                self.pending += 1
                if self.waiting[st.index] == 0:
                    heapq.heappush(self.ready, (self.pos[st.index], st.index))
            elif st.status == DONE and st.used != project.external(st.index):
                self._unsettle(st)

    def _known(self, i: int) -> bool:
        """Whether file i's summary is in the index (or it has nothing to add)."""
        return not (self.unknown >> i & 1)

    def _final(self, i: int) -> bool:
        """Whether file i's external map can no longer change: every file that can reach it
        along imports (its cycle included) has its summary in the index."""
        return not (self.upstream[i] & self.unknown & ~(1 << i))

    def _became_known(self, i: int) -> None:
        if self.unknown >> i & 1:
            self.unknown &= ~(1 << i)
            self.dirty = True

    # -- choosing the next file -------------------------------------------------------------------------
    def _next_task(self) -> _Task | None:
        while True:
            st = self._next_first_pass()
            if st is not None:
                if self._cached(st):
                    continue
                if not st.jax and not self.project.external(st.index):
                    # No JAX and, so far, nothing traces it: no parse.
                    self.pending -= 1
                    task = _Task(st.index, st.filename, b"", {}, st.module, st.is_package, False, self.mode)
                    self._receive(task, _Reply(st.index, result=FileResult(st.filename, skipped=True)))
                    continue
                return self._task(st)
            st = self._next_unsettled()
            if st is None:
                return None
            if st.analysed:
                self.stats["reanalysed"] += 1
            return self._task(st)

    def _next_first_pass(self) -> _State | None:
        # Files whose map is final first; one that may still change (downstream of, or in,
        # an import cycle not yet analysed) waits while there is anything else to do.
        while self.ready:
            item = heapq.heappop(self.ready)
            if self.states[item[1]].status != PENDING:
                continue
            if self._final(item[1]):
                return self.states[item[1]]
            heapq.heappush(self.risky, item)
        while self.risky:
            _, i = heapq.heappop(self.risky)
            if self.states[i].status == PENDING:
                return self.states[i]
        if self.pending and not self.pool.busy:
            # Nothing ready and nothing running: only possible around a cycle; go on regardless.
            first = min((self.pos[st.index], st.index) for st in self.states if st.status == PENDING)
            return self.states[first[1]]
        return None

    def _next_unsettled(self) -> _State | None:
        """An unsettled file whose map is final and that needs another pass; files that need
        none are settled on the way."""
        if not self.dirty or not self.unsettled:
            return None
        keep = []
        found = None
        while self.unsettled:
            item = heapq.heappop(self.unsettled)
            st = self.states[item[1]]
            if st.status != UNSETTLED:
                continue
            if not self._final(st.index):
                keep.append(item)
                continue
            if st.used != self.project.external(st.index):
                found = st
                break
            st.status = DONE
            self._store(st)
        for item in keep:
            heapq.heappush(self.unsettled, item)
        if found is None:
            self.dirty = False
        return found

    def _cached(self, st: _State) -> bool:
        """Finish st from its cache entry if that was computed with the map it has now."""
        entry = st.entry
        if entry is None or entry.get("result") is None or entry.get("external") != self.project.external(st.index):
            return False
        self.pending -= 1
        self.stats["cached"] += 1
        task = _Task(st.index, st.filename, b"", entry["external"], st.module, st.is_package, False, self.mode)
        self._receive(task, _Reply(st.index, result=_result_from_json(st.filename, entry["result"])))
        return True

    def _task(self, st: _State) -> _Task:
        try:
            data = read_file(st.path)
        except OSError:
            data = b""
        if st.status == PENDING:
            self.pending -= 1
        st.status = RUNNING
        return _Task(st.index, st.filename, data, self.project.external(st.index), st.module, st.is_package,
                     st.index not in self.project.summaries, self.mode, self.unsafe)

    # -- running --------------------------------------------------------------------------------------------
    def loop(self) -> None:
        if self.pool is None:
            self.pool = _Pool(self.jobs, self.settings, self.timeout)
        self.pool.preload = self.pending > PRELOAD_FROM
        try:
            while True:
                while self.pool.free_slots() > 0:
                    task = self._next_task()
                    if task is None:
                        break
                    self.pool.submit(task)
                if not self.pool.busy:
                    break
                for task, reply in self.pool.collect():
                    if isinstance(reply, str):
                        reply = self._crashed(task, reply)
                    self._receive(task, reply)
        except BaseException:
            self.pool.close(kill=True)
            raise
        self.pool.close()

    def _crashed(self, task: _Task, why: str) -> _Reply:
        self.stats["crashed"] += 1
        reply = _Reply(task.index)
        text = None
        try:
            text = decode(task.data)[0]
        except Exception:
            pass
        exc = cpython_rejects(text, task.filename) if text is not None else None
        result = FileResult(task.filename)
        if exc is not None:
            result.diagnostics.append(_cpython_diagnostic(task.filename, exc))
        else:
            reply.errors.append(f"{task.filename}: internal error: the file could not be analysed: {why}")
        reply.result = result
        return reply

    def _receive(self, task: _Task, reply: _Reply) -> None:
        st = self.states[task.index]
        self.stats["worker_seconds"] += reply.seconds
        if st.analysed:
            self.stats["reanalysis_seconds"] += reply.seconds
        if reply.parsed:
            self.stats["analysed"] += 1
            st.analysed = True
        changed: set[int] = set()
        skipped = reply.result is not None and reply.result.skipped
        if task.index not in self.project.summaries and not skipped:
            # Parsed: its summary; unparsable or crashed: it adds nothing, ever.
            summary = Summary.from_json(reply.summary) if reply.summary is not None else Summary()
            changed = self.project.add_summary(task.index, summary)
        st.errors = list(reply.errors)
        if reply.outcome is not None:
            o = reply.outcome
            st.outcome = o
            st.errors += o.errors + o.dropped
            result = FileResult(st.filename, o.remaining, o.source if o.remaining else None)
        else:
            result = reply.result or FileResult(st.filename)
            st.errors += result.errors
        if not st.first_done:
            for i in self.unblocks[task.index]:
                self.waiting[i] -= 1
                if self.waiting[i] == 0 and self.states[i].status == PENDING:
                    heapq.heappush(self.ready, (self.pos[i], i))
        self._became_known(task.index)
        # Names in the map that are not functions of the file did nothing (a re-exported
        # variable, say): compare maps on the file's own functions only.
        used = self.project.external_of(task.index, task.external)
        self._settle(st, result, used=used)
        if not self._final(task.index) or self.project.external(task.index) != used:
            self._unsettle(st)
        else:
            self._store(st)
        for j in sorted(changed):
            other = self.states[j]
            if other.status == DONE and self.project.external(j) != other.used:
                self._unsettle(other)

    def _settle(self, st: _State, result: FileResult | None, used: dict[str, str]) -> None:
        st.status = DONE
        st.result = result
        st.used = used
        if result is not None and not st.first_done:
            st.errors += [e for e in result.errors if e not in st.errors]
        if not st.first_done:
            st.first_done = True
            self.done_count += 1
            if self.progress is not None:
                self.progress.update(self.done_count)

    def _unsettle(self, st: _State) -> None:
        st.status = UNSETTLED
        heapq.heappush(self.unsettled, (self.pos[st.index], st.index))
        self.dirty = True

    def _store(self, st: _State) -> None:
        if self.cache is None or st.key is None or st.result is None or self.mode != "check":
            return
        summary = self.project.summaries.get(st.index)
        pre = self.project.files[st.index].prescan
        entry = {
            "filename": st.filename,
            "jax": st.jax,
            "prescan": pre.to_json(),
            "summary": summary.to_json() if summary is not None else None,
            "external": st.used or {},
            "result": _result_to_json(st.result),
        }
        if st.entry is not None and {k: st.entry.get(k) for k in entry} == entry:
            return
        self.cache.store(st.key, entry)

    # -- 4: results in input order ---------------------------------------------------------------------
    def finish(self) -> RunResult:
        run = RunResult(stats=dict(self.stats))
        for st in self.states:
            run.errors.extend(st.errors)
            if st.result is None:
                continue
            result = st.result
            if result.diagnostics and result.source is None:
                result.source = _text_of(st.path)
            run.results.append(result)
            if st.outcome is not None:
                run.fixes.append(st.outcome)
        self._record()
        if self.cache is not None and self.cache.error:
            run.errors.append(self.cache.error)
        return run

    def _record(self) -> None:
        """Keep what this run found for every file, for the next run of the same files."""
        if self.cache is None or self.mode != "check" or (self.replayed and not self.rehashed):
            return
        from jaxfuse_lint.run.cache import RecordedFile, RunRecord

        record = []
        for st in self.states:
            if st.key is None or st.result is None or st.status != DONE:
                return
            record.append(RecordedFile(st.filename, st.key, _result_to_json(st.result), st.signature, st.module))
        self.cache.store_run(self._run_key(), RunRecord(self.stat_time_ns, record))


def _text_of(path: Path) -> str | None:
    try:
        return decode(read_file(path))[0]
    except Exception:
        return None


def _result_to_json(result: FileResult) -> dict[str, Any]:
    diags = []
    for d in result.diagnostics:
        data = d.to_json()
        data["name"] = d.name
        if d.extra:
            data["extra"] = d.extra
        diags.append(data)
    return {"diagnostics": diags, "errors": list(result.errors), "skipped": result.skipped}


def _entry_is_valid(filename: str, entry: dict[str, Any]) -> bool:
    """Whether a cache entry has the shape this version reads (every part it is used for
    decodes): a damaged one is a miss, never a KeyError later."""
    try:
        if not (isinstance(entry["jax"], bool) and isinstance(entry["external"], dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in entry["external"].items())):
            return False
        if entry["summary"] is not None:
            Summary.from_json(entry["summary"])
        _result_from_json(filename, entry["result"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False
    return True


def _result_from_json(filename: str, data: dict[str, Any]) -> FileResult:
    diags = []
    for item in data["diagnostics"]:
        d = Diagnostic.from_json(item)
        if "name" in item:
            d.name = item["name"]
        diags.append(d)
    return FileResult(filename, diags, None, list(data.get("errors", [])), bool(data.get("skipped")))


def _run(files: Iterable[Path | str], settings: Settings, mode: str, *, unsafe: bool = False,
         jobs: int | None = None, use_cache: bool = False, progress=None,
         timeout: float = FILE_TIMEOUT) -> RunResult:
    run = _Run(files, settings, mode, unsafe, jobs, use_cache, progress, timeout)
    try:
        run.prepare()
        if not run.replayed:
            run.schedule()
            run.loop()
    finally:
        if run.pool is not None:
            run.pool.close(kill=True)  # only what an error left running
    return run.finish()


def check_files(files: Iterable[Path | str], settings: Settings, *, jobs: int | None = None,
                use_cache: bool = False, progress=None, timeout: float = FILE_TIMEOUT) -> RunResult:
    """Check files. `jobs`: worker processes (default: one per core); `use_cache`: read and
    write the cache (the command line's default); `progress`: a Progress (progress.py)."""
    return _run(files, settings, "check", jobs=jobs, use_cache=use_cache, progress=progress, timeout=timeout)


def fix_files(files: Iterable[Path | str], settings: Settings, *, unsafe: bool, jobs: int | None = None,
              progress=None, timeout: float = FILE_TIMEOUT) -> RunResult:
    """Fix every file in memory; nothing is written here (the caller writes, or prints a diff)."""
    return _run(files, settings, "fix", unsafe=unsafe, jobs=jobs, progress=progress, timeout=timeout)


def relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
