"""The resident `check` (jaxfuse_lint/daemon): a run forked from the daemon is the run the
user would have had locally (output, exit status, files written, stdin, Ctrl-C), and the
daemon is used only by the same user, interpreter and version of the tool."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxfuse_lint import daemon

pytestmark = pytest.mark.skipif(os.name != "posix" or not hasattr(os, "fork"), reason="the daemon needs fork")

ROOT = Path(__file__).resolve().parent.parent

# A form the h100 table reports (a 2-wide stack's sum, kept dims, broadcast back).
SOURCE = """\
import jax
import jax.numpy as jnp


@jax.jit
def scale_by_norm2(x):
    v = jnp.stack([x[:, 0], x[:, 1]], axis=-1)
    return v * jnp.sum(v * v, axis=-1, keepdims=True)
"""


def env_for(socket_dir: Path, mode: str = "") -> dict:
    env = {**os.environ, daemon.ENV_DIR: str(socket_dir), daemon.ENV_MODE: mode}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def jaxfuse_lint(args: list[str], cwd: Path, env: dict, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, **kwargs)


def status(socket_dir: Path) -> dict | None:
    env = env_for(socket_dir)
    paths = sorted(socket_dir.glob(f"*{daemon.SUFFIX}")) if socket_dir.is_dir() else []
    for path in paths:
        answer = subprocess.run(
            [sys.executable, "-c", "import json, sys; from jaxfuse_lint import daemon; "
                                   "print(json.dumps(daemon.ask(sys.argv[1], {'kind': 'status'})))", str(path)],
            env=env, capture_output=True, text=True, timeout=60)
        got = json.loads(answer.stdout or "null")
        if got:
            return got
    return None


@pytest.fixture
def socket_dir(tmp_path):
    # Short: a Unix socket's path is limited to ~100 bytes, and pytest's tmp_path can be long.
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="jfd-"))
    os.chmod(d, 0o700)
    yield d
    jaxfuse_lint(["daemon", "stop"], tmp_path, env_for(d))
    import shutil

    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def running(socket_dir, tmp_path):
    """A daemon in the foreground of a subprocess of this test, idle timeout 120 s."""
    proc = subprocess.Popen([sys.executable, "-m", "jaxfuse_lint", "daemon", "serve", "--idle-timeout", "120"],
                            env=env_for(socket_dir), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while status(socket_dir) is None:
        if proc.poll() is not None:
            pytest.fail(f"the daemon exited: {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the daemon did not start")
        time.sleep(0.1)
    yield proc
    if proc.poll() is None:
        proc.terminate()
        proc.wait(30)


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "model.py").write_text(SOURCE)
    (root / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n")
    return root


# -- what is forwarded -----------------------------------------------------------------------------

@pytest.mark.parametrize("argv, expected", [
    ([], True),
    (["."], True),
    (["check", "src"], True),
    (["--fix", "src"], True),
    (["check", "--stdin-filename", "a.py", "-"], True),
    (["check", "--fix", "--verify", "src"], False),  # imports the user's code: their interpreter
    (["verify", "mod:fn"], False),
    (["record", "--", "pytest"], False),
    (["review", "--base", "main"], False),
    (["server"], False),
    (["daemon", "start"], False),
    (["rule", "JF101"], False),
    (["--help"], False),
    (["--version"], False),
    (["check", "--no-daemon"], False),
    (["--preview", "verify", "m.py::f"], False),  # options before the command are the command's
    (["--preview", "check", "src"], True),
    (["check", "--watch", "src"], False),  # runs until Ctrl-C: here, not in a forked child of the daemon
])
def test_only_check_is_forwarded(argv, expected):
    assert daemon.forwardable(argv) is expected


def test_without_a_daemon_the_client_runs_locally(socket_dir, monkeypatch):
    monkeypatch.setenv(daemon.ENV_DIR, str(socket_dir / "absent"))
    monkeypatch.setenv(daemon.ENV_MODE, "")
    assert daemon.forward(["check", "."]) is None
    assert not (socket_dir / "absent").exists()  # nothing made, nothing imported beyond a stat
    monkeypatch.setenv(daemon.ENV_DIR, str(socket_dir))
    assert daemon.forward(["check", "."]) is None  # the folder, but no socket


def test_a_folder_others_can_enter_is_not_used(socket_dir, monkeypatch):
    os.chmod(socket_dir, 0o755)
    assert not daemon.private_dir(str(socket_dir), create=False)
    os.chmod(socket_dir, 0o700)
    assert daemon.private_dir(str(socket_dir), create=False)


def test_the_socket_is_named_after_the_tools_code_and_interpreter(monkeypatch, socket_dir):
    from jaxfuse_lint.core import fingerprint

    first = daemon.socket_path(str(socket_dir))
    assert fingerprint.source_fingerprint() in os.path.basename(first)
    monkeypatch.setattr(daemon, "interpreter_key", lambda: "otherenv")
    assert daemon.socket_path(str(socket_dir)) != first


# -- a forwarded run is the local run --------------------------------------------------------------

def test_a_forwarded_check_prints_and_exits_as_a_local_one(running, socket_dir, project):
    local = jaxfuse_lint(["check", "--no-cache", "."], project, env_for(socket_dir, "0"))
    assert local.returncode == 1 and "JF101" in local.stdout
    served = status(socket_dir)["served"]
    remote = jaxfuse_lint(["check", "--no-cache", "."], project, env_for(socket_dir))
    assert status(socket_dir)["served"] == served + 1
    assert (remote.returncode, remote.stdout, remote.stderr) == (local.returncode, local.stdout, local.stderr)
    # JSON output, a usage error, and a run with nothing found give the same statuses too.
    for args in (["check", "--no-cache", "--output-format", "json", "pkg"], ["check", "--bogus"],
                 ["check", "--no-cache", "--select", "JF203", "."]):
        local = jaxfuse_lint(args, project, env_for(socket_dir, "0"))
        remote = jaxfuse_lint(args, project, env_for(socket_dir))
        assert (remote.returncode, remote.stdout, remote.stderr) == (local.returncode, local.stdout, local.stderr)
    assert status(socket_dir)["served"] == served + 4


def test_the_run_takes_the_clients_directory_environment_and_umask(running, socket_dir, project):
    env = env_for(socket_dir)
    # The environment decides the output: NO_COLOR / FORCE_COLOR of the client, not of the daemon.
    colored = jaxfuse_lint(["check", "--no-cache", "pkg"], project, {**env, "FORCE_COLOR": "1"})
    assert "\x1b[" in colored.stdout
    plain = jaxfuse_lint(["check", "--no-cache", "pkg"], project, {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain.stdout and "pkg/model.py:8:16: JF101" in plain.stdout
    # --fix writes in the client's folder; what it creates (the cache) has the client's umask.
    for args in ("--fix --unsafe-fixes --no-cache pkg", "pkg"):
        fixed = subprocess.run(["sh", "-c", f"umask 077 && exec {sys.executable} -m jaxfuse_lint check {args}"],
                               cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert fixed.returncode == 0, fixed.stderr
    assert "jnp.sum" not in (project / "pkg" / "model.py").read_text()
    cache = project / ".jaxfuse_lint_cache"
    assert cache.is_dir() and (cache.stat().st_mode & 0o777) == 0o700


def test_stdin_is_the_clients(running, socket_dir, project):
    args = ["check", "--stdin-filename", "pkg/model.py", "--fix", "--unsafe-fixes", "-"]
    local = jaxfuse_lint(args, project, env_for(socket_dir, "0"), input=SOURCE)
    served = status(socket_dir)["served"]
    remote = jaxfuse_lint(args, project, env_for(socket_dir), input=SOURCE)
    assert status(socket_dir)["served"] == served + 1
    assert remote.stdout == local.stdout and remote.returncode == local.returncode
    assert "jnp.sum" not in remote.stdout and "v[..., 0]" in remote.stdout


def test_ctrl_c_reaches_the_run(running, socket_dir, project):
    """SIGINT to the client interrupts the forked run (here blocked reading stdin), which
    ends as a local run would, and the client returns its status."""
    served = status(socket_dir)["served"]
    client = subprocess.Popen([sys.executable, "-m", "jaxfuse_lint", "check", "--stdin-filename", "a.py", "-"],
                              cwd=project, env=env_for(socket_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while status(socket_dir)["served"] == served:
        assert time.monotonic() < deadline, "the run never reached the daemon"
        time.sleep(0.05)
    time.sleep(0.5)
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    assert client.returncode != 0
    assert b"Aborted" in err or b"interrupted" in err


def test_a_daemon_run_is_not_used_for_verify(running, socket_dir, project):
    served = status(socket_dir)["served"]
    jaxfuse_lint(["check", "--no-daemon", "--no-cache", "."], project, env_for(socket_dir))
    jaxfuse_lint(["rule", "JF101"], project, env_for(socket_dir))
    assert status(socket_dir)["served"] == served


# -- lifetime ------------------------------------------------------------------------------------

def test_start_status_stop(socket_dir, tmp_path):
    env = env_for(socket_dir)
    started = jaxfuse_lint(["daemon", "start", "--idle-timeout", "120"], tmp_path, env)
    assert started.returncode == 0 and "started" in started.stdout, started.stderr
    again = jaxfuse_lint(["daemon", "start"], tmp_path, env)
    assert "already running" in again.stdout
    shown = jaxfuse_lint(["daemon", "status"], tmp_path, env)
    assert shown.returncode == 0 and "serves this tool" in shown.stdout
    pid = status(socket_dir)["pid"]
    stopped = jaxfuse_lint(["daemon", "stop"], tmp_path, env)
    assert f"stopped pid {pid}" in stopped.stdout
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not list(socket_dir.glob(f"*{daemon.SUFFIX}"))
    shown = jaxfuse_lint(["daemon", "status"], tmp_path, env)
    assert shown.returncode == 1 and "no daemon serves this tool" in shown.stdout


def test_it_exits_when_idle_and_removes_its_socket(socket_dir):
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "daemon", "serve", "--idle-timeout", "1"],
                          env=env_for(socket_dir), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert not list(socket_dir.glob(f"*{daemon.SUFFIX}"))


def test_auto_starts_one_for_the_next_run(socket_dir, project):
    env = env_for(socket_dir, "auto")
    first = jaxfuse_lint(["check", "--no-cache", "."], project, env)
    assert first.returncode == 1 and "JF101" in first.stdout  # this one ran locally
    deadline = time.monotonic() + 90
    while status(socket_dir) is None:
        assert time.monotonic() < deadline, "no daemon was started"
        time.sleep(0.1)
    served = status(socket_dir)["served"]
    second = jaxfuse_lint(["check", "--no-cache", "."], project, env)
    assert second.stdout == first.stdout and status(socket_dir)["served"] == served + 1


def test_a_killed_daemons_socket_is_refused_and_the_run_is_local(running, socket_dir, project):
    running.kill()
    running.wait(30)
    assert list(socket_dir.glob(f"*{daemon.SUFFIX}"))  # left behind by SIGKILL
    local = jaxfuse_lint(["check", "--no-cache", "."], project, env_for(socket_dir))
    assert local.returncode == 1 and "JF101" in local.stdout


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_parallel_auto_clients_start_one_daemon(socket_dir, project):
    """pre-commit runs a hook's batches in parallel: they must not start a daemon each."""
    env = env_for(socket_dir, "auto")
    clients = [subprocess.Popen([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "-q", "."], cwd=project,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(4)]
    for c in clients:
        assert c.wait(120) == 1
    deadline = time.monotonic() + 90
    while status(socket_dir) is None:
        assert time.monotonic() < deadline, "no daemon was started"
        time.sleep(0.1)
    time.sleep(1.0)
    servers = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"\0daemon\0serve\0" in (entry / "cmdline").read_bytes():
                servers.append(int(entry.name))
        except OSError:
            continue
    mine = [pid for pid in servers if _daemon_dir_of(pid) == str(socket_dir)]
    assert len(mine) == 1
    assert not list(socket_dir.glob(f"*{daemon.STARTING_SUFFIX}"))


def _daemon_dir_of(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(daemon.ENV_DIR.encode() + b"="):
            return item.split(b"=", 1)[1].decode()
    return None


def test_without_a_daemon_the_client_imports_nothing(socket_dir):
    """The launcher runs before every command: with no daemon folder it must cost a stat."""
    probe = ("import sys; from jaxfuse_lint.daemon import forward; assert forward(['check', '.']) is None; "
             "print(sorted(m for m in ('socket', 'json', 'hashlib', 'subprocess', 'click') if m in sys.modules))")
    env = env_for(socket_dir / "absent")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_a_daemon_that_cannot_start_the_run_leaves_it_to_the_client(socket_dir, monkeypatch):
    """No `pid` line (the fork failed, say): nothing ran, so the client runs the check itself."""
    import socket
    import threading

    monkeypatch.setenv(daemon.ENV_DIR, str(socket_dir))
    monkeypatch.setenv(daemon.ENV_MODE, "")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(daemon.socket_path(str(socket_dir)))
    listener.listen(1)

    def refuse():
        conn, _ = listener.accept()
        _data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
        for fd in fds:
            os.close(fd)
        conn.close()

    thread = threading.Thread(target=refuse)
    thread.start()
    try:
        assert daemon.forward(["check", "."]) is None
    finally:
        thread.join(10)
        listener.close()


def test_a_ctrl_c_before_the_run_has_started_reaches_it(socket_dir, monkeypatch):
    """Ctrl-C between sending the request and the `pid` line is kept and delivered once the
    run is known (it used to be dropped, and the run went on)."""
    import socket
    import threading

    monkeypatch.setenv(daemon.ENV_DIR, str(socket_dir))
    monkeypatch.setenv(daemon.ENV_MODE, "")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(daemon.socket_path(str(socket_dir)))
    listener.listen(1)
    original = signal.getsignal(signal.SIGINT)
    ran: dict[str, int] = {}

    def serve():
        conn, _ = listener.accept()
        _data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
        for fd in fds:
            os.close(fd)
        deadline = time.monotonic() + 30
        while signal.getsignal(signal.SIGINT) is original and time.monotonic() < deadline:
            time.sleep(0.01)  # until the client passes signals on
        os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C, before any `pid` line
        time.sleep(0.2)
        run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        conn.sendall(b"pid %d\n" % run.pid)
        ran["code"] = run.wait(timeout=30)
        conn.sendall(b"exit 130\n")
        conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        assert daemon.forward(["check", "-"]) == 130
    finally:
        thread.join(40)
        listener.close()
    assert ran["code"] != 0  # the run was interrupted, not left to sleep out its minute
