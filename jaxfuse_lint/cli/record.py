"""`jaxfuse-lint record [-o FILE] -- COMMAND ...`: run a command and record what JAX traced.

The command runs as a child process with the recorder armed in every Python
process it starts (a `sitecustomize` on PYTHONPATH, see `site_hook.py`, in a
folder made in the user's private folder, core/private_folder.py; the user's
files are not touched). Its standard streams are the terminal's and its
exit code is `record`'s, so `jaxfuse-lint record -- python -m pytest` behaves
like `python -m pytest`. Afterwards the parts written by each process are merged
into one profile (`.jaxfuse_lint/profile.json` unless `-o`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from jaxfuse_lint.core.profile import ProfileError, load_profile, merge, read_parts, write_profile
from jaxfuse_lint.runtime.use import DEFAULT_PATH

HELP = """Run COMMAND and record what JAX traces and compiles into a profile.

Every Python process COMMAND starts (pytest workers and other subprocesses
included) records, for each jit entry point and each function traced under
it: where it is, the abstract signatures it was compiled for, each
compilation and its cause, and the per-line costs of the compiled program.
`check`, `verify` and `explain` then use the profile
(.jaxfuse_lint/profile.json unless -o).

COMMAND's output and exit code pass through unchanged. This runs COMMAND:
run it on code you trust.

\b
Examples:
  jaxfuse-lint record -- python -m pytest tests/
  jaxfuse-lint record -o run.json -- python train.py --steps 2
"""


@click.command("record", help=HELP, short_help="Run a command and record what JAX traces and compiles (runs it).",
               context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help=f"Where to write the profile (default {DEFAULT_PATH}).")
@click.option("--append", is_flag=True, help="Merge into the profile already at the output path instead of replacing it.")
@click.option("--no-costs", is_flag=True,
              help="Skip the per-line cost attribution of each compiled program (faster; no JF502/JF503 line costs).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def record_command(output: str | None, append: bool, no_costs: bool, command: tuple[str, ...]) -> None:
    output = output or DEFAULT_PATH
    previous = None
    if append and Path(output).exists():
        try:
            previous = load_profile(output).data
        except ProfileError as exc:
            click.echo(f"jaxfuse-lint: error: {exc}", err=True)
            sys.exit(2)
    code, stats = run_recorded(list(command), output, costs=not no_costs, previous=previous)
    if stats is not None:
        click.echo(f"jaxfuse-lint record: {stats}", err=True)
    sys.exit(code)


def child_environment(parts_dir: str, boot_dir: str, root: str, costs: bool) -> dict[str, str]:
    env = dict(os.environ)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = boot_dir + (os.pathsep + existing if existing else "")
    env["JAXFUSE_LINT_RECORD_PARTS"] = parts_dir
    env["JAXFUSE_LINT_RECORD_ROOT"] = root
    env["JAXFUSE_LINT_RECORD_COSTS"] = "1" if costs else "0"
    env["JAXFUSE_LINT_PACKAGE_PARENT"] = str(Path(__file__).resolve().parents[2])
    return env


def run_recorded(command: list[str], output: str, *, costs: bool = True, previous: dict | None = None,
                 cwd: str | None = None) -> tuple[int, str | None]:
    """Run `command` with the recorder, write the merged profile; (exit code, summary or None)."""
    from jaxfuse_lint.runtime import site_hook

    from jaxfuse_lint.core.private_folder import is_private, user_folder

    root = os.path.abspath(cwd or os.getcwd())
    # The folders put in the command's environment are made in the user's private folder, not
    # in a shared /tmp: a process the command leaves running keeps PYTHONPATH pointing at the
    # boot folder after `record` removed it, and no other user can make one there again (with
    # a sitecustomize.py that process would then run as this user).
    private = user_folder()
    if not is_private(private, create=True):
        click.echo(f"jaxfuse-lint: error: {private}: not a folder private to this user (another owner, a link, "
                   "or open to others); remove it, or set XDG_RUNTIME_DIR to a folder of yours", err=True)
        return 2, None
    work = tempfile.mkdtemp(prefix="jaxfuse_record_", dir=private)
    try:
        boot = os.path.join(work, "boot")
        parts = os.path.join(work, "parts")
        os.makedirs(boot)
        os.makedirs(parts)
        shutil.copyfile(site_hook.__file__, os.path.join(boot, "sitecustomize.py"))
        env = child_environment(parts, boot, root, costs)
        try:
            proc = subprocess.Popen(command, env=env, cwd=cwd)
        except FileNotFoundError:
            click.echo(f"jaxfuse-lint: error: {command[0]}: command not found", err=True)
            return 127, None
        except PermissionError:
            click.echo(f"jaxfuse-lint: error: {command[0]}: permission denied", err=True)
            return 126, None
        # SIGTERM/SIGHUP to `record` (a CI timeout, a closed terminal) go on to the command,
        # which then ends as it would have alone; its boot folder is removed below, and nothing
        # is left running.
        import signal

        def forward(signum, frame):
            try:
                proc.send_signal(signum)
            except OSError:
                pass

        handlers = {}
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                handlers[sig] = signal.signal(sig, forward)
            except (ValueError, OSError):  # not the main thread
                pass
        try:
            while True:
                try:
                    returncode = proc.wait()
                    break
                except KeyboardInterrupt:
                    # The child got the same Ctrl-C from the terminal; wait for it to finish
                    # and still keep what it recorded.
                    continue
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        found = list(read_parts(parts))
        data = merge(([previous] if previous else []) + found, command=command, jax_version=None)
        if not found and previous is None:
            summary = "nothing was traced (no jax.jit compilation in the recorded processes); no profile written"
            return _exit_code(returncode), summary
        out = Path(output)
        if not out.is_absolute():
            out = Path(root) / out
        write_profile(out, data)
        if previous is None:
            return _exit_code(returncode), f"{summarize(data, len(found))} -> {output}"
        # --append: what this run recorded, then what the merged profile holds (earlier runs too).
        this_run = merge(found, command=command, jax_version=None) if found else {}
        return _exit_code(returncode), (f"this run: {summarize(this_run, len(found))}; merged into {output}, "
                                        f"which now holds {summarize(data, None)} (totals of all the runs "
                                        "recorded there)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _exit_code(returncode: int) -> int:
    if returncode < 0:  # killed by a signal: the shell's convention
        return 128 + (-returncode)
    return returncode


def summarize(data: dict, processes: int | None) -> str:
    entries = data.get("entries", [])
    compilations = sum(len(e.get("compilations", [])) for e in entries)
    functions = {(f.get("sha256"), f.get("qualname")) for f in data.get("functions", [])}
    text = (f"{len(entries)} entry point{'s' if len(entries) != 1 else ''}, "
            f"{compilations} compilation{'s' if compilations != 1 else ''}, "
            f"{len(functions)} traced function{'s' if len(functions) != 1 else ''}")
    return text if processes is None else f"{text} from {processes} process{'es' if processes != 1 else ''}"


__all__ = ["record_command", "run_recorded"]
