"""The command line read as ruff reads its own (issue 41, item 5): unknown commands and options are
usage errors with the closest names, options may come before the subcommand, `--config KEY=VALUE`,
`--isolated`, `--ignore-noqa`, `--fixable`/`--unfixable`/`--extend-fixable`, and `--watch`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from tests.test_cli import BAD, ROOT, project  # noqa: F401


class Ran:
    def __init__(self, result) -> None:
        self.returncode, self.stdout, self.stderr = result.exit_code, result.stdout, result.stderr


def run(*args: str, cwd, stdin: str | None = None) -> Ran:
    """The command line in this process (click's runner): what `jaxfuse-lint ARGS` prints and exits with."""
    from jaxfuse_lint.cli.main import cli

    here = os.getcwd()
    os.chdir(cwd)
    try:
        return Ran(CliRunner().invoke(cli, list(args), input=stdin, prog_name="jaxfuse-lint"))
    finally:
        os.chdir(here)


def codes(result) -> list[str]:
    return sorted(d["code"] for d in json.loads(result.stdout))


# -- unknown commands and options ---------------------------------------------------------------------

def test_a_mistyped_command_is_a_usage_error_with_the_closest_one(project):  # noqa: F811
    r = run("chek", ".", cwd=project)
    assert r.returncode == 2, r.stdout
    assert "unknown command 'chek' (did you mean 'check'?)" in r.stderr
    assert r.stdout == ""  # nothing was checked
    r = run("reviw", cwd=project)
    assert r.returncode == 2 and "(did you mean 'review'?)" in r.stderr
    r = run("frobnicate", cwd=project)
    assert r.returncode == 2 and "unknown command 'frobnicate' (commands: check, " in r.stderr


def test_paths_without_a_command_are_still_checked(project):  # noqa: F811
    assert run("bad.py", cwd=project).returncode == 1
    assert run(".", cwd=project).stdout == run("check", ".", cwd=project).stdout
    (project / "chek").mkdir()  # a folder by that name: a path, checked
    assert run("chek", cwd=project).returncode == 0
    # A word that reads as a path is one that cannot be read (JF000), as `check missing.py` reports it.
    missing = run("missing.py", cwd=project)
    assert missing.returncode == 1 and missing.stdout.startswith("missing.py:1:1: JF000 Could not read path")


def test_options_before_the_subcommand_are_its_own(project):  # noqa: F811
    (project / "f.py").write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n"
        "    return jax.lax.fori_loop(0, 4, lambda i, v: jnp.roll(v, 1) * 0.5, x)\n")
    plain = run("check", "--no-cache", "f.py", cwd=project)
    assert plain.returncode == 0, plain.stdout  # the stencil is in the preview tier
    r = run("--preview", "check", "--no-cache", "f.py", cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("f.py:7:12: JF103 ") and "Could not read" not in r.stdout
    assert "bad.py" not in r.stdout  # f.py only
    r = run("--select", "JF2", "--output-format", "json", "check", "bad.py", cwd=project)
    assert codes(r) == ["JF201"]
    r = run("--output-format=json", "rule", "JF101", cwd=project)
    assert r.returncode == 0 and json.loads(r.stdout)["code"] == "JF101"


@pytest.mark.parametrize("typed, suggested", [
    ("--previw", "Did you mean '--preview'?"),
    ("--unsafe", "Did you mean '--unsafe-fixes'?"),
    ("--exlude", "Did you mean '--exclude'?"),
])
def test_a_mistyped_option_suggests_the_close_ones(project, typed, suggested):  # noqa: F811
    r = run("check", typed, ".", cwd=project)
    assert r.returncode == 2 and f"No such option '{typed}'. {suggested}" in r.stderr, r.stderr


def test_an_option_close_to_none_suggests_none(project):  # noqa: F811
    for args in (("--bogus",), ("check", "--bogus", "."), ("rule", "--bogus")):
        r = run(*args, cwd=project)
        assert r.returncode == 2
        assert "No such option '--bogus'." in r.stderr and "Did you mean" not in r.stderr, r.stderr
        assert "--gpu" not in r.stderr and "--jobs" not in r.stderr


# -- --config KEY=VALUE, --isolated ----------------------------------------------------------------------

def test_config_key_value_overrides_the_files_setting(project):  # noqa: F811
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF1"]\n')
    assert codes(run("check", "--output-format", "json", "bad.py", cwd=project)) == ["JF101"]
    r = run("check", "--output-format", "json", "--config", "select = ['JF2']", "bad.py", cwd=project)
    assert codes(r) == ["JF201"], r.stderr
    r = run("check", "--output-format", "json", "--config", 'extend-select=["JF2"]', "bad.py", cwd=project)
    assert codes(r) == ["JF101", "JF201"], r.stderr
    # A path still means a config file; both together: the file, then the setting over it.
    (project / "other.toml").write_text('select = ["JF2"]\nignore = ["JF201"]\n')
    r = run("check", "--output-format", "json", "--config", "other.toml", "bad.py", cwd=project)
    assert codes(r) == []
    r = run("check", "--output-format", "json", "--config", "other.toml", "--config", "ignore=[]", "bad.py",
            cwd=project)
    assert codes(r) == ["JF201"]
    # The command line's own options win over both.
    r = run("check", "--output-format", "json", "--config", "select=['JF2']", "--select", "JF101", "bad.py",
            cwd=project)
    assert codes(r) == ["JF101"]


@pytest.mark.parametrize("value, message", [
    ("selct = ['JF1']", "--config: unknown key `selct` in [tool.jaxfuse-lint]; did you mean `select`?"),
    ("select = JF1", "--config 'select = JF1': not a config file, and not a valid `KEY = VALUE` TOML setting"),
    ("unroll-max = 'eight'", "--config: `unroll-max` must be a positive integer"),
    ("missing.toml", "missing.toml: config file not found"),
])
def test_a_bad_config_argument_is_a_usage_error(project, value, message):  # noqa: F811
    r = run("check", "--config", value, "bad.py", cwd=project)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_isolated_ignores_every_configuration_file(project):  # noqa: F811
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF1"]\n')
    assert codes(run("check", "--output-format", "json", "bad.py", cwd=project)) == ["JF101"]
    r = run("check", "--isolated", "--output-format", "json", "bad.py", cwd=project)
    assert codes(r) == ["JF101", "JF201"]
    r = run("check", "--isolated", "--config", "select=['JF2']", "--output-format", "json", "bad.py", cwd=project)
    assert codes(r) == ["JF201"]
    r = run("check", "--isolated", "--config", "pyproject.toml", "bad.py", cwd=project)
    assert r.returncode == 2 and "cannot be used with --isolated" in r.stderr
    shown = run("check", "--isolated", "--show-settings", cwd=project)
    assert "(none found: built-in defaults)" in shown.stdout


# -- --ignore-noqa, --fixable / --unfixable / --extend-fixable -----------------------------------------

def test_ignore_noqa_reports_what_noqa_suppresses(project):  # noqa: F811
    (project / "quiet.py").write_text(BAD.replace("np.eye(64)\n", "np.eye(64)  # noqa: JF101, JF201\n"))
    (project / "exempt.py").write_text("# jaxfuse-lint: noqa\n" + BAD)
    assert run("check", "--no-cache", "quiet.py", "exempt.py", cwd=project).returncode == 0
    r = run("check", "--no-cache", "--ignore-noqa", "--output-format", "json", "quiet.py", "exempt.py", cwd=project)
    assert codes(r) == ["JF101", "JF101", "JF201", "JF201"]
    r = run("check", "--no-cache", "--ignore-noqa", "--extend-select", "JF901", "--output-format", "json",
            "quiet.py", cwd=project)
    assert codes(r) == ["JF101", "JF201"]  # no directive is "unused" when none is read


def test_fixable_and_unfixable_on_the_command_line(project):  # noqa: F811
    def fixable(*args) -> dict[str, bool]:
        r = run("check", "--no-cache", "--unsafe-fixes", "--output-format", "json", *args, "bad.py", cwd=project)
        return {d["code"]: d["fix"] is not None for d in json.loads(r.stdout)}

    assert fixable() == {"JF101": True, "JF201": True}
    assert fixable("--unfixable", "JF201") == {"JF101": True, "JF201": False}
    assert fixable("--fixable", "JF101") == {"JF101": True, "JF201": False}
    assert fixable("--fixable", "JF101", "--extend-fixable", "JF2") == {"JF101": True, "JF201": True}
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nfixable = ["JF1"]\n')
    assert fixable() == {"JF101": True, "JF201": False}
    assert fixable("--extend-fixable", "JF201") == {"JF101": True, "JF201": True}
    r = run("check", "--fixable", "JF999", "bad.py", cwd=project)
    assert r.returncode == 2 and "--fixable: unknown rule selector `JF999`" in r.stderr


# -- --watch ---------------------------------------------------------------------------------------------

def _read_report(proc, deadline: float) -> list[str]:
    """stdout lines up to the end of one report (its closing summary line)."""
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith(("Found ", "All checks passed!")):
            return lines
    raise AssertionError(f"no report: {lines}")


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry))
    return members


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_watch_checks_again_on_save_and_ctrl_c_ends_it_cleanly(project):  # noqa: F811
    (project / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n")
    target = project / "m.py"
    target.write_text("import jax\n\n\ndef f(x):\n    return x\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxfuse_lint", "check", "--watch", "--jobs", "2", "."], cwd=project,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAXFUSE_LINT_DAEMON": "0"})
    try:
        deadline = time.monotonic() + 120
        first = _read_report(proc, deadline)
        assert "Found 2 diagnostics." in first, first  # bad.py's two
        target.write_text(BAD)  # saved with two more findings
        second = _read_report(proc, deadline)
        assert "Found 4 diagnostics." in second, second
        assert any(line.startswith("m.py:9:16: JF101 ") for line in second)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
        assert proc.wait(timeout=60) == 0
        stderr = proc.stderr.read()
        assert "Starting linter in watch mode..." in stderr and "File change detected..." in stderr
        assert "Traceback" not in stderr, stderr
        time.sleep(0.5)
        assert _group_members(proc.pid) == []  # no worker outlives it
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_watch_refuses_what_it_cannot_repeat(project):  # noqa: F811
    r = run("check", "--watch", "-", cwd=project, stdin="x = 1\n")
    assert r.returncode == 2 and "--watch cannot be used with -" in r.stderr
    r = run("check", "--watch", "--add-noqa", ".", cwd=project)
    assert r.returncode == 2 and "--watch cannot be used with --add-noqa" in r.stderr
