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
  given diagnostics for;
- an analysis that an edit or a close has made stale is stopped at its next step (the engine
  asks `should_stop` between the parse, each rule and each finding's fix), not run to the end;
- documents of `LARGE` or more characters are analysed in a thread of their own: the largest
  document the server analyses (server.MAX_DOCUMENT) takes seconds, and a small document opened
  or edited meanwhile is analysed at once beside it, not after it (the two share the interpreter
  lock: the small one takes about twice its time, never the large one's).

A notebook is one document here, under its notebook URI (a change to any cell re-schedules
it); its "text" is a snapshot of its cells, compared as a whole (`size` says how large it is).
Other work that must stay off the message loop (`run`: the fix-all code action's fixes) goes to
the thread of its size too. `stats` counts what happened, for benchmarks/bench_lsp.py.
"""
from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

DEBOUNCE = 0.01  # seconds: long enough to coalesce messages that arrive together
LARGE = 64 << 10  # characters: a document this large takes about a second to analyse


@dataclass
class _Document:
    timer: asyncio.TimerHandle | None = None
    running: bool = False
    dirty: bool = False
    stop: threading.Event | None = None  # set when the running analysis is stale


@dataclass
class LintScheduler:
    """`current(uri) -> (version, text)` reads the document now; `analyse(uri, text, version,
    should_stop)` runs in a worker thread and returns a result that `publish(uri, result)` (on
    the event loop) sends; `should_stop()` turns true when the result would be dropped. `text`
    is anything compared with `==` (a notebook's cells) that `size` measures."""
    current: Callable[[str], tuple[int | None, Any]]
    analyse: Callable[[str, Any, int | None, Callable[[], bool]], Any]
    publish: Callable[[str, Any], None]
    debounce: float = DEBOUNCE
    size: Callable[[Any], int] = len
    stats: dict[str, int] = field(default_factory=lambda: {"changes": 0, "analysed": 0, "skipped": 0,
                                                           "dropped": 0, "stopped": 0})
    _documents: dict[str, _Document] = field(default_factory=dict)
    _executors: dict[bool, ThreadPoolExecutor] = field(default_factory=dict)  # large? -> its thread

    def changed(self, uri: str) -> None:
        """A new version of the document (call on the event loop)."""
        self.stats["changes"] += 1
        doc = self._documents.setdefault(uri, _Document())
        if doc.running:
            if doc.dirty:
                self.stats["skipped"] += 1  # the version that was waiting is superseded
            doc.dirty = True
            if doc.stop is not None:
                doc.stop.set()  # what it is analysing is stale: stop it, the newest text is next
            return
        if doc.timer is not None:
            doc.timer.cancel()
            self.stats["skipped"] += 1
        doc.timer = asyncio.get_running_loop().call_later(self.debounce, self._start, uri)

    def closed(self, uri: str) -> None:
        doc = self._documents.pop(uri, None)
        if doc is not None and doc.timer is not None:
            doc.timer.cancel()
        if doc is not None and doc.stop is not None:
            doc.stop.set()

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
        doc.stop = threading.Event()
        future = self.run(self.analyse, uri, text, version, doc.stop.is_set, large=self.size(text) >= LARGE)
        future.add_done_callback(lambda f: self._finished(uri, version, text, f))

    def run(self, function: Callable[..., Any], *args: Any, large: bool = False) -> asyncio.Future:
        """`function(*args)` in the worker thread for work of its size (`large`: of a document
        of LARGE characters or more), after the work queued there before it (call on the event
        loop; await the result)."""
        executor = self._executors.get(large)
        if executor is None:
            name = "jaxfuse-lint-analysis" + ("-large" if large else "")
            executor = self._executors[large] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        return asyncio.get_running_loop().run_in_executor(executor, function, *args)

    def _finished(self, uri: str, version: int | None, text: Any, future: asyncio.Future) -> None:
        doc = self._documents.get(uri)
        if doc is None:  # closed while it ran
            return
        doc.running = False
        stop, doc.stop = doc.stop, None
        self.stats["analysed"] += 1
        try:
            now = self.current(uri)
        except Exception:
            now = None
        if future.cancelled():
            pass
        elif future.exception() is not None:
            if stop is not None and stop.is_set():
                self.stats["stopped"] += 1  # made stale while it ran, and it stopped
        elif now == (version, text):
            self.publish(uri, future.result())
        else:
            self.stats["dropped"] += 1
        if doc.dirty or (now is not None and now != (version, text)):
            doc.dirty = False
            self._start(uri)

    def shutdown(self) -> None:
        for doc in self._documents.values():
            if doc.stop is not None:
                doc.stop.set()
        for executor in self._executors.values():
            executor.shutdown(wait=False, cancel_futures=True)
