"""The jaxfuse-lint language server (pygls 2): diagnostics, quick fixes, fix-all, hover.

Jupyter notebooks are synced cell by cell (LSP notebook document sync): each is
checked as a whole and its diagnostics published per cell (notebooks.py).

Diagnostics are published on open, change and save (changes are debounced and
analysed off the message loop, stale results dropped: scheduling.py; a notebook is
scheduled as one document, re-scheduled by a change to any cell); code actions offer each
diagnostic's fix (safe ones preferred) and a `source.fixAll.jaxfuse-lint`
action applying every safe fix, computed in the same worker thread (the handler is a
coroutine awaiting it, so the loop keeps reading messages meanwhile); hovering a flagged range shows the rule's
documentation. Settings come from the pyproject.toml above each file, re-read
when a pyproject.toml is saved. Like `check`, it only reads source text: it
never imports jax or the code it lints.
"""
from __future__ import annotations

import asyncio
import logging
import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from jaxfuse_lint.core.version import __version__
from jaxfuse_lint.core.config import ConfigError, Settings, load_settings
from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.server import features, notebooks, transport
from jaxfuse_lint.server.positions import UTF16, document_lines
from jaxfuse_lint.server.scheduling import LARGE, LintScheduler

# A document, or the code of a notebook, larger than this (UTF-8 bytes) is not analysed in the editor, nor
# `max-file-size` if lower: one JF000 says so (a 1 MB document kept the server busy for minutes).
MAX_DOCUMENT = 1 << 20

if TYPE_CHECKING:
    from jaxfuse_lint.parse.reparse import IncrementalParser

log = logging.getLogger(__name__)


@dataclass
class Linted:
    version: int | None
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    severity: tuple[tuple[str, str], ...] = ()  # the project's `[tool.jaxfuse-lint.severity]`


@dataclass
class LintedNotebook:
    """A check of a notebook's cells (as they were: `cells`): cell URI -> its diagnostics."""
    cells: list[notebooks.CellText]
    diagnostics: dict[str, list[Diagnostic]]
    errors: list[str] = field(default_factory=list)
    severity: tuple[tuple[str, str], ...] = ()


class JaxFuseLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("jaxfuse-lint", __version__, notebook_document_sync=notebooks.sync_options())
        self.linted: dict[str, Linted] = {}
        # Per open document: the last parse, to re-parse only what an edit touched (reparse.py).
        self.parsers: dict[str, IncrementalParser] = {}
        self.published_cells: dict[str, list[str]] = {}  # notebook URI -> cell URIs with diagnostics
        self._settings: dict[str, Settings] = {}
        # Bumped when a configuration file is saved: settings read before it are not cached.
        self._settings_generation = 0
        self._reported_config_errors: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None  # the message loop (set by `schedule`)
        self.scheduler = LintScheduler(self._document_now, self.analyse, self.publish, size=_size)

    # -- helpers ---------------------------------------------------------
    @property
    def encoding(self) -> str:
        encoding = self.workspace.position_encoding if self.workspace else None
        return str(encoding.value if hasattr(encoding, "value") else encoding or UTF16)

    def settings_for(self, path: str | None) -> Settings:
        start = os.path.dirname(path) if path else (self.workspace.root_path if self.workspace else None) or "."
        cached = self._settings.get(start)
        if cached is not None:
            return cached
        generation = self._settings_generation
        try:
            settings = load_settings(None, start=start)
        except ConfigError as exc:
            message = f"jaxfuse-lint: {exc} (using the default settings)"
            if message not in self._reported_config_errors:
                self._reported_config_errors.add(message)
                self._on_loop(self.window_show_message, types.ShowMessageParams(types.MessageType.Error, message))
            settings = Settings()
        if generation == self._settings_generation:  # no configuration saved meanwhile
            self._settings[start] = settings
        return settings

    def settings_changed(self) -> None:
        """A configuration file was saved (on the loop): settings are read again."""
        self._settings_generation += 1
        self._settings.clear()

    def _on_loop(self, function, *args) -> None:
        """Call FUNCTION on the message loop: directly there, through the loop from the scheduler's
        worker thread (which reads settings too): pygls' transport is not thread-safe."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(function, *args)
                return
        function(*args)

    def schedule(self, uri: str) -> None:
        """Analyse the document again, in the scheduler's thread; a cell's notebook is (its cells
        are checked together)."""
        self._loop = asyncio.get_running_loop()
        notebook = self.notebook_of(uri)
        self.scheduler.changed(notebook.uri if notebook is not None else uri)

    def _document_now(self, uri: str) -> tuple[int | None, str | tuple[notebooks.CellText, ...]]:
        """The document as it is now: a notebook (scheduled under its URI) is its cells."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            return notebook.version, tuple(self.notebook_cells(notebook))
        return self.workspace.get_text_document(uri).version, self.text_of(uri)

    def text_of(self, uri: str) -> str:
        """An open document's text; for one the editor has not opened (a hover on a file it
        only shows), the file's, when it is a regular file of at most MAX_DOCUMENT bytes (pygls
        would read any path, a FIFO too, and wait on it forever): else nothing."""
        from urllib.parse import unquote

        doc = self.workspace.get_text_document(uri)
        if unquote(uri) in self.workspace.text_documents or doc.path is None or not uri.startswith("file:"):
            return doc.source
        from jaxfuse_lint.discover.source_bytes import read_source

        # A notebook's file is mostly outputs: it is read up to `max-notebook-size` (its code is
        # bounded when it is analysed).
        limit = self.settings_for(doc.path).max_notebook_size if doc.path.lower().endswith(".ipynb") else MAX_DOCUMENT
        try:
            data = read_source(doc.path, limit)
        except OSError:
            return ""
        return data.decode("utf-8", "replace") if len(data) <= limit else ""

    @staticmethod
    def _limited(settings: Settings) -> Settings:
        return replace(settings, max_file_size=min(settings.max_file_size, MAX_DOCUMENT))

    def analyse(self, uri: str, text: str | tuple[notebooks.CellText, ...],
                version: int | None, should_stop=None) -> Linted | LintedNotebook:
        """The diagnostics of a text of the document, or of a notebook's cells (run in the
        scheduler's thread: it reads the workspace, and the document's parser takes a lock).
        `should_stop`: the scheduler's (engine.AnalysisStopped is raised when it says so)."""
        from jaxfuse_lint.engine.pipeline import check_source

        if isinstance(text, tuple):
            return self.analyse_notebook(uri, list(text), should_stop)
        doc = self.workspace.get_text_document(uri)
        path = doc.path if uri.startswith("file:") else None
        settings = self._limited(self.settings_for(path))
        size = len(text.encode("utf-8", "surrogatepass"))
        name = path or doc.filename or "untitled.py"
        if size > settings.size_limit(name):  # a notebook's code is bounded by `max-file-size` when it is read
            from jaxfuse_lint.engine.pipeline import too_large

            return Linted(version, text, [too_large(size, name, settings)])
        parser = self.parsers.get(uri)
        if parser is None:
            from jaxfuse_lint.parse.reparse import IncrementalParser

            parser = self.parsers[uri] = IncrementalParser()
        try:
            result = check_source(text, name, settings, parse=parser.parse,
                                  should_stop=should_stop)
        except Exception as exc:  # check_source reports what it expects; never lose the server
            if _stopped(exc):
                raise
            return Linted(version, text, errors=[f"{uri}: internal error: {type(exc).__name__}: {exc}"])
        return Linted(version, text, result.diagnostics, list(result.errors), settings.severity)

    def publish(self, uri: str, linted: Linted | LintedNotebook) -> None:
        if isinstance(linted, LintedNotebook):
            self.publish_notebook(uri, linted)
            return
        for err in linted.errors:
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, err))
        self.linted[uri] = linted
        lines = document_lines(linted.text)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=linted.version,
            diagnostics=[features.lsp_diagnostic(d, lines, self.encoding, linted.severity)
                         for d in linted.diagnostics],
        ))

    def current(self, uri: str) -> Linted:
        """The diagnostics for the document as it is now. One not analysed yet is scheduled,
        never analysed here, on the message loop (a long document would stall every request
        of every document): until then it has none."""
        doc = self.workspace.get_text_document(uri)
        text = self.text_of(uri)
        linted = self.linted.get(uri)
        if linted is None or linted.text != text:
            self.schedule(uri)
            return Linted(doc.version, text)
        return linted

    # -- notebooks (LSP notebook document sync; see notebooks.py) -------------
    def notebook_of(self, cell_uri: str) -> types.NotebookDocument | None:
        return self.workspace.get_notebook_document(cell_uri=cell_uri)

    def notebook_cells(self, notebook: types.NotebookDocument) -> list[notebooks.CellText]:
        cells = []
        for cell in notebook.cells:
            doc = self.workspace.get_text_document(cell.document)
            code = cell.kind == types.NotebookCellKind.Code and (doc.language_id or "python") == "python"
            cells.append(notebooks.CellText(cell.document, doc.version, doc.source, code))
        return cells

    @staticmethod
    def notebook_path(uri: str) -> str | None:
        from pygls.uris import to_fs_path

        return to_fs_path(uri) if uri.startswith("file:") else None

    def analyse_notebook(self, notebook_uri: str, cells: list[notebooks.CellText],
                         should_stop=None) -> LintedNotebook:
        """Check a notebook's cells (in the scheduler's thread); one over MAX_DOCUMENT (or
        `max-file-size`) is not analysed, as a document is not: its first cell says so."""
        from jaxfuse_lint.engine.pipeline import check_source

        path = self.notebook_path(notebook_uri)
        settings = self._limited(self.settings_for(path))
        try:
            result = check_source(notebooks.notebook_json(cells), path or "untitled.ipynb", settings,
                                  should_stop=should_stop)
        except Exception as exc:  # as for a document: never lose the server, say so
            if _stopped(exc):
                raise
            return LintedNotebook(cells, notebooks.by_cell(cells, []),
                                  errors=[f"{notebook_uri}: internal error: {type(exc).__name__}: {exc}"])
        return LintedNotebook(cells, notebooks.by_cell(cells, result.diagnostics), list(result.errors),
                              settings.severity)

    def publish_notebook(self, notebook_uri: str, checked: LintedNotebook) -> None:
        """Publish each cell's diagnostics (on the event loop), clearing those of cells gone since
        the last check."""
        for err in checked.errors:
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, err))
        out: dict[str, Linted] = {}
        grouped, cells = checked.diagnostics, checked.cells
        for cell in cells:
            linted = Linted(cell.version, cell.text, grouped.get(cell.uri, []), severity=checked.severity)
            out[cell.uri] = self.linted[cell.uri] = linted
            if cell.code:
                lines = document_lines(cell.text)
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                    uri=cell.uri, version=cell.version,
                    diagnostics=[features.lsp_diagnostic(d, lines, self.encoding, linted.severity)
                                 for d in linted.diagnostics]))
        # Cells deleted since the last check lose their diagnostics.
        for gone in set(self.published_cells.get(notebook_uri, ())) - set(out):
            self.forget_cell(gone)
        self.published_cells[notebook_uri] = list(out)

    def forget_cell(self, uri: str) -> None:
        self.linted.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    async def notebook_code_actions(self, notebook: types.NotebookDocument,
                                    params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = self.current(uri)
        cells = self.notebook_cells(notebook)
        path = self.notebook_path(notebook.uri)
        only = list(params.context.only) if params.context.only else None
        fixed = None
        if features.wants_fix_all(linted.diagnostics, only):  # off the loop, on these cells
            fixed = await self.scheduler.run(self.fixed_cells, cells, path, large=_size(tuple(cells)) >= LARGE)
        return notebooks.code_actions(uri, cells, linted.diagnostics, params.range, only,
                                      lambda: fixed, self.encoding)

    def fixed_cells(self, cells: list[notebooks.CellText], path: str | None) -> dict[int, str] | None:
        """Cell number -> text for the cells every safe fix changes (in the scheduler's thread)."""
        from jaxfuse_lint.engine.pipeline import fix_source

        source = notebooks.notebook_json(cells)
        try:
            outcome = fix_source(source, path or "untitled.ipynb", self._limited(self.settings_for(path)))
        except Exception as exc:  # unparsable cells: nothing to fix
            log.info("fix-all: %s", exc)
            return None
        if outcome.undecodable is not None:  # too large: left alone
            return None
        return notebooks.fixed_cells(source, outcome.source)

    def fixed_text(self, uri: str, text: str) -> str | None:
        """The text with every safe fix applied (in the scheduler's thread)."""
        from jaxfuse_lint.engine.pipeline import fix_source

        doc = self.workspace.get_text_document(uri)
        path = doc.path if uri.startswith("file:") else None
        try:
            outcome = fix_source(text, path or doc.filename or "untitled.py", self._limited(self.settings_for(path)))
        except Exception as exc:  # unparsable text: nothing to fix
            log.info("fix-all: %s", exc)
            return None
        return None if outcome.undecodable is not None else outcome.source  # too large: left alone


def _size(text: str | tuple[notebooks.CellText, ...]) -> int:
    """How large a document's text, or a notebook's cells, is (characters): the scheduler's lane."""
    return len(text) if isinstance(text, str) else sum(len(cell.text) for cell in text)


def _stopped(exc: Exception) -> bool:
    from jaxfuse_lint.engine.pipeline import AnalysisStopped

    return isinstance(exc, AnalysisStopped)


def create_server() -> JaxFuseLanguageServer:
    server = JaxFuseLanguageServer()

    # Documents and notebooks are analysed in the scheduler's worker thread, never on the message loop.
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: JaxFuseLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: JaxFuseLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: JaxFuseLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith(("/pyproject.toml", "/jaxfuse-lint.toml")):
            ls.settings_changed()
            for open_uri in list(ls.linted):
                ls.schedule(open_uri)  # a cell: its notebook
            return
        ls.schedule(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: JaxFuseLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.scheduler.closed(uri)
        ls.linted.pop(uri, None)
        ls.parsers.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: JaxFuseLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.scheduler.changed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: JaxFuseLanguageServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.scheduler.changed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: JaxFuseLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.scheduler.changed(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: JaxFuseLanguageServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.scheduler.closed(params.notebook_document.uri)
        ls.published_cells.pop(params.notebook_document.uri, None)
        for cell in params.cell_text_documents:
            ls.forget_cell(cell.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, features.FIX_ALL_KIND],
                                resolve_provider=False),
    )
    async def code_action(ls: JaxFuseLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        # A coroutine: the fix-all's fixes are computed in the scheduler's thread while the loop
        # keeps answering (a cancelled request cancels only the wait).
        uri = params.text_document.uri
        notebook = ls.notebook_of(uri)
        if notebook is not None:
            return await ls.notebook_code_actions(notebook, params)
        linted = ls.current(uri)
        doc = ls.workspace.get_text_document(uri)
        version = doc.version
        only = list(params.context.only) if params.context.only else None
        fixed = None
        if features.wants_fix_all(linted.diagnostics, only):
            fixed = await ls.scheduler.run(ls.fixed_text, uri, linted.text, large=len(linted.text) >= LARGE)
        return features.code_actions(
            uri, version, linted.text, linted.diagnostics, params.range, only,
            lambda: fixed, ls.encoding,
        )

    @server.feature(transport.DISCARDED)
    def message_discarded(ls: JaxFuseLanguageServer, params: Any) -> None:
        ls.window_log_message(types.LogMessageParams(types.MessageType.Error, transport.discarded_message(params)))

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: JaxFuseLanguageServer, params: types.HoverParams) -> types.Hover | None:
        linted = ls.current(params.text_document.uri)
        text = features.hover_markdown(linted.text, linted.diagnostics, params.position, ls.encoding)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    return server


def serve(**_: Any) -> None:
    import sys

    # Analyses run in a worker thread (scheduling.py) and hold the GIL for ~0.2 s each. With
    # CPython's default 5 ms switch interval the thread reading messages got the GIL so rarely
    # that a burst of keystrokes queued up behind them: typing 20 edits 30 ms apart, the last
    # one's diagnostics came 2.2 s after it; with 1 ms, 0.2 s (benchmarks/bench_lsp.py).
    sys.setswitchinterval(0.001)
    create_server().start_io(transport.BoundedInput(sys.stdin.buffer), sys.stdout.buffer)
