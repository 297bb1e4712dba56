"""The jaxfuse-lint language server (pygls 2): diagnostics, quick fixes, fix-all, hover.

Diagnostics are published on open, change and save (changes are debounced and
analysed off the message loop, stale results dropped: scheduling.py); code actions offer each
diagnostic's fix (safe ones preferred) and a `source.fixAll.jaxfuse-lint`
action applying every safe fix; hovering a flagged range shows the rule's
documentation. Settings come from the pyproject.toml above each file, re-read
when a pyproject.toml is saved. Like `check`, it only reads source text: it
never imports jax or the code it lints.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from jaxfuse_lint import __version__
from jaxfuse_lint.config import ConfigError, Settings, load_settings
from jaxfuse_lint.diagnostics import Diagnostic
from jaxfuse_lint.server import features
from jaxfuse_lint.server.positions import UTF16, document_lines
from jaxfuse_lint.server.scheduling import LintScheduler

log = logging.getLogger(__name__)


@dataclass
class Linted:
    version: int | None
    text: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class JaxFuseLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("jaxfuse-lint", __version__)
        self.linted: dict[str, Linted] = {}
        self._settings: dict[str, Settings] = {}
        self._reported_config_errors: set[str] = set()
        self.scheduler = LintScheduler(self._document_now, self.analyse, self.publish)

    # -- helpers ---------------------------------------------------------
    @property
    def encoding(self) -> str:
        encoding = self.workspace.position_encoding if self.workspace else None
        return str(encoding.value if hasattr(encoding, "value") else encoding or UTF16)

    def settings_for(self, path: str | None) -> Settings:
        start = os.path.dirname(path) if path else (self.workspace.root_path if self.workspace else None) or "."
        if start in self._settings:
            return self._settings[start]
        try:
            settings = load_settings(None, start=start)
        except ConfigError as exc:
            message = f"jaxfuse-lint: {exc} (using the default settings)"
            if message not in self._reported_config_errors:
                self._reported_config_errors.add(message)
                self.window_show_message(types.ShowMessageParams(types.MessageType.Error, message))
            settings = Settings()
        self._settings[start] = settings
        return settings

    def lint(self, uri: str) -> Linted:
        doc = self.workspace.get_text_document(uri)
        linted = self.analyse(uri, doc.source, doc.version)
        self.publish(uri, linted)
        return linted

    def _document_now(self, uri: str) -> tuple[int | None, str]:
        doc = self.workspace.get_text_document(uri)
        return doc.version, doc.source

    def analyse(self, uri: str, text: str, version: int | None) -> Linted:
        """The diagnostics of a text of the document (also run in the scheduler's thread: it
        only reads)."""
        from jaxfuse_lint.engine import check_source

        doc = self.workspace.get_text_document(uri)
        path = doc.path if uri.startswith("file:") else None
        settings = self.settings_for(path)
        try:
            result = check_source(text, path or doc.filename or "untitled.py", settings)
        except Exception as exc:  # check_source reports what it expects; never lose the server
            return Linted(version, text, errors=[f"{uri}: internal error: {type(exc).__name__}: {exc}"])
        return Linted(version, text, result.diagnostics, list(result.errors))

    def publish(self, uri: str, linted: Linted) -> None:
        for err in linted.errors:
            self.window_log_message(types.LogMessageParams(types.MessageType.Error, err))
        self.linted[uri] = linted
        lines = document_lines(linted.text)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=linted.version,
            diagnostics=[features.lsp_diagnostic(d, lines, self.encoding) for d in linted.diagnostics],
        ))

    def current(self, uri: str) -> Linted:
        """The diagnostics for the document as it is now (re-linted if it changed since)."""
        doc = self.workspace.get_text_document(uri)
        linted = self.linted.get(uri)
        if linted is None or linted.text != doc.source:
            linted = self.lint(uri)
        return linted

    def fixed_text(self, uri: str, text: str) -> str | None:
        from jaxfuse_lint.engine import fix_source

        doc = self.workspace.get_text_document(uri)
        path = doc.path if uri.startswith("file:") else None
        try:
            return fix_source(text, path or doc.filename or "untitled.py", self.settings_for(path)).source
        except Exception as exc:  # unparsable text: nothing to fix
            log.info("fix-all: %s", exc)
            return None


def create_server() -> JaxFuseLanguageServer:
    server = JaxFuseLanguageServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: JaxFuseLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.lint(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: JaxFuseLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.scheduler.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: JaxFuseLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith(("/pyproject.toml", "/jaxfuse-lint.toml")):
            ls._settings.clear()
            for open_uri in list(ls.linted):
                ls.lint(open_uri)
            return
        ls.lint(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: JaxFuseLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.scheduler.closed(uri)
        ls.linted.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, features.FIX_ALL_KIND],
                                resolve_provider=False),
    )
    def code_action(ls: JaxFuseLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        linted = ls.current(uri)
        doc = ls.workspace.get_text_document(uri)
        return features.code_actions(
            uri, doc.version, linted.text, linted.diagnostics, params.range,
            list(params.context.only) if params.context.only else None,
            lambda: ls.fixed_text(uri, linted.text), ls.encoding,
        )

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: JaxFuseLanguageServer, params: types.HoverParams) -> types.Hover | None:
        linted = ls.current(params.text_document.uri)
        text = features.hover_markdown(linted.text, linted.diagnostics, params.position, ls.encoding)
        if text is None:
            return None
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))

    return server


def serve(**_: Any) -> None:
    create_server().start_io()
