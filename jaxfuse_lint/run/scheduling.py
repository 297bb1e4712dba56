"""Step 3 of a run (runner.py): which file is analysed next, and cross-module re-analysis.
Importers go before what they import, and a file waits for the summaries of the files that
import it, so that it is analysed with its final external map; in an import cycle a file whose
map may still change is analysed anyway, and again only if its map did change. A result that
comes back adds its file's summary to the project index and unsettles the files whose maps it
changed."""
from __future__ import annotations

import heapq

from jaxfuse_lint.engine.pipeline import FileResult
from jaxfuse_lint.project.import_graph import upstream_masks
from jaxfuse_lint.project.summary import Summary
from jaxfuse_lint.run.cache_replay import CacheReplay
from jaxfuse_lint.run.cached_results import result_from_json
from jaxfuse_lint.run.run_state import DONE, PENDING, RUNNING, UNSETTLED, FileState, read_file
from jaxfuse_lint.run.worker import Reply, Task


class Scheduling(CacheReplay):
    """`schedule`, then `_next_task` until it is None; `_receive` takes each result."""

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
                self._settle(st, result_from_json(st.filename, entry["result"]), used=external)
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
    def _next_task(self) -> Task | None:
        while True:
            st = self._next_first_pass()
            if st is not None:
                if self._cached(st):
                    continue
                if not st.jax and not self.project.external(st.index):
                    # No JAX and, so far, nothing traces it: no parse.
                    self.pending -= 1
                    task = Task(st.index, st.filename, b"", {}, st.module, st.is_package, False, self.mode)
                    self._receive(task, Reply(st.index, result=FileResult(st.filename, skipped=True)))
                    continue
                return self._task(st)
            st = self._next_unsettled()
            if st is None:
                return None
            if st.analysed:
                self.stats["reanalysed"] += 1
            return self._task(st)

    def _next_first_pass(self) -> FileState | None:
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

    def _next_unsettled(self) -> FileState | None:
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

    def _cached(self, st: FileState) -> bool:
        """Finish st from its cache entry if that was computed with the map it has now."""
        entry = st.entry
        if entry is None or entry.get("result") is None or entry.get("external") != self.project.external(st.index):
            return False
        self.pending -= 1
        self.stats["cached"] += 1
        task = Task(st.index, st.filename, b"", entry["external"], st.module, st.is_package, False, self.mode)
        self._receive(task, Reply(st.index, result=result_from_json(st.filename, entry["result"])))
        return True

    def _task(self, st: FileState) -> Task:
        try:
            data = read_file(st.path, self.settings)
        except OSError:
            data = b""
        if st.status == PENDING:
            self.pending -= 1
        st.status = RUNNING
        return Task(st.index, st.filename, data, self.project.external(st.index), st.module, st.is_package,
                     st.index not in self.project.summaries, self.mode, self.unsafe)

    # -- a result comes back ------------------------------------------------------------------------------
    def _receive(self, task: Task, reply: Reply) -> None:
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

    def _unsettle(self, st: FileState) -> None:
        st.status = UNSETTLED
        heapq.heappush(self.unsettled, (self.pos[st.index], st.index))
        self.dirty = True
