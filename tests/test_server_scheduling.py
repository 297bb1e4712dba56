"""The language server's change scheduling: a burst of changes costs one analysis, changes during
an analysis are coalesced into one more and stop it, a result for an outdated text is never
published, and a large document is analysed beside the small ones, never ahead of them."""
from __future__ import annotations

import asyncio
import threading
import time

from jaxfuse_lint.server.scheduling import LARGE, LintScheduler


class Document:
    def __init__(self) -> None:
        self.version, self.text = 0, ""

    def edit(self, version: int) -> None:
        self.version, self.text = version, f"text {version}"

    def now(self, uri: str) -> tuple[int, str]:
        return self.version, self.text


async def until(condition, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def test_changes_are_debounced_coalesced_and_stale_results_dropped():
    async def main() -> None:
        doc = Document()
        analysed: list[int] = []
        published: list[tuple[int, str]] = []
        gate = {6: threading.Event()}

        def analyse(uri: str, text: str, version: int, should_stop) -> tuple[int, str]:
            analysed.append(version)
            if version in gate:
                assert gate[version].wait(30)
            return version, text.upper()

        sched = LintScheduler(doc.now, analyse, lambda uri, result: published.append(result), debounce=0.01)
        # A burst: one analysis, of the newest text.
        for v in range(1, 6):
            doc.edit(v)
            sched.changed("file:///a.py")
        await until(lambda: published)
        assert analysed == [5] and published == [(5, "TEXT 5")]

        # Version 6 is being analysed when 7 and 8 arrive: 6 is dropped, 7 skipped, 8 analysed next.
        doc.edit(6)
        sched.changed("file:///a.py")
        await until(lambda: 6 in analysed)
        for v in (7, 8):
            doc.edit(v)
            sched.changed("file:///a.py")
        gate[6].set()
        await until(lambda: len(published) == 2)
        assert analysed == [5, 6, 8]
        assert published == [(5, "TEXT 5"), (8, "TEXT 8")]
        assert sched.stats["dropped"] == 1
        assert sched.stats["changes"] == 8

        # Closing the document while a change waits: nothing is analysed or published.
        doc.edit(9)
        sched.changed("file:///a.py")
        sched.closed("file:///a.py")
        await asyncio.sleep(0.05)
        assert analysed == [5, 6, 8] and len(published) == 2
        sched.shutdown()

    asyncio.run(main())


def test_a_failing_analysis_publishes_nothing_and_the_next_change_is_analysed():
    async def main() -> None:
        doc = Document()
        published: list[tuple[int, str]] = []

        def analyse(uri: str, text: str, version: int, should_stop) -> tuple[int, str]:
            if version == 1:
                raise RuntimeError("boom")
            return version, text

        sched = LintScheduler(doc.now, analyse, lambda uri, result: published.append(result), debounce=0.0)
        doc.edit(1)
        sched.changed("u")
        await until(lambda: sched.stats["analysed"] == 1)
        doc.edit(2)
        sched.changed("u")
        await until(lambda: published)
        assert published == [(2, "text 2")]
        sched.shutdown()

    asyncio.run(main())


def test_run_does_work_in_the_worker_thread_after_the_analyses_queued_before_it():
    async def main() -> None:
        doc = Document()
        order: list[str] = []
        gate = threading.Event()

        def analyse(uri: str, text: str, version: int, should_stop) -> int:
            assert gate.wait(30)
            order.append(f"analyse {version}")
            return version

        sched = LintScheduler(doc.now, analyse, lambda uri, result: None, debounce=0.0)
        doc.edit(1)
        sched.changed("u")
        await until(lambda: sched._documents["u"].running)
        fixed = sched.run(lambda: (order.append("run"), threading.current_thread().name)[1])
        await asyncio.sleep(0.02)
        assert not fixed.done()  # queued behind the running analysis; the loop is free meanwhile
        gate.set()
        assert (await fixed).startswith("jaxfuse-lint-analysis")
        assert order == ["analyse 1", "run"]
        sched.shutdown()

    asyncio.run(main())


class Documents:
    """Several documents, each with its own version and text."""

    def __init__(self) -> None:
        self.docs: dict[str, tuple[int, str]] = {}

    def edit(self, uri: str, version: int, text: str) -> None:
        self.docs[uri] = (version, text)

    def now(self, uri: str) -> tuple[int, str]:
        return self.docs[uri]


def test_a_large_document_being_analysed_does_not_hold_up_a_small_one():
    """Issue 37, item 7: a ~1 MB document blocked a small one opened meanwhile for minutes."""
    async def main() -> None:
        docs = Documents()
        published: list[str] = []
        large_running, release = threading.Event(), threading.Event()

        def analyse(uri: str, text: str, version: int, should_stop) -> str:
            if uri == "large":
                large_running.set()
                assert release.wait(30)
            return uri

        sched = LintScheduler(docs.now, analyse, lambda uri, result: published.append(result), debounce=0.0)
        docs.edit("large", 1, "x" * LARGE)
        sched.changed("large")
        await until(large_running.is_set)
        docs.edit("small", 1, "y = 1\n")
        sched.changed("small")
        await until(lambda: published == ["small"])  # while the large one is still being analysed
        release.set()
        await until(lambda: published == ["small", "large"])
        sched.shutdown()

    asyncio.run(main())


def test_an_analysis_made_stale_by_an_edit_or_a_close_is_stopped():
    async def main() -> None:
        docs = Documents()
        published: list[tuple[str, int]] = []
        started: list[tuple[str, int]] = []
        stopped: list[tuple[str, int]] = []

        def analyse(uri: str, text: str, version: int, should_stop) -> tuple[str, int]:
            started.append((uri, version))
            if version == 1:  # runs until it is told to stop (30 s at most)
                for _ in range(3000):
                    if should_stop():
                        stopped.append((uri, version))
                        raise RuntimeError("stopped")
                    time.sleep(0.01)
                raise AssertionError("never told to stop")
            return uri, version

        sched = LintScheduler(docs.now, analyse, lambda uri, result: published.append(result), debounce=0.0)
        docs.edit("a", 1, "v1")
        sched.changed("a")
        await until(lambda: ("a", 1) in started)
        docs.edit("a", 2, "v2")
        sched.changed("a")
        await until(lambda: published == [("a", 2)])
        assert stopped == [("a", 1)] and sched.stats["stopped"] == 1

        docs.edit("b", 1, "v1")
        sched.changed("b")
        await until(lambda: ("b", 1) in started)
        sched.closed("b")
        await until(lambda: ("b", 1) in stopped)
        docs.edit("c", 2, "v2")
        sched.changed("c")
        await until(lambda: published == [("a", 2), ("c", 2)])
        sched.shutdown()

    asyncio.run(main())
