"""Smoke test of a plain `pip install .` (no extras): the README's first command
(`jaxfuse-lint check fixtures/`, notebooks included), `review`, `server` and a check
forwarded to `jaxfuse-lint daemon` through the installed executable must run.

Run with the fresh environment's Python; `jaxfuse-lint` must be on PATH. Exits non-zero,
saying why, when a command fails (a dependency missing from the core set, typically).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

MODULE = """import jax
import jax.numpy as jnp


@jax.jit
def f(x, y, z):
    v = jnp.stack([x, y, z], axis=-1)
    return v * jnp.sum(v * v, axis=-1, keepdims=True)
"""


def fail(message: str) -> None:
    print(f"plain-install smoke: {message}", file=sys.stderr)
    sys.exit(1)


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", *args], cwd=cwd,
                   check=True, capture_output=True)


def review(tmp: Path) -> None:
    repo = tmp / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    (repo / "README").write_text("tiny\n")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "base", cwd=repo)
    (repo / "model.py").write_text(MODULE)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "head", cwd=repo)
    proc = subprocess.run(["jaxfuse-lint", "review", "--base", "HEAD~1"], cwd=repo, capture_output=True, text=True)
    if proc.returncode != 1:
        fail(f"`jaxfuse-lint review` exited {proc.returncode}: {proc.stderr.strip()}")
    comments = json.loads(proc.stdout)["comments"]
    if not any("JF101" in c["body"] for c in comments):
        fail(f"`jaxfuse-lint review` found no JF101 on the changed line: {proc.stdout}")


def _frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(stream) -> dict:
    length = None
    while True:
        line = stream.readline()
        if not line:
            fail("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def server(tmp: Path) -> None:
    proc = subprocess.Popen(["jaxfuse-lint", "server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"processId": None, "rootUri": tmp.as_uri(),
                                        "capabilities": {"notebookDocument": {"synchronization": {}}}}}))
    proc.stdin.flush()
    while True:
        reply = _read(proc.stdout)
        if reply.get("id") == 1:
            break
    capabilities = reply.get("result", {}).get("capabilities", {})
    if "textDocumentSync" not in capabilities or "notebookDocumentSync" not in capabilities:
        fail(f"the server's initialize reply lacks document sync: {reply}")
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}))
    proc.stdin.flush()
    while _read(proc.stdout).get("id") != 2:
        pass
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
    proc.stdin.close()
    try:
        code = proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the server did not exit after `exit`")
    if code != 0:
        fail(f"the server exited {code}: {proc.stderr.read().decode()[-2000:]}")


def readme_check() -> None:
    """The README's set-up command on the bundled sample: findings (exit 1), no internal error."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(["jaxfuse-lint", "check", "--no-cache", "fixtures/"], cwd=root, capture_output=True, text=True)
    if proc.returncode != 1 or "internal error" in proc.stderr or ".ipynb:cell" not in proc.stdout:
        fail(f"`jaxfuse-lint check fixtures/` exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")


def daemon(tmp: Path) -> None:
    """The installed `jaxfuse-lint` hands a check to a running daemon: same output."""
    import os

    sockets = tmp / "daemon"
    sockets.mkdir(mode=0o700)
    env = {**os.environ, "JAXFUSE_LINT_DAEMON_DIR": str(sockets)}
    env.pop("JAXFUSE_LINT_DAEMON", None)
    (tmp / "model.py").write_text(MODULE)
    local = subprocess.run(["jaxfuse-lint", "check", "--no-cache", "--no-daemon", "model.py"], cwd=tmp, env=env,
                           capture_output=True, text=True)
    started = subprocess.run(["jaxfuse-lint", "daemon", "start", "--idle-timeout", "60"], cwd=tmp, env=env,
                             capture_output=True, text=True)
    if started.returncode != 0:
        fail(f"`jaxfuse-lint daemon start` exited {started.returncode}: {started.stderr.strip()}")
    try:
        remote = subprocess.run(["jaxfuse-lint", "check", "--no-cache", "model.py"], cwd=tmp, env=env,
                                capture_output=True, text=True)
        served = subprocess.run(["jaxfuse-lint", "daemon", "status"], cwd=tmp, env=env, capture_output=True, text=True)
    finally:
        subprocess.run(["jaxfuse-lint", "daemon", "stop"], cwd=tmp, env=env, capture_output=True)
    if (remote.returncode, remote.stdout) != (local.returncode, local.stdout) or "JF101" not in remote.stdout:
        fail(f"a check through the daemon differs from a local one: {remote.stdout!r} {remote.stderr!r}")
    if "1 runs" not in served.stdout:
        fail(f"the daemon did not serve the check: {served.stdout.strip()}")


def main() -> None:
    readme_check()
    with tempfile.TemporaryDirectory() as tmp:
        review(Path(tmp))
        server(Path(tmp))
    with tempfile.TemporaryDirectory(prefix="jf-") as tmp:
        daemon(Path(tmp))
    print("plain-install smoke: check (the README's sample), review, server and daemon run on a plain install")


if __name__ == "__main__":
    main()
