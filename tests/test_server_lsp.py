"""The language server, driven as an editor drives it: a subprocess speaking LSP JSON-RPC over stdio.

initialize -> didOpen -> publishDiagnostics -> codeAction -> apply the edit
(client side, in the negotiated position encoding) -> didChange ->
publishDiagnostics, plus hover, save and fix-all. The flagged line has an
astral character ("𝜋", 2 UTF-16 units, 4 UTF-8 bytes) and a "²" (1 unit, 2
bytes) before the range, so a server that counts code points or bytes where
the client counts UTF-16 units lands on the wrong character.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

ROOT = Path(__file__).resolve().parent.parent

# A form the h100 table reports: a 2-wide stack summed with kept dims and added back.
SOURCE = '''import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    v = jnp.stack([x, 2 * x], axis=-1)
    return {"𝜋²": v + jnp.sum(v * v, axis=-1, keepdims=True)}
'''
FLAGGED_ROW = 7  # 0-based line of the jnp.sum call
FIXED_LINE = '    return {"𝜋²": v + (v * v)[..., 0:1] + (v * v)[..., 1:2]}\n'

BOOT = (
    "import sys; sys.path.insert(0, {root!r});"
    "from tests.test_review_support import install_jf101_fixer_globally;"
    "install_jf101_fixer_globally();"
    "from jaxfuse_lint.cli.server import server_command;"
    "server_command(['--stdio'], prog_name='jaxfuse-lint server')"
)


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


def offset(text: str, pos: dict, encoding: str) -> int:
    """What an editor does with an LSP position: the line, then `character` code units into it."""
    lines = text.splitlines(keepends=True)
    if pos["line"] >= len(lines):
        return len(text)
    start = sum(len(l) for l in lines[: pos["line"]])
    line = lines[pos["line"]].rstrip("\r\n")
    count = 0
    for i, c in enumerate(line):
        if count >= pos["character"]:
            return start + i
        count += units(c, encoding)
    return start + len(line)


def apply_text_edits(text: str, edits: list[dict], encoding: str) -> str:
    spans = sorted(((offset(text, e["range"]["start"], encoding), offset(text, e["range"]["end"], encoding),
                     e["newText"]) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


class Client:
    """A minimal LSP client: Content-Length framing, ids, a reader thread."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-c", BOOT.format(root=str(ROOT))],
            cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.messages: queue.Queue = queue.Queue()
        self.pending: list[dict] = []
        self.next_id = 0
        self.stderr = b""
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        self.stderr = self.proc.stderr.read()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                key, _, value = line.partition(":")
                headers[key.lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.messages.put(json.loads(body.decode("utf-8")))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict) -> None:
        self.send({"method": method, "params": params})

    def _next(self, match, timeout: float = 30.0) -> dict:
        for i, m in enumerate(self.pending):
            if match(m):
                return self.pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no matching message; got {self.pending}")
            try:
                m = self.messages.get(timeout=remaining)
            except queue.Empty:
                continue
            if "method" in m and "id" in m:  # a request from the server: answer it as editors do
                self.send({"id": m["id"], "result": None})
                continue
            if match(m):
                return m
            self.pending.append(m)

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        reply = self._next(lambda m: m.get("id") == rid and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def diagnostics(self, uri: str, version: int | None = None) -> list[dict]:
        m = self._next(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                       and m["params"]["uri"] == uri
                       and (version is None or m["params"].get("version") == version))
        return m["params"]["diagnostics"]

    def close(self) -> int:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def initialize(client: Client, root: Path, encodings: list[str]) -> dict:
    result = client.request("initialize", {
        "processId": os.getpid(),
        "rootUri": root.as_uri(),
        "capabilities": {
            "general": {"positionEncodings": encodings},
            "textDocument": {
                "publishDiagnostics": {"versionSupport": True},
                "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {
                    "valueSet": ["quickfix", "source", "source.fixAll"]}}},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "synchronization": {"didSave": True},
            },
        },
    })
    client.notify("initialized", {})
    return result


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nselect = [\"JF101\"]\n")
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    return tmp_path, path


def test_editor_session_over_stdio_utf16(project):
    root, path = project
    uri = path.as_uri()
    client = Client(root)
    try:
        init = initialize(client, root, ["utf-16"])
        caps = init["capabilities"]
        assert caps["positionEncoding"] == "utf-16"
        assert caps["hoverProvider"]
        assert "quickfix" in caps["codeActionProvider"]["codeActionKinds"]
        assert "source.fixAll.jaxfuse-lint" in caps["codeActionProvider"]["codeActionKinds"]
        assert caps["textDocumentSync"]["save"] is not None

        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": SOURCE}})
        diags = client.diagnostics(uri, version=1)
        assert [d["code"] for d in diags] == ["JF101"]
        d = diags[0]
        line = SOURCE.splitlines()[FLAGGED_ROW]
        start = line.index("jnp.sum")
        end = line.index(")}") + 1
        # 0-based line; characters in UTF-16 units: the astral "𝜋" counts 2.
        assert d["range"] == {"start": {"line": FLAGGED_ROW, "character": units(line[:start], "utf-16")},
                              "end": {"line": FLAGGED_ROW, "character": units(line[:end], "utf-16")}}
        assert d["range"]["start"]["character"] == start + 1  # one more unit than code points
        assert d["severity"] == 2 and d["source"] == "jaxfuse-lint"
        assert d["codeDescription"]["href"].endswith("/small-axis-reduction.md")

        # Hover inside the range shows the rule's documentation; just before it, nothing.
        inside = {"line": FLAGGED_ROW, "character": d["range"]["start"]["character"] + 2}
        hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": inside})
        assert hover["contents"]["kind"] == "markdown"
        assert "# small-axis-reduction (JF101)" in hover["contents"]["value"]
        assert "## Why is this bad?" in hover["contents"]["value"]
        before = {"line": FLAGGED_ROW, "character": d["range"]["start"]["character"] - 1}
        assert client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": before}) is None

        # The quick fix for the diagnostic, applied by the client.
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": d["range"],
            "context": {"diagnostics": diags, "only": ["quickfix"]}})
        assert len(actions) == 1
        action = actions[0]
        assert action["kind"] == "quickfix" and action["isPreferred"] is True
        assert action["diagnostics"][0]["code"] == "JF101"
        (change,) = action["edit"]["documentChanges"]
        assert change["textDocument"] == {"uri": uri, "version": 1}
        fixed = apply_text_edits(SOURCE, change["edits"], "utf-16")
        assert fixed.splitlines(keepends=True)[FLAGGED_ROW] == FIXED_LINE
        assert fixed.replace(FIXED_LINE, "") == SOURCE.replace(SOURCE.splitlines(keepends=True)[FLAGGED_ROW], "")

        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
        assert client.diagnostics(uri, version=2) == []

        # Saving re-publishes; back to the original text to check it again.
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": SOURCE}]})
        assert len(client.diagnostics(uri, version=3)) == 1
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [x["code"] for x in client.diagnostics(uri, version=3)] == ["JF101"]

        # Fix-all: a source action with the whole document's safe fixes.
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": 8, "character": 0}}
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": whole,
            "context": {"diagnostics": [], "only": ["source.fixAll"]}})
        assert [a["kind"] for a in actions] == ["source.fixAll.jaxfuse-lint"]
        all_fixed = apply_text_edits(SOURCE, actions[0]["edit"]["documentChanges"][0]["edits"], "utf-16")
        assert all_fixed == fixed

        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert client.diagnostics(uri) == []
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
    # The server never imported jax (-X importtime lists every module imported).
    imported = {line.rsplit("|", 1)[-1].strip() for line in client.stderr.decode("utf-8", "replace").splitlines()
                if line.startswith("import time:")}
    assert "jaxfuse_lint.server.server" in imported and "pygls" in imported
    assert not {m for m in imported if m == "jax" or m.startswith("jax.")}


def test_utf8_position_encoding_when_the_client_prefers_it(project):
    root, path = project
    uri = path.as_uri()
    client = Client(root)
    try:
        init = initialize(client, root, ["utf-8", "utf-16"])
        assert init["capabilities"]["positionEncoding"] == "utf-8"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": SOURCE}})
        (d,) = client.diagnostics(uri, version=1)
        line = SOURCE.splitlines()[FLAGGED_ROW]
        start = line.index("jnp.sum")
        assert d["range"]["start"] == {"line": FLAGGED_ROW, "character": len(line[:start].encode("utf-8"))}
        assert d["range"]["start"]["character"] == start + 4  # "𝜋" is 4 bytes, "²" 2
        actions = client.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}})
        quick = [a for a in actions if a["kind"] == "quickfix"]
        assert len(quick) == 1
        fixed = apply_text_edits(SOURCE, quick[0]["edit"]["documentChanges"][0]["edits"], "utf-8")
        assert fixed.splitlines(keepends=True)[FLAGGED_ROW] == FIXED_LINE
        # Without `only`, the fix-all source action is offered too.
        assert "source.fixAll.jaxfuse-lint" in [a["kind"] for a in actions]
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_command_modules_stay_light():
    """cli.py registers `review` and `server` at import: that must not pull in pygls, unidiff or jax."""
    code = ("import sys, jaxfuse_lint.cli.review, jaxfuse_lint.cli.server;"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pygls', 'lsprotocol', 'unidiff', 'jax'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
