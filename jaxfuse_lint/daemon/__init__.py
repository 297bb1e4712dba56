"""A resident `check`: `jaxfuse-lint daemon start` keeps one process with the parser, the
model, the rules and the codemods imported, and every later `jaxfuse-lint check` forks a
run from it instead of importing them again.

Why: on a warm cache most of a run is imports. Importing libcst alone costs 0.18 s on this
project's 2-core machine (it builds its node classes at import), so a re-run with one file
changed could not get under ~0.35 s however little it analysed. A forked run starts with
everything imported (measured in benchmarks/bench_lint.py).

This module is the client, run by every `jaxfuse-lint` invocation before anything else is
imported (`launch.py`), so it uses the standard library alone, and nothing at all when no
daemon is running: one `stat` of the socket. The run is the same as a local one: the client
passes its standard input, output and error themselves (file descriptors over a Unix
socket), its arguments, working directory, environment and umask; the daemon's child adopts
them, runs the command line, and sends back the exit status. Ctrl-C is passed on.

Only `check` (and its `--fix`, `--diff`, stdin modes) is forwarded. Not `--verify`, nor
`verify`, `record`, `review --verify`: those import the user's code, and must do so in the
user's own interpreter with its own `sys.path`.

The daemon is per user (its socket lives in a folder only the user can open, and it refuses
peers of other users), per interpreter (`sys.prefix`), and per version of the tool: the
socket's name holds `fingerprint.source_fingerprint()`, so an upgraded or edited tool never
talks to a daemon holding the old code; that one exits when idle.

JAXFUSE_LINT_DAEMON: `0`/`off` never forward; `auto` start a daemon in the background when
none runs (this run is local; later ones are forwarded); unset: forward when one runs.
JAXFUSE_LINT_DAEMON_DIR: where sockets live (default `$XDG_RUNTIME_DIR/jaxfuse-lint-UID`,
else `$TMPDIR` or `/tmp`).
"""
from __future__ import annotations

import os
import sys

ENV_MODE = "JAXFUSE_LINT_DAEMON"
ENV_DIR = "JAXFUSE_LINT_DAEMON_DIR"
OFF = ("0", "off", "no", "false")
AUTO = ("1", "auto", "on", "yes", "true")
# Commands that never run in the daemon (besides `daemon` itself): they import user code, or
# are long-lived, or are cheap enough that forwarding buys nothing.
LOCAL_COMMANDS = frozenset({"verify", "review", "server", "record", "explain", "rule", "daemon"})
LOCAL_FLAGS = frozenset({"--verify", "--no-daemon", "--help", "-h", "--version", "--watch", "-w"})
SUFFIX = ".sock"
# sockaddr_un.sun_path: 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH = 100


def enabled() -> bool:
    import socket

    return os.name == "posix" and hasattr(socket, "send_fds") and hasattr(os, "fork")


def forwardable(argv: list[str]) -> bool:
    """Whether this command line is a `check` the daemon may run."""
    if any(a in LOCAL_FLAGS for a in argv):
        return False
    # Options may come before the command (`--preview verify ...`): a command word anywhere is run
    # here (a path named like a command too: here is always right, only slower).
    words = argv[:argv.index("--")] if "--" in argv else argv
    return not any(a in LOCAL_COMMANDS for a in words)


def socket_dir() -> str:
    """JAXFUSE_LINT_DAEMON_DIR, else the user's private folder (core/private_folder.py)."""
    from jaxfuse_lint.core.private_folder import user_folder

    return os.environ.get(ENV_DIR) or user_folder()


def private_dir(path: str, create: bool) -> bool:
    """The socket folder exists (or was made), is ours, and no one else may enter it."""
    from jaxfuse_lint.core.private_folder import is_private

    return is_private(path, create)


def interpreter_key() -> str:
    import hashlib

    return hashlib.sha256(f"{sys.prefix}\0{sys.executable}\0{sys.version}".encode()).hexdigest()[:8]


def socket_path(directory: str | None = None) -> str:
    from jaxfuse_lint.core.fingerprint import source_fingerprint

    return os.path.join(directory or socket_dir(), f"{source_fingerprint()}-{interpreter_key()}{SUFFIX}")


# -- the wire --------------------------------------------------------------------------------------
# A request is a decimal length, a newline and that many bytes of JSON; a `run` request carries
# the client's fds 0, 1 and 2 with its first bytes. Replies are lines: `pid N` once the run has
# started, `exit N` when it is over; `status` and `stop` get one JSON line.

def encode(request: dict) -> bytes:
    import json

    payload = json.dumps(request).encode()
    return b"%d\n" % len(payload) + payload


def connect(path: str, timeout: float | None = None):
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return sock


def ask(path: str, request: dict, timeout: float = 5.0) -> dict | None:
    """A `status` or `stop` request: the daemon's JSON answer, or None if none answers."""
    import json

    try:
        sock = connect(path, timeout)
    except OSError:
        return None
    try:
        sock.sendall(encode(request))
        line = sock.makefile("rb").readline()
        return json.loads(line) if line else None
    except (OSError, ValueError):
        return None
    finally:
        sock.close()


def forward(argv: list[str]) -> int | None:
    """Run this command line in a daemon: its exit status, or None to run it here."""
    mode = os.environ.get(ENV_MODE, "").strip().lower()
    if mode in OFF or not forwardable(argv):
        return None
    directory = socket_dir()
    if mode not in AUTO and not os.path.isdir(directory):
        return None  # the common case without a daemon: one stat
    if not enabled() or not private_dir(directory, create=mode in AUTO):
        return None
    path = socket_path(directory)
    if len(path) > MAX_SOCKET_PATH:
        return None
    try:
        sock = connect(path)
    except OSError:
        if mode in AUTO and _claim_start(path):
            start_in_background()
        return None
    with sock:
        return _run_remotely(sock, argv)


def _run_remotely(sock, argv: list[str]) -> int | None:
    import signal
    import socket

    umask = os.umask(0)
    os.umask(umask)
    streams = (sys.stdin, sys.stdout, sys.stderr)
    request = encode({
        "kind": "run",
        "argv": argv,
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": umask,
        # What the kernel holds for this process and would hold for a local run: the forked
        # run adopts them (a `nice`d or `taskset` client, `ulimit -f 0`, a CPU-time limit).
        "limits": process_limits(),
        "encodings": [[getattr(s, "encoding", None), getattr(s, "errors", None)] for s in streams],
    })
    try:
        sent = socket.send_fds(sock, [request], [0, 1, 2])
        if sent < len(request):
            sock.sendall(request[sent:])
    except OSError:
        return None  # a closed standard stream, say: nothing has started, so run here
    replies = sock.makefile("rb")
    child = None
    # Signals that came before the run said its pid (a Ctrl-C right after Enter): delivered
    # as soon as it does, so none is lost.
    pending: list[int] = []

    def deliver(signum: int) -> None:
        try:
            os.kill(child, signum)
        except OSError:
            pass

    def pass_on(signum, frame):
        if child is None:
            pending.append(signum)
        else:
            deliver(signum)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        for line in replies:
            word, _, value = line.decode().strip().partition(" ")
            if word == "pid":
                child = int(value)  # the run handles signals before it sends this line
                for signum in pending:
                    deliver(signum)
            elif word == "exit":
                return int(value)
    except (OSError, ValueError):
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if child is None:
        if pending:  # interrupted before anything ran: not a reason to run it here instead
            return 128 + pending[0]
        return None  # the daemon could not start the run (out of processes, say): nothing ran yet
    print(f"jaxfuse-lint: error: the daemon's run (pid {child}) ended without an exit status; "
          f"run with {ENV_MODE}=0 to check locally", file=sys.stderr)
    return 2


_RLIMITS = ("RLIMIT_AS", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_MEMLOCK",
            "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_RSS", "RLIMIT_STACK")


def process_limits() -> dict:
    """This process's nice value, CPU affinity and resource limits (what `run_in_child` adopts)."""
    out: dict = {"rlimits": {}}
    try:
        out["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        pass
    try:
        out["affinity"] = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        pass
    try:
        import resource
    except ImportError:
        return out
    for name in _RLIMITS:
        which = getattr(resource, name, None)
        if which is not None:
            try:
                out["rlimits"][name] = list(resource.getrlimit(which))
            except (OSError, ValueError):
                pass
    return out


def adopt_limits(limits: dict) -> None:
    """Make this (forked) process's nice value, affinity and resource limits those of the client
    that sent `limits` (process_limits). What the kernel refuses (raising a limit above the
    daemon's hard one, a lower nice value without the privilege) is left as it is."""
    if not isinstance(limits, dict):
        return
    nice = limits.get("nice")
    if isinstance(nice, int):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        except (AttributeError, OSError):
            pass
    affinity = limits.get("affinity")
    if isinstance(affinity, list) and affinity:
        try:
            os.sched_setaffinity(0, affinity)
        except (AttributeError, OSError, ValueError, TypeError):
            pass
    rlimits = limits.get("rlimits")
    if not isinstance(rlimits, dict):
        return
    try:
        import resource
    except ImportError:
        return
    for name, value in rlimits.items():
        which = getattr(resource, name, None) if name in _RLIMITS else None
        if which is None or not (isinstance(value, list) and len(value) == 2):
            continue
        try:
            resource.setrlimit(which, tuple(value))
        except (OSError, ValueError, TypeError):
            try:  # the soft limit alone, under the hard one we have
                resource.setrlimit(which, (value[0], resource.getrlimit(which)[1]))
            except (OSError, ValueError, TypeError):
                pass


STARTING_SUFFIX = ".starting"
STARTING_FOR_S = 60


def _claim_start(path: str) -> bool:
    """Whether this client is the one to start the daemon: pre-commit runs hooks in parallel
    batches, and each would otherwise start its own. The claim is a file the daemon removes
    once it listens (or that goes stale after a minute, if it never does)."""
    import time

    marker = path + STARTING_SUFFIX
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        try:
            if time.time() - os.stat(marker).st_mtime < STARTING_FOR_S:
                return False
            os.unlink(marker)
        except OSError:
            return False
        return _claim_start(path)
    except OSError:
        return False


def start_in_background(idle_timeout: float | None = None) -> int:
    """Start a detached daemon for this interpreter and tool; its pid."""
    import subprocess

    cmd = [sys.executable, "-m", "jaxfuse_lint", "daemon", "serve"]
    if idle_timeout is not None:
        cmd += ["--idle-timeout", str(idle_timeout)]
    env = dict(os.environ)
    env.pop(ENV_MODE, None)
    # The daemon must import the very code this run would: the folder this package was
    # imported from goes first on its path (a checkout run with `python -m`, say).
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True, cwd="/", env=env)
    return proc.pid
