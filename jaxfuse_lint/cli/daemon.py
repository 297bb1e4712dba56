"""`jaxfuse-lint daemon start|stop|status`: manage the resident `check` (see daemon/__init__).

The daemon process itself is `jaxfuse-lint daemon serve` (hidden; what `start` runs detached):
it hands daemon/server.py this command line's own entry for the children to run, and what
a `check` imports (`preload_check`), so the daemon package never imports the command line.
"""
from __future__ import annotations

import os
import sys
import time

import click

from jaxfuse_lint import daemon
from jaxfuse_lint.daemon.server import DEFAULT_IDLE_TIMEOUT


def _sockets(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.endswith(daemon.SUFFIX)]


def _refused(path: str) -> bool:
    """Nobody listens on the socket (a stale file), as opposed to a daemon too busy to answer."""
    try:
        daemon.connect(path, timeout=1.0).close()
    except (ConnectionRefusedError, FileNotFoundError):
        return True
    except OSError:
        return False
    return False


def preload_check() -> None:
    """Everything a `check` imports, so that no child imports it again (not jax: check never
    needs it). The command line itself (click, the settings, the reports) is imported already:
    the daemon runs inside it."""
    import multiprocessing
    import multiprocessing.connection  # noqa: F401  (the runner's worker pool)

    import jaxfuse_lint.discover.files  # noqa: F401
    import jaxfuse_lint.engine.pipeline  # noqa: F401
    import jaxfuse_lint.codemods.plan  # noqa: F401
    import jaxfuse_lint.engine.noqa  # noqa: F401
    import jaxfuse_lint.parse.notebook  # noqa: F401
    import jaxfuse_lint.project.index  # noqa: F401
    import jaxfuse_lint.report as report
    import jaxfuse_lint.run.runner  # noqa: F401
    import jaxfuse_lint.run.worker as worker
    from jaxfuse_lint.rules import all_rules

    for name in ("difflib", "tempfile", "pathspec", "tomllib"):
        try:
            __import__(name)
        except ImportError:
            pass
    all_rules()
    for fmt in getattr(report, "FORMATS", ()):
        try:
            report.renderer(fmt)
        except Exception:
            pass
    multiprocessing.get_all_start_methods()
    worker.preload_tool()  # the codemods; then gc.freeze() of all of it


def _command_line(ctx: click.Context):
    """What a child of the daemon runs: this very command line's root command, on the client's argv."""
    root = ctx.find_root().command
    return lambda: root.main(prog_name="jaxfuse-lint")


@click.group("daemon")
def daemon_command() -> None:
    """A resident process that runs `check` with the parser, model and rules already imported.

    While one runs, every `jaxfuse-lint check` of this interpreter and version of the tool is
    forked from it (a warm re-run with one file changed: no 0.2 s of imports). Set
    JAXFUSE_LINT_DAEMON=auto to have the first check start one, =0 to never use one.
    """


@daemon_command.command("start")
@click.option("--idle-timeout", type=click.FloatRange(min=1), default=1800, show_default=True,
              help="Exit after this many seconds without a request.")
@click.option("--foreground", is_flag=True, help="Run in this terminal instead of detached (Ctrl-C stops it).")
@click.pass_context
def start(ctx: click.Context, idle_timeout: float, foreground: bool) -> None:
    """Start the daemon (or say that it already runs)."""
    if not daemon.enabled():
        raise click.ClickException("the daemon needs Unix sockets and fork (not available here)")
    directory = daemon.socket_dir()
    if not daemon.private_dir(directory, create=True):
        raise click.ClickException(f"{directory} is not a folder only this user can open")
    path = daemon.socket_path(directory)
    if len(path) > daemon.MAX_SOCKET_PATH:
        raise click.ClickException(f"the socket path is too long for a Unix socket: {path} (set {daemon.ENV_DIR})")
    running = daemon.ask(path, {"kind": "status"})
    if running:
        click.echo(f"jaxfuse-lint daemon already running (pid {running['pid']}, {path})")
        return
    if foreground:
        from jaxfuse_lint.daemon.server import run_daemon

        sys.exit(run_daemon(_command_line(ctx), preload_check, idle_timeout=idle_timeout))
    daemon.start_in_background(idle_timeout)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = daemon.ask(path, {"kind": "status"})
        if answer:
            click.echo(f"jaxfuse-lint daemon started (pid {answer['pid']}, {path})")
            return
        time.sleep(0.05)
    raise click.ClickException("the daemon did not start within 30 s (try `jaxfuse-lint daemon start --foreground`)")


@daemon_command.command("serve", hidden=True)
@click.option("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT)
@click.option("--socket", "socket_path", default=None, help="default: daemon.socket_path()")
@click.pass_context
def serve(ctx: click.Context, idle_timeout: float, socket_path: str | None) -> None:
    """The daemon process itself (what `start` runs detached): serve until idle or stopped."""
    from jaxfuse_lint.daemon.server import run_daemon

    sys.exit(run_daemon(_command_line(ctx), preload_check, idle_timeout=idle_timeout, socket_path=socket_path))


@daemon_command.command("stop")
def stop() -> None:
    """Stop every daemon of this user (all versions of the tool, all interpreters)."""
    stopped = 0
    for path in _sockets(daemon.socket_dir()):
        answer = daemon.ask(path, {"kind": "stop"})
        if answer:
            stopped += 1
            click.echo(f"stopped pid {answer['pid']} ({path})")
        elif _refused(path):  # nobody listens: a daemon that was killed left it
            try:
                os.unlink(path)
            except OSError:
                pass
        else:
            click.echo(f"a daemon at {path} did not answer (busy); left running")
    if not stopped:
        click.echo("no daemon running")


@daemon_command.command("status")
def status() -> None:
    """List running daemons; exit 1 if none serves this interpreter and version."""
    directory = daemon.socket_dir()
    current = daemon.socket_path(directory)
    serving = False
    for path in _sockets(directory):
        answer = daemon.ask(path, {"kind": "status"})
        mine = path == current
        if not answer:
            if not _refused(path):
                serving |= mine
                click.echo(f"a daemon listens but did not answer (busy) ({path})")
            continue
        serving |= mine
        uptime = time.time() - answer["started"]
        what = "serves this tool" if mine else "another version of the tool or interpreter"
        click.echo(f"pid {answer['pid']}: {what}; up {uptime:.0f} s, {answer['served']} runs, "
                   f"idle timeout {answer['idle_timeout']:g} s ({path})")
    if not serving:
        click.echo("no daemon serves this tool")
        sys.exit(1)
