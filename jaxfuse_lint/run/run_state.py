"""The state of a run, file by file: each file's status (pending, running, unsettled, done), its
result and the external map it was computed with, the run's statistics and progress, and how a
file's result is settled."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.file_identity import FileIdentity
from jaxfuse_lint.discover.source_bytes import read_identified_source
from jaxfuse_lint.engine.pipeline import FileResult, FixOutcome, leaves_unchecked
from jaxfuse_lint.run.pool import Pool, default_jobs


PENDING, RUNNING, UNSETTLED, DONE = "pending", "running", "unsettled", "done"


@dataclass
class FileState:
    index: int
    path: Path
    filename: str
    module: str | None = None
    is_package: bool = False
    digest: str | None = None
    key: str | None = None
    signature: list[int] | None = None  # stat_signature.file_signature, taken before reading
    # The bytes, read once (RunState.read) and analysed as read, and what the file was when read
    # (`--fix` writes it only while it is still that file: core/file_identity.py).
    data: bytes | None = None
    identity: FileIdentity | None = None
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

    @property
    def internal_error(self) -> bool:
        """An internal error kept the file from being checked, wholly or in part."""
        return any(leaves_unchecked(e) for e in self.errors)


class RunState:
    """What a run knows about each of its files and about itself (the bases of the coordinator,
    runner._Run, share it): `_settle` records a file's result. `project`, `graph` and `pos`
    (the project index, its import graph, each file's place in the canonical order) are set
    when the files have been read (reading.py)."""

    def __init__(self, files: Iterable[Path | str], settings: Settings, mode: str, unsafe: bool,
                 jobs: int | None, use_cache: bool, progress, timeout: float) -> None:
        self.settings = settings
        self.mode = mode
        self.unsafe = unsafe
        self.jobs = max(1, jobs or default_jobs())
        self.progress = progress
        self.timeout = timeout
        self.states = [FileState(i, Path(p), str(p)) for i, p in enumerate(files)]
        self.stat_time_ns = time.time_ns()  # before any file's signature is taken
        self.cache = None
        if use_cache and mode == "check":
            from jaxfuse_lint.run.cache import for_settings

            self.cache = for_settings(settings)
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
        self.pool: Pool | None = None  # started by the first file that needs a parse

    def read(self, st: FileState) -> bytes:
        """The file's bytes: read the first time they are needed, then kept for the run, so that
        every step sees the same text, the one the identity is of (OSError if unreadable)."""
        if st.data is None:
            # Regular files only, at most `max-file-size` (a notebook: `max-notebook-size`) + 1 bytes
            # (discover/source_bytes.py).
            st.data, st.identity = read_identified_source(st.path, self.settings.size_limit(st.path))
        return st.data

    def _settle(self, st: FileState, result: FileResult | None, used: dict[str, str]) -> None:
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
