"""The daemon: import the tool once, then fork one child per `check` a client asks for.

The child adopts the client's standard streams (received as file descriptors), arguments,
working directory, environment and umask, runs the command line as `jaxfuse-lint` would, and
sends back its exit status. The daemon itself never runs a check, so every child starts from
the same state: everything imported, nothing computed (no cache of one run leaks into the
next). It holds no threads, so forking it is safe, and the child's own worker processes are
forked with everything imported too.

It exits after `--idle-timeout` seconds without a request, on `jaxfuse-lint daemon stop`,
or on SIGTERM; its socket is removed then (if it is still its own).

What the children run and what the daemon imports first are the caller's: the command line
(cli/daemon.py) hands `run_daemon` its own entry and the modules a `check` needs, so this module
knows neither. The process is started as

    jaxfuse-lint daemon serve [--idle-timeout SECONDS] [--socket PATH]
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import time
from typing import Callable

from jaxfuse_lint import daemon

DEFAULT_IDLE_TIMEOUT = 1800.0
MAX_REQUEST = 16 << 20
READ_TIMEOUT = 2.0  # seconds for a client's whole request (it sends it at once)


class Daemon:
    def __init__(self, path: str, idle_timeout: float, run: Callable[[], None]) -> None:
        self.path = path
        self.idle_timeout = idle_timeout
        self.run = run  # the command line's entry: reads sys.argv, exits with its status
        self.started = time.time()
        self.served = 0
        self.listener: socket.socket | None = None
        self.inode: int | None = None

    # -- lifetime ----------------------------------------------------------------------------------

    def bind(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        staging = f"{self.path}.{os.getpid()}.new"
        try:
            os.unlink(staging)
        except FileNotFoundError:
            pass
        listener.bind(staging)
        os.chmod(staging, 0o600)
        listener.listen(64)
        os.replace(staging, self.path)  # a client never sees a socket that does not listen yet
        self.inode = os.stat(self.path).st_ino
        self.listener = listener

    def close(self) -> None:
        # Remove the socket only if it is still ours: a newer daemon may have replaced it.
        try:
            if self.inode is not None and os.stat(self.path).st_ino == self.inode:
                os.unlink(self.path)
        except OSError:
            pass
        if self.listener is not None:
            self.listener.close()

    def serve(self) -> None:
        assert self.listener is not None
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
        self.listener.settimeout(self.idle_timeout)
        while True:
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                return
            except InterruptedError:
                continue
            with conn:
                if not self._same_user(conn):
                    continue
                try:
                    request, fds = self._read(conn)
                except (OSError, ValueError, RecursionError):  # JSON nested 1,000 deep: RecursionError
                    continue
                try:
                    kind = request.get("kind")
                    if kind == "run":
                        self._fork(conn, request, fds)
                        self.served += 1
                    elif kind == "status":
                        self._reply(conn, self.status())
                    elif kind == "stop":
                        self._reply(conn, {"stopping": True, "pid": os.getpid()})
                        return
                except OSError:
                    # fork failed (no memory, process limit): the client sees no `pid` line and
                    # runs the check itself; the daemon stays up for the next one.
                    pass
                finally:
                    for fd in fds:
                        os.close(fd)

    def status(self) -> dict:
        return {"pid": os.getpid(), "started": self.started, "served": self.served,
                "idle_timeout": self.idle_timeout, "python": sys.executable,
                "socket": self.path}

    @staticmethod
    def _same_user(conn: socket.socket) -> bool:
        peercred = getattr(socket, "SO_PEERCRED", None)
        if peercred is None:  # macOS: the socket's folder (0700) is what keeps others out
            return True
        _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize("3i")))
        return uid == os.getuid()

    @staticmethod
    def _read(conn: socket.socket) -> tuple[dict, list[int]]:
        # A client sends its request as soon as it connects; one that sends nothing, or sends it
        # a byte at a time, must not keep the daemon from others (`daemon status` would find none
        # answering) for long: the whole request has READ_TIMEOUT, not each read.
        deadline = time.monotonic() + READ_TIMEOUT

        def recv(size: int) -> bytes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request took too long")
            conn.settimeout(left)
            return conn.recv(size)

        conn.settimeout(READ_TIMEOUT)
        data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
        try:
            head, sep, rest = data.partition(b"\n")
            while not sep:
                more = recv(1 << 16)
                if not more:
                    raise ValueError("truncated request")
                head, sep, rest = (head + more).partition(b"\n")
            size = int(head)
            if size > MAX_REQUEST:
                raise ValueError("request too large")
            chunks, have = [rest], len(rest)
            while have < size:
                more = recv(min(1 << 20, size - have))
                if not more:
                    raise ValueError("truncated request")
                chunks.append(more)
                have += len(more)
            request = json.loads(b"".join(chunks))
            if not isinstance(request, dict):
                raise ValueError("a request is a JSON object")
            return request, list(fds)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise

    @staticmethod
    def _reply(conn: socket.socket, answer: dict) -> None:
        try:
            conn.sendall(json.dumps(answer).encode() + b"\n")
        except OSError:
            pass

    # -- one run -----------------------------------------------------------------------------------

    def _fork(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        if len(fds) != 3:
            return
        pid = os.fork()
        if pid:
            return
        code = 1
        try:
            assert self.listener is not None
            self.listener.close()
            code = run_in_child(conn, request, fds, self.run)
        finally:
            os._exit(code)


def run_in_child(conn: socket.socket, request: dict, fds: list[int], run: Callable[[], None]) -> int:
    """Become the client's `jaxfuse-lint` run (`run()` with its argv); report its exit status to the client."""
    import atexit
    import io
    import traceback

    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    fds.clear()
    conn.settimeout(None)
    try:
        conn.sendall(b"pid %d\n" % os.getpid())
    except OSError:
        return 1
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request["umask"]))
    daemon.adopt_limits(request.get("limits"))
    encodings = request.get("encodings") or [[None, None]] * 3
    streams = []
    for fd, (mode, (encoding, errors)) in enumerate(zip("rww", encodings)):
        raw = io.open(fd, mode + "b", buffering=0 if fd else -1, closefd=False)
        buffered = raw if fd == 0 else io.BufferedWriter(raw)
        streams.append(io.TextIOWrapper(buffered, encoding=encoding or "utf-8",
                                        errors=errors or ("backslashreplace" if fd == 2 else "strict"),
                                        line_buffering=fd == 2 or os.isatty(fd)))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
    sys.argv = ["jaxfuse-lint", *request["argv"]]
    code: int = 0
    try:
        try:
            os.chdir(request["cwd"])
        except OSError as exc:
            print(f"jaxfuse-lint: error: cannot run in {request['cwd']}: {exc.strerror or exc}", file=sys.stderr)
            raise SystemExit(2) from None
        run()
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        code = 130
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        conn.sendall(b"exit %d\n" % code)
    except OSError:
        pass
    return code


def run_daemon(run: Callable[[], None], preload: Callable[[], None], *, idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
               socket_path: str | None = None) -> int:
    """Serve at `socket_path` (default: daemon.socket_path()) until idle for `idle_timeout` seconds
    or stopped; the exit status. `preload()` imports what every run needs, once, before the socket
    is named; each child calls `run()` with the client's command line in sys.argv."""
    if not daemon.enabled():
        print("jaxfuse-lint daemon: needs Unix sockets and fork", file=sys.stderr)
        return 2
    from jaxfuse_lint.core.fingerprint import source_fingerprint

    before = source_fingerprint()
    if socket_path is None:
        directory = daemon.socket_dir()
        if not daemon.private_dir(directory, create=True):
            print(f"jaxfuse-lint daemon: {directory} is not a private folder of this user", file=sys.stderr)
            return 2
    preload()
    # The code imported must be the code the socket is named after: re-take the fingerprint
    # (an edit during the imports would otherwise be served under the old name).
    source_fingerprint.cache_clear()
    if source_fingerprint() != before:
        print("jaxfuse-lint daemon: the tool's files changed while it started", file=sys.stderr)
        return 2
    path = socket_path or daemon.socket_path()
    try:
        if daemon.ask(path, {"kind": "status"}):
            print(f"jaxfuse-lint daemon: one already serves {path}", file=sys.stderr)
            return 0
        server = Daemon(path, idle_timeout, run)
        server.bind()
    finally:
        try:
            os.unlink(path + daemon.STARTING_SUFFIX)
        except OSError:
            pass
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
