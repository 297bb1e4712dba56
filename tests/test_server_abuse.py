"""The language server under abuse (issues 27 and 37): a huge document, a deeply nested one, a
frame claiming a terabyte, a message over the limit, a hover on a FIFO. The server must keep
answering, report them, and never crash."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.test_hardening import DEEP
from tests.test_server_lsp import ROOT, SOURCE, Client, initialize, project  # noqa: F401


def test_a_huge_or_deep_document_neither_stalls_nor_crashes_the_server(project):  # noqa: F811
    root, path = project
    client = Client(root)
    try:
        initialize(client, root, ["utf-16"])
        huge = root / "huge.py"
        text = "import jax\n" + "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(40000))
        assert len(text) > 1 << 20
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": huge.as_uri(), "languageId": "python", "version": 1, "text": text}})
        # Another document is answered at once meanwhile.
        started = time.monotonic()
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": SOURCE}})
        assert [d["code"] for d in client.diagnostics(path.as_uri(), version=1)] == ["JF101"]
        assert time.monotonic() - started < 20
        (d,) = client.diagnostics(huge.as_uri(), version=1)
        assert d["code"] == "JF000" and "File not checked" in d["message"]
        for i, name in enumerate(("parentheses", "not_on_lines", "elifs")):
            uri = (root / f"deep{i}.py").as_uri()
            client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": DEEP[name].decode()}})
            assert [x["code"] for x in client.diagnostics(uri, version=1)] == ["JF000"], name
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


# -- issue 37, item 7 -----------------------------------------------------------------------------------

def _boot_command() -> list[str]:
    from tests.test_server_lsp import BOOT, ROOT

    return [sys.executable, "-c", BOOT.format(root=str(ROOT))]


def test_a_frame_claiming_a_terabyte_does_not_end_the_server(tmp_path):
    """pygls read a body with one read(Content-Length): a MemoryError before a byte came. The
    input here ends after the header (the client went away): the server ends cleanly."""
    frame = b"Content-Length: 1000000000000\r\n\r\n" + b"{" * 1000
    proc = subprocess.run(_boot_command(), input=frame, capture_output=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert b"MemoryError" not in proc.stderr and b"Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0


def test_a_message_over_the_limit_is_discarded_and_the_next_one_answered(project):  # noqa: F811
    from jaxfuse_lint.server.transport import MAX_MESSAGE

    root, path = project
    client = Client(root)
    try:
        initialize(client, root, ["utf-16"])
        size = MAX_MESSAGE + 10
        client.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % size)
        chunk = b" " * (1 << 20)
        for start in range(0, size, len(chunk)):
            client.proc.stdin.write(chunk[: min(len(chunk), size - start)])
        client.proc.stdin.flush()
        logged = client._next(lambda m: m.get("method") == "window/logMessage")
        assert logged["params"]["message"] == (f"jaxfuse-lint: a message of {size:,} bytes was ignored: "
                                               f"messages are limited to {MAX_MESSAGE:,} bytes")
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": SOURCE}})
        assert [d["code"] for d in client.diagnostics(path.as_uri(), version=1)] == ["JF101"]
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_a_hover_on_a_fifo_the_editor_never_opened_is_answered(project):  # noqa: F811
    """pygls reads a document it was not given from its path: a FIFO blocked the message loop."""
    root, path = project
    fifo = root / "pipe.py"
    os.mkfifo(fifo)
    client = Client(root)
    try:
        initialize(client, root, ["utf-16"])
        for uri in (fifo.as_uri(), path.as_uri()):  # a regular file is still read (and checked)
            assert client.request("textDocument/hover", {
                "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}) is None
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
