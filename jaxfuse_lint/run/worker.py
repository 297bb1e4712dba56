"""One file as a worker process analyses it: the task and reply that travel between the
coordinator and a worker, the parse guard run before the engine (a deeply nested text could
crash libcst's native parser, and with it the worker), the engine's check or fix with the
file's project summary taken from the same model, and the worker's main loop."""
from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from dataclasses import dataclass, field

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.engine.pipeline import FileResult, FixOutcome, check_source, decode, fix_source
from jaxfuse_lint.parse.grammar import cpython_reads
from jaxfuse_lint.parse.parser_guard import cpython_rejects, parse_guard_text
from jaxfuse_lint.parse.syntax_errors import syntax_error_diagnostic
from jaxfuse_lint.project.summary import summarize


def parse_guard(data: bytes | str, filename: str, settings: Settings | None = None) -> Diagnostic | None:
    """JF000 for text that CPython rejects and that is shaped to hurt libcst's parser. Where the
    running Python does not read the project's grammar, its rejection is no verdict: the engine
    says the file was not checked (parse/grammar.py)."""
    if settings is not None and not cpython_reads(settings):
        return None
    try:
        text = decode(data)[0] if isinstance(data, bytes) else data
    except Exception:
        return None  # the engine reports undecodable files itself
    if filename.lower().endswith(".ipynb"):
        return None  # the engine guards each cell on its own (IPython compiles cell by cell)
    return parse_guard_text(text, filename)


@dataclass
class Task:
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
class Reply:
    index: int
    result: FileResult | None = None
    outcome: FixOutcome | None = None
    summary: dict | None = None
    parsed: bool = False
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0  # the worker's time on this file


def analyse(task: Task, settings: Settings) -> Reply:
    """One file, as a worker does it (also run in-process by tests)."""
    reply = Reply(task.index)

    def hook(model) -> None:
        reply.parsed = True
        if task.want_summary:
            try:
                reply.summary = summarize(model, task.module, task.is_package, task.filename).to_json()
            except Exception as exc:
                reply.errors.append(f"{task.filename}: internal error in the project index: "
                                    f"{type(exc).__name__}: {exc}")

    guard = parse_guard(task.data, task.filename, settings)
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
    except Exception as exc:  # the file is left alone
        text = None
        try:
            text = decode(task.data)[0]
        except Exception:
            pass
        if isinstance(exc, SyntaxError) or (text is not None and cpython_rejects(text, task.filename) is not None):
            reply.result = FileResult(task.filename, [syntax_error_diagnostic(task.filename, exc, text,
                                                                              cpython=cpython_reads(settings))])
        else:  # fix_source reports what does not parse itself: anything else is a bug, not the file's
            reply.result = FileResult(task.filename, errors=[
                f"{task.filename}: internal error: {type(exc).__name__}: {exc}"])
        return reply
    reply.outcome = outcome
    return reply


def preload_tool() -> None:
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


def worker_main(conn, settings: Settings, parent: int | None = None, inherited: tuple[int, ...] = ()) -> None:
    """A worker's life: tasks from `conn` until None, or until the coordinator (`parent`) is gone.
    `inherited`: pipe ends a forked worker holds of its coordinator's (pool.py) and closes."""
    _bind_to_parent(parent, inherited)
    if parent is not None and not _alive(parent):
        return  # the coordinator ended before this worker could bind to it
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
            preload_tool()
            try:
                conn.send(READY)
            except (OSError, ValueError):
                return
            continue
        started = time.perf_counter()
        try:
            reply = analyse(task, settings)
        except Exception as exc:
            reply = Reply(task.index, FileResult(task.filename), errors=[
                f"{task.filename}: internal error: {type(exc).__name__}: {exc}"])
        reply.seconds = time.perf_counter() - started
        try:
            conn.send(reply)
        except (OSError, ValueError):
            return


def _bind_to_parent(parent: int | None, inherited: tuple[int, ...]) -> None:
    """No worker outlives its coordinator, whatever ends it (`kill -9` included). On Linux the
    kernel kills the worker when its parent process ends; anywhere, a worker stops when its pipe
    ends (`recv` raises EOFError in `worker_main`), which needs the coordinator's ends of the
    pipes to be held by the coordinator alone: a forked worker closes its copies."""
    for fd in inherited:
        try:
            os.close(fd)
        except OSError:
            pass
    _die_with_parent()


def _die_with_parent() -> None:
    """Linux: SIGKILL to this process when its parent ends (prctl PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # the pipe's end still stops it


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # there, but not ours to signal
    return True


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PRELOAD = "preload"  # a message to a worker: load the whole tool now
# A worker's message: it has loaded the tool (at start, after PRELOAD). The time limit of
# the task it was given counts from then: loading is not the file's fault.
READY = "ready"
