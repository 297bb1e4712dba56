"""The language server keeps its message loop free: a notebook is checked, and the fix-all code
action's fixes are computed, in the scheduler's worker thread, never in the handler (a big notebook
or a slow fix-all stalled every request, hover and cancellation included).

In-process: the pygls server's handlers are called on an asyncio loop as its message loop calls
them, with the workspace updated first as pygls does; `check_source` and `fix_source` record the
thread they run in and can be held, to see the loop answer meanwhile."""
from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.workspace import Workspace  # noqa: E402

from jaxfuse_lint.core.config import load_settings  # noqa: E402
from jaxfuse_lint.engine import pipeline  # noqa: E402
from jaxfuse_lint.server import features, notebooks  # noqa: E402
from jaxfuse_lint.server.server import create_server  # noqa: E402
from tests.test_server_lsp import SOURCE, apply_text_edits  # noqa: E402
from tests.test_server_scheduling import until  # noqa: E402
from tests.test_review_support import install_jf101_fixer  # noqa: E402

# A notebook's cells: `f` defined in one, jitted in the next; its 2-wide sum, with kept dims and
# added back, is a form the h100 table reports.
CELL_DEFS = (
    "import jax\n"
    "import jax.numpy as jnp\n"
    "\n"
    "def f(x):\n"
    "    v = jnp.stack([x, 2 * x], axis=-1)\n"
    "    return v + jnp.sum(v * v, axis=-1, keepdims=True)\n"
)
CELL_JIT = "%time y = 1\nf_jit = jax.jit(f)  # traces f, defined in the cell before\n!echo done\n"

WORKER = "jaxfuse-lint-analysis"
WHOLE = types.Range(types.Position(0, 0), types.Position(100, 0))


class Held:
    """Wraps an engine function: records the threads it runs in (never the loop's, the main
    thread); `hold()` makes the next calls wait for `release()`."""

    def __init__(self, function) -> None:
        self.function = function
        self.threads: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, *args, **kwargs):
        self.threads.append(threading.current_thread().name)
        if threading.current_thread() is threading.main_thread():  # the loop's: fail, don't wait
            raise AssertionError(f"{self.function.__name__} ran on the message loop")
        assert self.gate.wait(30), "never released"
        return self.function(*args, **kwargs)

    def hold(self) -> None:
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()


@pytest.fixture
def server(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF101"]\n')
    install_jf101_fixer(monkeypatch)  # a safe JF101 fix (the real one is not): fix-all has work
    ls = create_server()
    ls.protocol._workspace = Workspace(tmp_path.as_uri(), types.TextDocumentSyncKind.Full, [], "utf-16")
    ls.published = []  # (thread, PublishDiagnosticsParams)
    monkeypatch.setattr(ls, "text_document_publish_diagnostics",
                        lambda p: ls.published.append((threading.current_thread().name, p)))
    ls.logged = []
    monkeypatch.setattr(ls, "window_log_message", lambda p: ls.logged.append(p.message))
    ls.check = Held(pipeline.check_source)
    ls.fix = Held(pipeline.fix_source)
    monkeypatch.setattr(pipeline, "check_source", ls.check)
    monkeypatch.setattr(pipeline, "fix_source", ls.fix)
    yield ls
    ls.check.release()
    ls.fix.release()
    ls.scheduler.shutdown()


def handler(ls, method):
    return ls.protocol.fm.features[method]


def diagnostics_of(ls, uri: str) -> list[tuple[int | None, list[str]]]:
    """(version, codes) of every publication for a document, in order."""
    return [(p.version, [d.code for d in p.diagnostics]) for _, p in ls.published if p.uri == uri]


def test_a_notebook_is_checked_off_the_loop_per_notebook_stale_results_dropped(server, tmp_path):
    ls = server
    nb_uri = (tmp_path / "analysis.ipynb").as_uri()
    cells = [f"vscode-notebook-cell:{tmp_path / 'analysis.ipynb'}#W{i}sZmlsZQ%3D%3D" for i in range(3)]
    texts = ["# Notes\n", CELL_DEFS, CELL_JIT]

    async def main() -> None:
        loop_thread = threading.current_thread().name
        ls.check.hold()
        opened = types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=nb_uri, notebook_type="jupyter-notebook", version=1, cells=[
                types.NotebookCell(kind=types.NotebookCellKind.Markup, document=cells[0]),
                types.NotebookCell(kind=types.NotebookCellKind.Code, document=cells[1]),
                types.NotebookCell(kind=types.NotebookCellKind.Code, document=cells[2])]),
            cell_text_documents=[
                types.TextDocumentItem(uri=cells[0], language_id="markdown", version=1, text=texts[0]),
                types.TextDocumentItem(uri=cells[1], language_id="python", version=1, text=texts[1]),
                types.TextDocumentItem(uri=cells[2], language_id="python", version=1, text=texts[2])])
        ls.workspace.put_notebook_document(opened)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_OPEN)(opened)
        # The handler returned before any analysis; it runs in the worker thread.
        assert ls.check.threads == [] and ls.published == []
        await until(lambda: ls.check.threads)
        assert ls.check.threads == [f"{WORKER}_0"] and loop_thread != ls.check.threads[0]

        # While that check is held, the loop answers a hover on a cell (nothing known yet) ...
        hover = handler(ls, types.TEXT_DOCUMENT_HOVER)(types.HoverParams(
            types.TextDocumentIdentifier(cells[1]), types.Position(5, 12)))
        assert hover is None
        # ... and takes an edit of cell 2: the held check's result is for an outdated text.
        fixed_defs = CELL_DEFS.replace("jnp.sum(v * v, axis=-1, keepdims=True)", "(v * v)[..., 0:1] + (v * v)[..., 1:2]")
        change = types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=2),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cells[1], version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=fixed_defs)])])))
        ls.workspace.update_notebook_document(change)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_CHANGE)(change)
        assert len(ls.check.threads) == 1
        ls.check.release()
        await until(lambda: diagnostics_of(ls, cells[1]))
        # One notebook, one document for the scheduler: the held check was stopped (its text was
        # stale), the newest cells checked next, each code cell published (on the loop), the
        # markdown cell not.
        assert ls.scheduler.stats["analysed"] == 2 and ls.scheduler.stats["stopped"] == 1
        assert set(ls.check.threads) == {f"{WORKER}_0"}  # (a notebook's check calls check_source again)
        assert diagnostics_of(ls, cells[1]) == [(2, [])]
        assert diagnostics_of(ls, cells[2]) == [(1, [])]
        assert diagnostics_of(ls, cells[0]) == []
        assert {thread for thread, _ in ls.published} == {loop_thread}

        # Back to the flagged text: JF101 on cell 2 (cell 3 jits its `f`).
        change2 = types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=3),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cells[1], version=3),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=CELL_DEFS)])])))
        ls.workspace.update_notebook_document(change2)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_CHANGE)(change2)
        await until(lambda: len(diagnostics_of(ls, cells[1])) == 2)
        assert diagnostics_of(ls, cells[1])[-1] == (3, ["JF101"])
        assert ls.current(cells[1]).diagnostics[0].code == "JF101"

        # Removing cell 3 (a structure change): cell 2 is no longer traced, cell 3's cleared.
        removed = types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(uri=nb_uri, version=4),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                structure=types.NotebookDocumentCellChangeStructure(
                    array=types.NotebookCellArrayChange(start=2, delete_count=1),
                    did_close=[types.TextDocumentIdentifier(cells[2])]))))
        ls.workspace.update_notebook_document(removed)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_CHANGE)(removed)
        await until(lambda: len(diagnostics_of(ls, cells[1])) == 3)
        assert diagnostics_of(ls, cells[1])[-1] == (3, [])
        assert diagnostics_of(ls, cells[2])[-1] == (None, [])

        # Closing the notebook while a check waits: nothing more is checked or published.
        n_checks, n_published = len(ls.check.threads), len(ls.published)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_SAVE)(types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(nb_uri)))
        closed = types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(nb_uri),
            cell_text_documents=[types.TextDocumentIdentifier(cells[0]), types.TextDocumentIdentifier(cells[1])])
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_CLOSE)(closed)
        ls.workspace.remove_notebook_document(closed)
        await asyncio.sleep(0.1)
        assert len(ls.check.threads) == n_checks
        assert [p.diagnostics for _, p in ls.published[n_published:]] == [[], []]

    asyncio.run(main())


def code_action_params(uri: str, only: list[str] | None) -> types.CodeActionParams:
    return types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri), range=WHOLE,
                                  context=types.CodeActionContext(diagnostics=[], only=only))


def test_fix_all_is_computed_off_the_loop_with_the_same_edits(server, tmp_path):
    ls = server
    path = tmp_path / "model.py"
    uri = path.as_uri()

    async def main() -> None:
        loop_thread = threading.current_thread().name
        opened = types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, SOURCE))
        ls.workspace.put_text_document(opened.text_document)
        handler(ls, types.TEXT_DOCUMENT_DID_OPEN)(opened)
        await until(lambda: diagnostics_of(ls, uri))
        assert diagnostics_of(ls, uri) == [(1, ["JF101"])]

        ls.fix.hold()
        request = asyncio.ensure_future(handler(ls, types.TEXT_DOCUMENT_CODE_ACTION)(
            code_action_params(uri, [types.CodeActionKind.SourceFixAll])))
        await until(lambda: ls.fix.threads)
        # The fixes are being computed in the worker thread; the loop answers a hover meanwhile.
        assert ls.fix.threads == [f"{WORKER}_0"] and loop_thread != ls.fix.threads[0]
        assert not request.done()
        linted = ls.current(uri)
        d = features.lsp_diagnostic(linted.diagnostics[0], SOURCE.splitlines(keepends=True))
        hover = handler(ls, types.TEXT_DOCUMENT_HOVER)(types.HoverParams(types.TextDocumentIdentifier(uri),
                                                                         d.range.start))
        assert "small-axis-reduction" in hover.contents.value
        ls.fix.release()
        actions = await request
        assert [a.kind for a in actions] == [features.FIX_ALL_KIND]

        # The same action as computing the fixes in place, as the handler did before (the engine
        # called from another thread: the loop's refuses).
        settings = load_settings(None, start=str(tmp_path))
        fixed = await asyncio.to_thread(lambda: pipeline.fix_source.function(SOURCE, str(path), settings).source)
        before = features.code_actions(uri, 1, SOURCE, linted.diagnostics, WHOLE, [types.CodeActionKind.SourceFixAll],
                                       lambda: fixed)
        assert actions == before
        edits = [{"range": {"start": {"line": e.range.start.line, "character": e.range.start.character},
                            "end": {"line": e.range.end.line, "character": e.range.end.character}},
                  "newText": e.new_text} for e in actions[0].edit.document_changes[0].edits]
        assert fixed != SOURCE and apply_text_edits(SOURCE, edits, "utf-16") == fixed

        # Only quick fixes asked for: no fix computed at all.
        calls = len(ls.fix.threads)
        quick = await handler(ls, types.TEXT_DOCUMENT_CODE_ACTION)(code_action_params(uri, ["quickfix"]))
        assert [a.kind for a in quick] == ["quickfix"] and len(ls.fix.threads) == calls

    asyncio.run(main())


def test_notebook_fix_all_is_computed_off_the_loop_with_the_same_edits(server, tmp_path):
    ls = server
    nb_path = tmp_path / "analysis.ipynb"
    nb_uri = nb_path.as_uri()
    cells = [f"vscode-notebook-cell:{nb_path}#W{i}sZmlsZQ%3D%3D" for i in range(2)]

    async def main() -> None:
        opened = types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=nb_uri, notebook_type="jupyter-notebook", version=1, cells=[
                types.NotebookCell(kind=types.NotebookCellKind.Code, document=c) for c in cells]),
            cell_text_documents=[types.TextDocumentItem(uri=c, language_id="python", version=1, text=t)
                                 for c, t in zip(cells, (CELL_DEFS, CELL_JIT))])
        ls.workspace.put_notebook_document(opened)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_OPEN)(opened)
        await until(lambda: diagnostics_of(ls, cells[0]))
        assert diagnostics_of(ls, cells[0]) == [(1, ["JF101"])]

        ls.fix.hold()
        request = asyncio.ensure_future(handler(ls, types.TEXT_DOCUMENT_CODE_ACTION)(
            code_action_params(cells[0], [types.CodeActionKind.SourceFixAll])))
        await until(lambda: ls.fix.threads)
        assert ls.fix.threads == [f"{WORKER}_0"] and not request.done()
        ls.fix.release()
        actions = await request

        settings = load_settings(None, start=str(tmp_path))
        snapshot = ls.notebook_cells(ls.notebook_of(cells[0]))
        source = notebooks.notebook_json(snapshot)

        fixed = await asyncio.to_thread(lambda: notebooks.fixed_cells(
            source, pipeline.fix_source.function(source, str(nb_path), settings).source))
        assert set(fixed) == {1}
        before = notebooks.code_actions(cells[0], snapshot, ls.current(cells[0]).diagnostics, WHOLE,
                                        [types.CodeActionKind.SourceFixAll], lambda: fixed)
        assert [a.kind for a in actions] == [features.FIX_ALL_KIND] and actions == before
        (change,) = actions[0].edit.document_changes
        assert change.text_document.uri == cells[0] and change.text_document.version == 1

    asyncio.run(main())


def test_a_notebook_check_that_fails_is_logged_and_its_cells_cleared(server, tmp_path, monkeypatch):
    ls = server
    nb_uri = (tmp_path / "broken.ipynb").as_uri()
    cell = f"vscode-notebook-cell:{tmp_path / 'broken.ipynb'}#W0sZmlsZQ%3D%3D"

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "check_source", boom)

    async def main() -> None:
        opened = types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=nb_uri, notebook_type="jupyter-notebook", version=1, cells=[
                types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell)]),
            cell_text_documents=[types.TextDocumentItem(uri=cell, language_id="python", version=1, text=CELL_DEFS)])
        ls.workspace.put_notebook_document(opened)
        handler(ls, types.NOTEBOOK_DOCUMENT_DID_OPEN)(opened)
        await until(lambda: diagnostics_of(ls, cell))
        assert diagnostics_of(ls, cell) == [(1, [])]
        assert ls.logged == [f"{nb_uri}: internal error: RuntimeError: boom"]

    asyncio.run(main())


def test_a_configuration_error_found_in_the_worker_is_shown_from_the_loop(server, tmp_path, monkeypatch):
    """Settings are read where the document is analysed (the worker thread); the error message
    they raise goes out through the message loop (pygls' transport is not thread-safe), once."""
    ls = server
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF1"]\nno-such-key = 1\n')
    shown = []
    monkeypatch.setattr(ls, "window_show_message", lambda p: shown.append((threading.current_thread().name, p.message)))
    path = tmp_path / "model.py"

    async def main() -> None:
        loop_thread = threading.current_thread().name
        opened = types.DidOpenTextDocumentParams(types.TextDocumentItem(path.as_uri(), "python", 1, SOURCE))
        ls.workspace.put_text_document(opened.text_document)
        handler(ls, types.TEXT_DOCUMENT_DID_OPEN)(opened)
        await until(lambda: shown and ls.published)
        assert ls.check.threads == [f"{WORKER}_0"]
        assert [thread for thread, _ in shown] == [loop_thread]
        assert "no-such-key" in shown[0][1] and "using the default settings" in shown[0][1]

    asyncio.run(main())


def test_settings_read_across_a_configuration_save_are_not_kept(server, tmp_path, monkeypatch):
    """The worker reads the settings while the loop handles a save of pyproject.toml: what it read
    serves this analysis but is not cached (the save's re-analysis reads the new file)."""
    from jaxfuse_lint.server import server as server_module

    ls = server
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF101"]\n')
    path = str(tmp_path / "model.py")
    real_load = server_module.load_settings

    def load_while_saved(*args, **kwargs):
        settings = real_load(*args, **kwargs)
        ls.settings_changed()  # the save, handled on the loop while this read was under way
        return settings

    monkeypatch.setattr(server_module, "load_settings", load_while_saved)
    assert ls.settings_for(path).select == ("JF101",)
    assert ls._settings == {}
    monkeypatch.setattr(server_module, "load_settings", real_load)
    assert ls.settings_for(path).select == ("JF101",)
    assert list(ls._settings.values())[0].select == ("JF101",)


def test_a_notebook_over_the_document_limit_is_not_analysed(server, tmp_path):
    """Issue 37, item 7: the editor's size cap applies to notebooks as to documents."""
    from jaxfuse_lint.server.server import MAX_DOCUMENT

    uri = (tmp_path / "nb.ipynb").as_uri()
    cells = [notebooks.CellText(uri + "#a", 1, "import jax\n" + "x = 1\n" * (MAX_DOCUMENT // 6 + 1), True),
             notebooks.CellText(uri + "#b", 1, "y = 2\n", True)]
    out = {}
    worker = threading.Thread(target=lambda: out.update(checked=server.analyse_notebook(uri, cells)))
    worker.start()
    worker.join(60)
    (d,) = out["checked"].diagnostics[cells[0].uri]
    # The cap is on the notebook's code (its cells), not on its JSON (issue 41, item 1).
    assert d.code == "JF000" and d.message.startswith("Notebook not checked: its code cells hold") \
        and f"({MAX_DOCUMENT:,} bytes)" in d.message
    assert out["checked"].diagnostics[cells[1].uri] == []


def test_check_source_stops_between_its_steps_when_asked():
    """What the scheduler's should_stop reaches: the engine asks it between the parse, each rule
    and each finding's fix, and stops with AnalysisStopped."""
    asked: list[int] = []

    def should_stop() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(pipeline.AnalysisStopped):
        pipeline.check_source(SOURCE, "m.py", load_settings(None), should_stop=should_stop)
    assert len(asked) == 4
    result = pipeline.check_source(SOURCE, "m.py", load_settings(None), should_stop=lambda: False)
    assert [d.code for d in result.diagnostics] == ["JF101"]
