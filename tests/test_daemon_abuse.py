"""The daemon under abuse (issue 27): a request that is not one, a client that sends nothing,
a working directory that is gone, and a forwarded run that must keep the client's nice value,
CPU affinity and resource limits, as the same command run directly would."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from jaxfuse_lint import daemon
from tests.test_daemon import env_for, jaxfuse_lint, project, running, socket_dir, status  # noqa: F401

pytestmark = pytest.mark.skipif(os.name != "posix" or not hasattr(os, "fork"), reason="the daemon needs fork")


def _socket(socket_dir) -> str:
    return str(sorted(socket_dir.glob(f"*{daemon.SUFFIX}"))[0])


def test_requests_that_are_not_requests_do_not_stop_it(running, socket_dir, project, tmp_path):
    path = _socket(socket_dir)
    deep = b"[" * 5000 + b"]" * 5000
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.sendall(b"%d\n" % len(deep) + deep)
        s.recv(10)
    assert running.poll() is None and status(socket_dir) is not None
    # A client that connects and sends nothing: the others are answered meanwhile, and
    # `daemon stop` does not take the live daemon's socket for a stale one.
    idle = socket.socket(socket.AF_UNIX)
    idle.connect(path)
    try:
        started = time.monotonic()
        assert status(socket_dir) is not None
        assert time.monotonic() - started < 8
    finally:
        idle.close()
    idle = socket.socket(socket.AF_UNIX)
    idle.connect(path)
    try:
        from jaxfuse_lint.cli.daemon import _refused

        assert not _refused(path)
    finally:
        idle.close()
    # A run whose working directory is gone: one line, not a traceback.
    sock = daemon.connect(path)
    with sock:
        r, w = os.pipe()
        request = daemon.encode({"kind": "run", "argv": ["check", "."], "cwd": str(tmp_path / "gone"),
                                 "env": dict(os.environ), "umask": 0o22, "encodings": []})
        socket.send_fds(sock, [request], [0, w, w])
        os.close(w)
        replies = sock.makefile("rb").read().decode()
        err = os.read(r, 10000).decode()
        os.close(r)
    assert "exit 2" in replies
    assert "Traceback" not in err and "cannot run in" in err and err.count("\n") == 1


def test_a_forwarded_run_keeps_the_clients_nice_value_affinity_and_limits(running, socket_dir, project):
    env = env_for(socket_dir)
    served = status(socket_dir)["served"]
    # ulimit -f 0: the local run cannot write a fix (SIGXFSZ), so neither may the forwarded one.
    model = project / "pkg" / "model.py"
    before = model.read_text()
    script = (f"ulimit -f 0; exec nice -n 7 '{sys.executable}' -m jaxfuse_lint check --no-cache --fix "
              f"--unsafe-fixes pkg")
    fixed = subprocess.run(["sh", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    assert status(socket_dir)["served"] == served + 1
    assert model.read_text() == before, fixed
    # The run sees the client's nice value and CPU set (the default -j follows the affinity).
    probe = project / "probe.py"
    probe.write_text("import jax\n")
    cpus = sorted(os.sched_getaffinity(0))
    conf = project / "pyproject.toml"
    conf.write_text("[tool.jaxfuse-lint]\n")
    code = ("import os, sys, json; from jaxfuse_lint.daemon import process_limits; "
            "print(json.dumps(process_limits()))")
    local = json.loads(subprocess.run(["nice", "-n", "5", "taskset", "-c", str(cpus[0]), sys.executable, "-c", code],
                                      capture_output=True, text=True, env=env, timeout=60).stdout)
    assert local["nice"] >= 5 and local["affinity"] == [cpus[0]]
    # What a forwarded child adopts from such a client:
    pid = os.fork()
    if pid == 0:
        try:
            daemon.adopt_limits(local)
            ok = (os.getpriority(os.PRIO_PROCESS, 0) == local["nice"]
                  and sorted(os.sched_getaffinity(0)) == local["affinity"])
        finally:
            os._exit(0 if ok else 1)
    assert os.waitpid(pid, 0)[1] == 0


def test_a_client_that_dribbles_its_request_is_dropped_at_the_bound(monkeypatch):
    """Issue 37, item 12: one byte every 1.5 s never hit the per-read timeout, and held the
    daemon (one request at a time) for as long as the client liked. The whole request now has
    READ_TIMEOUT: a client that has not sent it by then is dropped, long before it would finish."""
    import threading

    from jaxfuse_lint.daemon import server

    monkeypatch.setattr(server, "READ_TIMEOUT", 0.5)
    request = b'%d\n{"kind": "status"}' % len(b'{"kind": "status"}')
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    sent = []
    stop = threading.Event()

    def dribble() -> None:
        for byte in request:  # every byte well within the per-read timeout the daemon had
            if stop.wait(0.2):
                return
            try:
                theirs.send(bytes([byte]))
            except OSError:
                return
            sent.append(byte)

    writer = threading.Thread(target=dribble, daemon=True)
    writer.start()
    try:
        with pytest.raises((TimeoutError, ValueError)):
            server.Daemon._read(ours)
        assert len(sent) < len(request)  # dropped before the request was complete
    finally:
        stop.set()
        writer.join(10)
        ours.close()
        theirs.close()
