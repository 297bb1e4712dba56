"""Steps 1 and 2 of a run (runner.py): every file read and hashed, or vouched for by its stat
signature; the run's record replayed when every file is as the last run left it; otherwise
each file's prescan and summary, from its cache entry or from its text, and the project index
built from them."""
from __future__ import annotations

import os

from jaxfuse_lint.engine.pipeline import FileResult, decode, mentions_jax, too_large
from jaxfuse_lint.parse.grammar import check_text
from jaxfuse_lint.parse.syntax_errors import syntax_error_diagnostic, unreadable
from jaxfuse_lint.project.import_graph import canonical_order
from jaxfuse_lint.project.index import ProjectFile, ProjectIndex
from jaxfuse_lint.project.module_names import ModuleNamer
from jaxfuse_lint.project.prescan import Prescan, prescan
from jaxfuse_lint.project.summary import Summary
from jaxfuse_lint.run.cache_replay import CacheReplay
from jaxfuse_lint.run.cached_results import entry_is_valid
from jaxfuse_lint.run.pool import Pool
from jaxfuse_lint.run.run_state import FileState


class Reading(CacheReplay):
    """`prepare`: the files read, their record replayed or the project index built."""

    def prepare(self) -> None:
        """Read and hash every file. When every file is as the last run of the same files left
        it, its results are replayed from the run's record (cache.py) and nothing else is
        done (`self.replayed`); otherwise the project index is built."""
        from jaxfuse_lint.core.stat_signature import file_signature, trusted_signature

        namer = ModuleNamer()
        pfiles: list[ProjectFile | None] = []
        record = self.cache.load_run(self._run_key()) if self.cache is not None else None
        if record is not None and len(record.files) != len(self.states):
            record = None
        deferred: list[FileState] = []  # unchanged since the record: their entries are read only if needed
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
                data = self.read(st) if big is None else None
            except OSError as exc:
                record = None
                pfiles.append(self._unreadable(st, exc))
                continue
            limit = self.settings.size_limit(st.filename)
            if data is None or (big := too_large(max(len(data), size) if len(data) > limit
                                                 else len(data), st.filename, self.settings)) is not None:
                record = None
                self._settle(st, FileResult(st.filename, [big]), used={})
                pfiles.append(ProjectFile(st.filename, None))
                continue
            st.digest = st.identity.digest
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

    def _unreadable(self, st: FileState, exc: OSError) -> ProjectFile:
        """JF000 for a file that cannot be read (gone, not permitted): the run goes on."""
        self._settle(st, FileResult(st.filename, [unreadable(st.filename, exc)]), used={})
        return ProjectFile(st.filename, None)

    def _prepare_one(self, st: FileState, data: bytes | None) -> ProjectFile:
        """The file's prescan: from its cache entry, else from its text (`data`, read now
        when not read yet)."""
        if self.cache is not None:
            entry = self.cache.load(st.key)
            if entry is not None:
                try:
                    pre = Prescan.from_json(entry["prescan"])
                    st.jax = bool(entry["jax"])
                    if entry_is_valid(st.filename, entry):
                        st.entry = entry
                        return ProjectFile(st.filename, st.module, st.is_package, pre)
                except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                    pass
                st.entry = None
        if data is None:
            try:
                data = self.read(st)
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
            broken, notice = check_text(text, st.filename, self.settings)
            if broken is not None or notice is not None:
                self._settle(st, FileResult(st.filename, [broken] if broken else [], errors=[notice] if notice else []),
                             used={})
                return ProjectFile(st.filename, None)
        if st.jax and self.pool is None:
            # This file will be parsed: a worker can load the parser while the rest is read.
            self.pool = Pool(self.jobs, self.settings, self.timeout)
            self.pool.warm_up()
        pre = prescan(text, st.module or "", st.is_package)
        return ProjectFile(st.filename, st.module, st.is_package, pre)
