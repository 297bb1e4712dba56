"""Run the engine over many files: in worker processes, with the project index and the cache.

The run, for `check` and `--fix` alike:

1. Every file is read and hashed here, once: its bytes are kept for the run (what is analysed
   is what was hashed), with what the file was when read (`--fix` writes it back only while
   it still is that file). A cache hit gives its import prescan and project
   summary; otherwise the text is decoded and prescanned (regular expressions, no parse).
2. The project index (project/) is built from the prescans and the cached summaries.
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
internal error, and the run goes on; a file an internal error left unchecked is named in
`RunResult.unchecked` (the command fails), and its result is never cached: the next run
analyses it again. Nothing here writes source files.

Here: the entry points (`check_files`, `fix_files`, `RunResult`) and the main loop. Steps 1
and 2 are reading.py (with cache_replay.py: the run's record and the cache entries), step 3
is scheduling.py (the order, and cross-module re-analysis), the workers are pool.py (the
processes) and worker.py (one file in a worker); run_state.py is the per-file state they share.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.file_identity import FileIdentity
from jaxfuse_lint.engine.pipeline import FileResult, FixOutcome, decode
from jaxfuse_lint.parse.parser_guard import cpython_diagnostic, cpython_rejects
from jaxfuse_lint.run.pool import Pool
from jaxfuse_lint.run.reading import Reading
from jaxfuse_lint.run.run_state import FileState
from jaxfuse_lint.run.scheduling import Scheduling
from jaxfuse_lint.run.worker import Reply, Task

# A file whose analysis takes longer than this is abandoned (reported, not fatal).
FILE_TIMEOUT = 300.0
# Workers load the whole tool up front when more files than this are to be analysed.
PRELOAD_FROM = 8


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    fixes: list[FixOutcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # files, analysed (parsed by a worker), cached (results reused), reanalysed (import cycles)
    stats: dict[str, Any] = field(default_factory=dict)
    # What each file read was when it was read (a file is written back only while it still is).
    identities: dict[str, FileIdentity] = field(default_factory=dict)
    # Files an internal error kept from being checked, wholly or in part (a crash, a timeout, a
    # rule that failed): the run fails, and names them (pipeline.leaves_unchecked).
    unchecked: list[str] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        out = [d for r in self.results for d in r.diagnostics]
        out.sort(key=Diagnostic.sort_key)
        return out

    @property
    def undecided(self) -> list[Diagnostic]:
        """Patterns seen but not decided (preview-tier findings this run does not report)."""
        out = [d for r in self.results for d in r.undecided]
        out.sort(key=Diagnostic.sort_key)
        return out

    @property
    def sources(self) -> dict[str, str]:
        """The text of every file with diagnostics (what reporters show)."""
        return {r.filename: r.source for r in self.results if r.source is not None}


class _Run(Reading, Scheduling):
    """A run: its files read (reading.py), scheduled (scheduling.py), analysed by the pool's
    workers (pool.py, worker.py), and its results in input order."""

    # -- running --------------------------------------------------------------------------------------------
    def loop(self) -> None:
        if self.pool is None:
            self.pool = Pool(self.jobs, self.settings, self.timeout)
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

    def _crashed(self, task: Task, why: str) -> Reply:
        self.stats["crashed"] += 1
        reply = Reply(task.index)
        text = None
        try:
            text = decode(task.data)[0]
        except Exception:
            pass
        exc = cpython_rejects(text, task.filename) if text is not None else None
        result = FileResult(task.filename)
        if exc is not None:
            result.diagnostics.append(cpython_diagnostic(task.filename, exc))
        else:
            reply.errors.append(f"{task.filename}: internal error: the file could not be analysed: {why}")
        reply.result = result
        return reply

    # -- 4: results in input order ---------------------------------------------------------------------
    def finish(self) -> RunResult:
        run = RunResult(stats=dict(self.stats))
        # `analysed` counts passes (a file is analysed again when a module it imports changes what
        # it knows); `analysed_files`, files.
        run.stats["analysed_files"] = sum(1 for st in self.states if st.analysed)
        for st in self.states:
            run.errors.extend(st.errors)
            if st.internal_error:
                run.unchecked.append(st.filename)
            if st.identity is not None:
                run.identities[st.filename] = st.identity
            if st.result is None:
                continue
            result = st.result
            if result.diagnostics and result.source is None:
                result.source = self._text_of(st)
            run.results.append(result)
            if st.outcome is not None:
                run.fixes.append(st.outcome)
        self._record()
        if self.cache is not None and self.cache.error:
            run.errors.append(self.cache.error)
        return run

    def _text_of(self, st: FileState) -> str | None:
        try:
            return decode(self.read(st))[0]
        except Exception:
            return None


def _run(files: Iterable[Path | str], settings: Settings, mode: str, *, unsafe: bool = False,
         jobs: int | None = None, use_cache: bool = False, progress=None,
         timeout: float | None = None) -> RunResult:
    run = _Run(files, settings, mode, unsafe, jobs, use_cache, progress, FILE_TIMEOUT if timeout is None else timeout)
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
                use_cache: bool = False, progress=None, timeout: float | None = None) -> RunResult:
    """Check files. `jobs`: worker processes (default: one per core); `use_cache`: read and
    write the cache (the command line's default); `progress`: a Progress (progress.py)."""
    return _run(files, settings, "check", jobs=jobs, use_cache=use_cache, progress=progress, timeout=timeout)


def fix_files(files: Iterable[Path | str], settings: Settings, *, unsafe: bool, jobs: int | None = None,
              progress=None, timeout: float | None = None) -> RunResult:
    """Fix every file in memory; nothing is written here (the caller writes, or prints a diff)."""
    return _run(files, settings, "fix", unsafe=unsafe, jobs=jobs, progress=progress, timeout=timeout)
