"""When the language server analyses a document that is being edited.

Typing sends a `didChange` per keystroke; analysing each one in turn on the thread that reads
the messages queues work behind work, and the diagnostics shown lag further behind the more
one types. Instead, for each document:

- a change waits `debounce` seconds for the next one (a paste or a burst of messages costs
  one analysis), then is analysed in a worker thread, so that the server keeps reading;
- while an analysis runs, later changes only mark the document dirty: when it finishes, the
  newest text is analysed next, and every version in between is skipped;
- a result for a text that is no longer the document's is dropped, never published: the
  editor only ever sees diagnostics of the text it shows or of a text it is about to be
  given diagnostics for.

A notebook is one document here, under its notebook URI (a change to any cell re-schedules
it); its "text" is a snapshot of its cells, compared as a whole. One worker thread serves all
documents (analysis is CPU-bound Python: more threads would only share the interpreter lock), and
other work that must stay off the message loop (`run`: the fix-all code action's fixes). `stats`
counts what happened, for benchmarks/bench_lsp.py.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

DEBOUNCE = 0.01  # seconds: long enough to coalesce messages that arrive together


@dataclass
class _Document:
    timer: asyncio.TimerHandle | None = None
    running: bool = False
    dirty: bool = False


@dataclass
class LintScheduler:
    """`current(uri) -> (version, text)` reads the document now; `analyse(uri, text, version)`
    runs in the worker thread and returns a result that `publish(uri, result)` (on the event
    loop) sends. `text` is anything compared with `==` (a notebook's cells)."""
    current: Callable[[str], tuple[int | None, Any]]
    analyse: Callable[[str, Any, int | None], Any]
    publish: Callable[[str, Any], None]
    debounce: float = DEBOUNCE
    stats: dict[str, int] = field(default_factory=lambda: {"changes": 0, "analysed": 0, "skipped": 0,
                                                           "dropped": 0})
    _documents: dict[str, _Document] = field(default_factory=dict)
    _executor: ThreadPoolExecutor | None = None

    def changed(self, uri: str) -> None:
        """A new version of the document (call on the event loop)."""
        self.stats["changes"] += 1
        doc = self._documents.setdefault(uri, _Document())
        if doc.running:
            if doc.dirty:
                self.stats["skipped"] += 1  # the version that was waiting is superseded
            doc.dirty = True
            return
        if doc.timer is not None:
            doc.timer.cancel()
            self.stats["skipped"] += 1
        doc.timer = asyncio.get_running_loop().call_later(self.debounce, self._start, uri)

    def closed(self, uri: str) -> None:
        doc = self._documents.pop(uri, None)
        if doc is not None and doc.timer is not None:
            doc.timer.cancel()

    def _start(self, uri: str) -> None:
        doc = self._documents.get(uri)
        if doc is None:
            return
        doc.timer = None
        doc.running, doc.dirty = True, False
        try:
            version, text = self.current(uri)
        except Exception:  # closed meanwhile
            doc.running = False
            return
        future = self.run(self.analyse, uri, text, version)
        future.add_done_callback(lambda f: self._finished(uri, version, text, f))

    def run(self, function: Callable[..., Any], *args: Any) -> asyncio.Future:
        """`function(*args)` in the worker thread, after the work queued before it (call on the
        event loop; await the result)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jaxfuse-lint-analysis")
        return asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def _finished(self, uri: str, version: int | None, text: Any, future: asyncio.Future) -> None:
        doc = self._documents.get(uri)
        if doc is None:  # closed while it ran
            return
        doc.running = False
        self.stats["analysed"] += 1
        try:
            now = self.current(uri)
        except Exception:
            now = None
        if future.cancelled() or future.exception() is not None:
            pass
        elif now == (version, text):
            self.publish(uri, future.result())
        else:
            self.stats["dropped"] += 1
        if doc.dirty or (now is not None and now != (version, text)):
            doc.dirty = False
            self._start(uri)

    def shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
