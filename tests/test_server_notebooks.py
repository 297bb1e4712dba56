"""The language server with LSP notebook document sync, over stdio as an editor drives it:
notebookDocument/didOpen -> diagnostics on each cell's document (cross-cell analysis) ->
a quick fix on a cell -> didChange with the fixed cell -> the diagnostics clear -> didClose."""
from __future__ import annotations

import pytest

from tests import test_server_lsp as lsp

CELL_DEFS = (
    "import jax\n"
    "import jax.numpy as jnp\n"
    "\n"
    "def f(x):\n"
    "    v = jnp.stack([x, 2 * x], axis=-1)\n"
    "    return v * jnp.sum(v * v, axis=-1)[..., None]\n"  # broadcast back: JF101 by default (test_server_off_loop
    # imports this text and replaces `jnp.sum(v * v, axis=-1)` in it)
)
CELL_JIT = "%time y = 1\nf_jit = jax.jit(f)  # traces f, defined in the cell before\n!echo done\n"

# The real codemods, not the test fixer test_server_lsp installs.
BOOT = (
    "import sys; sys.path.insert(0, {root!r});"
    "from jaxfuse_lint.cli.server import server_command;"
    "server_command(['--stdio'], prog_name='jaxfuse-lint server')"
)


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setattr(lsp, "BOOT", BOOT)
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF101"]\n')
    c = lsp.Client(tmp_path)
    yield c
    if c.proc.poll() is None:
        c.proc.kill()
        c.proc.wait()


def initialize(client, root) -> dict:
    result = client.request("initialize", {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "textDocument": {"publishDiagnostics": {"versionSupport": True},
                             "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {
                                 "valueSet": ["quickfix", "source", "source.fixAll"]}}},
                             "hover": {"contentFormat": ["markdown"]}},
            # A client that syncs notebooks says so (VS Code, JupyterLab's LSP extension).
            "notebookDocument": {"synchronization": {"executionSummarySupport": False}},
        },
    })
    client.notify("initialized", {})
    return result


def test_notebook_session_over_stdio(client, tmp_path):
    init = initialize(client, tmp_path)
    selector = init["capabilities"]["notebookDocumentSync"]["notebookSelector"]
    assert selector == [{"notebook": "jupyter-notebook", "cells": [{"language": "python"}]}]

    nb_uri = (tmp_path / "analysis.ipynb").as_uri()
    cells = [f"vscode-notebook-cell:{tmp_path / 'analysis.ipynb'}#W{i}sZmlsZQ%3D%3D" for i in range(3)]
    texts = ["# Notes\nNot Python: `jnp.sum(v, axis=-1)`\n", CELL_DEFS, CELL_JIT]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb_uri, "notebookType": "jupyter-notebook", "version": 1, "cells": [
            {"kind": 1, "document": cells[0]}, {"kind": 2, "document": cells[1]}, {"kind": 2, "document": cells[2]}]},
        "cellTextDocuments": [
            {"uri": cells[0], "languageId": "markdown", "version": 1, "text": texts[0]},
            {"uri": cells[1], "languageId": "python", "version": 1, "text": texts[1]},
            {"uri": cells[2], "languageId": "python", "version": 1, "text": texts[2]},
        ],
    })
    defs = client.diagnostics(cells[1])
    assert [(d["code"], d["range"]["start"]) for d in defs] == [("JF101", {"line": 5, "character": 15})]
    assert client.diagnostics(cells[2]) == []  # the magic and the shell escape are not errors

    # A quick fix on the cell edits that cell's document.
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cells[1]}, "range": defs[0]["range"],
        "context": {"diagnostics": defs, "only": ["quickfix"]}})
    assert len(actions) == 1 and actions[0]["title"].startswith("JF101")
    (change,) = actions[0]["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": cells[1], "version": 1}
    fixed = lsp.apply_text_edits(texts[1], change["edits"], "utf-16")
    assert "jnp.sum" not in fixed and fixed.startswith("import jax\n")

    # Hover on the cell shows the rule's documentation.
    hover = client.request("textDocument/hover", {"textDocument": {"uri": cells[1]},
                                                  "position": defs[0]["range"]["start"]})
    assert "What it does" in hover["contents"]["value"]

    # The editor applies it and syncs the cell: its diagnostics clear.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb_uri, "version": 2},
        "change": {"cells": {"textContent": [
            {"document": {"uri": cells[1], "version": 2}, "changes": [{"text": fixed}]}]}},
    })
    assert client.diagnostics(cells[1], version=2) == []

    # Without the cell that jits it, `f` is not traced: a structure change removing cell 3.
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb_uri, "version": 3},
        "change": {"cells": {
            "structure": {"array": {"start": 2, "deleteCount": 1}, "didClose": [{"uri": cells[2]}]},
            "textContent": [{"document": {"uri": cells[1], "version": 3}, "changes": [{"text": texts[1]}]}]}},
    })
    assert client.diagnostics(cells[1], version=3) == []
    assert client.diagnostics(cells[2]) == []  # the removed cell's diagnostics are cleared

    client.notify("notebookDocument/didClose", {"notebookDocument": {"uri": nb_uri},
                                                "cellTextDocuments": [{"uri": cells[0]}, {"uri": cells[1]}]})
    assert client.diagnostics(cells[1]) == []
    assert client.close() == 0
