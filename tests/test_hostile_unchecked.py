"""A file an internal error leaves unchecked fails the run (issue 42, item 4). A 2 MB file under
`--fix -j1` ran past the per-file limit, was reported as `internal error: ... longer than 300 s`,
and the run ended `Fixed 0 diagnostics, 0 remaining` with exit 0: a CI gate passed with the file
unchecked. Now any file an internal error stops (a worker that dies or runs out of time, an
analysis or a rule that raises) exits 2, as ruff does for its internal errors, whatever
`--exit-zero` says; the closing lines name it instead of "All checks passed!"; and its result is
never cached, so the next run analyses it again.

Each run is a fresh process whose worker is forked from it with the sabotage in place: a rule
that sleeps, exits or raises on a file marked `# hostile: <what>`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"
FINE = "import jax\n\n\n@jax.jit\ndef g(x):\n    return x + 1\n"

# Run in the child before the CLI: a short time limit, and JF201's rule sabotaged on marked files.
SABOTAGE = textwrap.dedent("""\
    import os, sys, time
    from jaxfuse_lint.run import runner
    runner.FILE_TIMEOUT = 3.0
    from jaxfuse_lint.rules import all_rules
    [rule] = [r for r in all_rules() if r.code == "JF201"]
    real = type(rule).check
    def check(self, model, settings):
        code = model.module.code
        if "# hostile: sleep" in code and not os.environ.get("HOSTILE_OFF"):
            time.sleep(60)
        if "# hostile: exit" in code and not os.environ.get("HOSTILE_OFF"):
            os._exit(3)
        if "# hostile: raise" in code and not os.environ.get("HOSTILE_OFF"):
            raise RuntimeError("synthetic rule bug")
        yield from real(self, model, settings)
    type(rule).check = check
    from jaxfuse_lint.cli.main import cli
    cli(sys.argv[1:], prog_name="jaxfuse-lint")
""")


def run(*args: str, cwd: Path, off: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    env.pop("HOSTILE_OFF", None)
    if off:
        env["HOSTILE_OFF"] = "1"
    return subprocess.run([sys.executable, "-c", SABOTAGE, *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=240)


@pytest.fixture
def proj(tmp_path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n")
    return proj


def unchecked_line(n: int, names: str) -> str:
    return (f"{n} file{'s' if n != 1 else ''} not checked (an internal error stopped the analysis; see above): "
            f"{names}")


@pytest.mark.parametrize("what", ["sleep", "exit", "raise"])
@pytest.mark.parametrize("mode", ["check", "fix"])
def test_an_unchecked_file_fails_the_run_and_is_named(proj, what, mode):
    (proj / "big.py").write_text(FINE + f"# hostile: {what}\n")
    args = ["check", "--no-cache", "-j1", *(["--fix"] if mode == "fix" else []), "."]
    result = run(*args, cwd=proj)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "All checks passed!" not in result.stdout
    assert unchecked_line(1, "big.py") in result.stdout.splitlines()
    assert any(line.startswith("jaxfuse-lint: big.py: internal error") for line in result.stderr.splitlines())
    if mode == "fix":
        assert "Fixed 0 diagnostics, 0 remaining." in result.stdout


def test_other_files_are_still_checked_and_exit_zero_does_not_hide_it(proj):
    (proj / "big.py").write_text(FINE + "# hostile: exit\n")
    (proj / "m.py").write_text(BAD)
    result = run("check", "--no-cache", "-j1", "--exit-zero", ".", cwd=proj)
    assert result.returncode == 2, result.stderr
    assert "m.py:7:16: JF201" in result.stdout
    assert "Found 1 diagnostic." in result.stdout and unchecked_line(1, "big.py") in result.stdout


def test_a_broken_rule_leaves_the_file_unchecked_by_that_rule(proj):
    """The other rules' findings in that file are reported; the file is still named."""
    (proj / "m.py").write_text(BAD.replace("def f(x):", "def f(x):\n    print(x)") + "# hostile: raise\n")
    result = run("check", "--no-cache", "-j1", ".", cwd=proj)
    assert result.returncode == 2
    assert "JF401" in result.stdout and unchecked_line(1, "m.py") in result.stdout


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_a_machine_readable_report_stays_well_formed_and_stderr_names_the_file(proj, fmt):
    (proj / "big.py").write_text(FINE + "# hostile: exit\n")
    result = run("check", "--no-cache", "-j1", "--output-format", fmt, ".", cwd=proj)
    assert result.returncode == 2
    json.loads(result.stdout)
    assert unchecked_line(1, "big.py") in result.stderr.splitlines()


def test_diff_fails_too(proj):
    (proj / "big.py").write_text(FINE + "# hostile: sleep\n")
    result = run("check", "--no-cache", "-j1", "--diff", ".", cwd=proj)
    assert result.returncode == 2
    assert unchecked_line(1, "big.py") in result.stderr.splitlines()


def test_an_unchecked_file_is_not_cached(proj):
    """The next run analyses it again: before, the timed-out file's empty result was cached and
    replayed, "All checks passed!" for a file never checked."""
    (proj / "m.py").write_text(BAD + "# hostile: sleep\n")
    first = run("check", "-j1", ".", cwd=proj)
    assert first.returncode == 2, first.stderr
    second = run("check", "-j1", ".", cwd=proj, off=True)
    assert second.returncode == 1, (second.stdout, second.stderr)
    assert "m.py:7:16: JF201" in second.stdout
