"""The worker processes of a run: how they are started (fork where that is safe), one task each
at a time so that a crash points at its file, and how a worker that dies or runs past the
per-file time limit is noticed and replaced. No worker outlives the run's process, however
that ends (worker.py: `worker_main` binds each to its parent)."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.run.worker import PRELOAD, READY, Reply, Task, worker_main


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class _Worker:
    def __init__(self, ctx, settings: Settings, held: tuple[int, ...] = ()) -> None:
        """`held`: the file descriptors of the other workers' pipe ends this process holds. A forked
        worker closes them, and its own coordinator's end: those ends must be this process's
        alone, so that each worker sees its pipe end when this process does."""
        self.conn, child = ctx.Pipe()
        inherited = (*held, self.conn.fileno()) if ctx.get_start_method() == "fork" else ()
        self.proc = ctx.Process(target=worker_main, args=(child, settings, os.getpid(), inherited), daemon=True)
        self.proc.start()
        child.close()
        self.task: Task | None = None
        self.started = 0.0
        self.preloaded = False

    def send(self, task: Task) -> None:
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


# Imported by the forkserver before it forks a worker: workers start with the tool loaded (preload.py).
FORKSERVER_PRELOAD = ("jaxfuse_lint.run.preload",)


def context(method: str):
    """The multiprocessing context of METHOD; a forkserver's loads the tool once, before it forks
    any worker (where it has not started yet)."""
    import multiprocessing

    ctx = multiprocessing.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(list(FORKSERVER_PRELOAD))
    return ctx


class Pool:
    """Worker processes, one task each at a time, so a crash points at its file."""

    def __init__(self, jobs: int, settings: Settings, timeout: float) -> None:
        self.jobs = jobs
        self.preload = False  # set when many files are to be analysed
        self.settings = settings
        self.timeout = timeout
        self.ctx = context(start_method())  # here: a run whose results all come from the cache starts no process
        self.idle: list[_Worker] = []
        self.busy: list[_Worker] = []

    def free_slots(self) -> int:
        return self.jobs - len(self.busy)

    def held(self) -> tuple[int, ...]:
        """This process's ends of its workers' pipes (what a forked worker must not keep open)."""
        return tuple(w.conn.fileno() for w in self.idle + self.busy if not w.conn.closed)

    def _start(self) -> _Worker:
        return _Worker(self.ctx, self.settings, self.held())

    def submit(self, task: Task) -> None:
        worker = self.idle.pop() if self.idle else self._start()
        try:
            self._send(worker, task)
        except (OSError, ValueError):  # it died while idle: start another
            worker.kill()
            worker = self._start()
            self._send(worker, task)
        self.busy.append(worker)

    def _send(self, worker: _Worker, task: Task) -> None:
        if self.preload and not worker.preloaded:
            worker.conn.send(PRELOAD)
            worker.preloaded = True
        worker.send(task)

    def warm_up(self) -> None:
        """Start a worker ahead of its first task, so that it loads the parser meanwhile."""
        if not self.idle and not self.busy and self.jobs > 0:
            self.idle.append(self._start())

    def collect(self) -> list[tuple[Task, Reply | str]]:
        """Wait for at least one busy worker to finish; (task, reply or why it failed)."""
        from multiprocessing.connection import wait as wait_for

        out: list[tuple[Task, Reply | str]] = []
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
