"""Reusing results across runs: the run's record (every file's key, result and stat signature,
cache.py) replayed when nothing changed and written again after a run, and each file's cache
entry (prescan, summary, result and the external map it was computed with) written once its
result is final."""
from __future__ import annotations

from typing import TYPE_CHECKING

from jaxfuse_lint.run.cached_results import result_from_json, result_to_json
from jaxfuse_lint.run.run_state import DONE, FileState, RunState

if TYPE_CHECKING:
    from jaxfuse_lint.run.cache import RecordedFile


class CacheReplay(RunState):
    """The run's record and the cache entries (`self.cache`: None without `--cache`, and for
    `--fix`, which neither reads nor writes them)."""

    def _run_key(self) -> str:
        return self.cache.run_key([st.filename for st in self.states])

    def _replay(self, record: list[RecordedFile]) -> bool:
        try:
            results = [result_from_json(st.filename, item.result) for st, item in zip(self.states, record)]
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return False
        for st, result in zip(self.states, results):
            self.stats["cached"] += 1
            self._settle(st, result, used={})
        return True

    def _store(self, st: FileState) -> None:
        if self.cache is None or st.key is None or st.result is None or self.mode != "check":
            return
        if st.internal_error:
            return  # not a result to replay: the next run analyses it again (a timeout may not recur)
        summary = self.project.summaries.get(st.index)
        pre = self.project.files[st.index].prescan
        entry = {
            "filename": st.filename,
            "jax": st.jax,
            "prescan": pre.to_json(),
            "summary": summary.to_json() if summary is not None else None,
            "external": st.used or {},
            "result": result_to_json(st.result),
        }
        if st.entry is not None and {k: st.entry.get(k) for k in entry} == entry:
            return
        self.cache.store(st.key, entry)

    def _record(self) -> None:
        """Keep what this run found for every file, for the next run of the same files."""
        if self.cache is None or self.mode != "check" or (self.replayed and not self.rehashed):
            return
        from jaxfuse_lint.run.cache import RecordedFile, RunRecord

        record = []
        for st in self.states:
            if st.key is None or st.result is None or st.status != DONE or st.internal_error:
                return
            record.append(RecordedFile(st.filename, st.key, result_to_json(st.result), st.signature, st.module))
        self.cache.store_run(self._run_key(), RunRecord(self.stat_time_ns, record))
