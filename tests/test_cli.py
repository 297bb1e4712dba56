"""The command line as users run it: exit codes, formats, selection, stdin, no jax import."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BAD = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    import numpy as np


    @jax.jit
    def f(x, y, z):
        v = jnp.stack([x, y, z], axis=-1)
        return v * jnp.sum(v * v, axis=-1, keepdims=True) + np.eye(64)
    """
)


def run(*args, cwd=None, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "jaxfuse_lint", *args],
        capture_output=True, text=True, cwd=cwd, input=stdin,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text("import jax\n\n\ndef f(x):\n    return x\n")
    return tmp_path


def test_exit_codes_and_concise_output(project):
    r = run("check", str(project), cwd=project)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].startswith("bad.py:9:16: JF101 ")
    assert lines[1].startswith("bad.py:9:57: JF201 ")
    assert "Found 2 diagnostics." in r.stdout
    clean = run("check", str(project / "clean.py"), cwd=project)
    assert clean.returncode == 0 and clean.stdout == "All checks passed!\n"


def test_default_command_is_check(project):
    assert run(str(project), cwd=project).stdout == run("check", str(project), cwd=project).stdout


def test_json_is_ruff_schema(project):
    r = run("check", "--output-format", "json", "--no-cache", str(project), cwd=project)
    data = json.loads(r.stdout)
    assert {d["code"] for d in data} == {"JF101", "JF201"}
    d = next(d for d in data if d["code"] == "JF101")
    # ruff's fields, and the finding's premises (model/premises.py)
    assert set(d) == {"cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url",
                      "premises"}
    assert d["location"] == {"row": 9, "column": 16}
    assert d["end_location"] == {"row": 9, "column": 54}
    assert Path(d["filename"]).is_absolute()
    assert d["noqa_row"] == 9
    assert d["url"].endswith("small-axis-reduction.md")


def test_select_ignore_and_prefixes(project):
    only = run("check", "--select", "JF2", "--output-format", "json", str(project), cwd=project)
    assert {d["code"] for d in json.loads(only.stdout)} == {"JF201"}
    ignored = run("check", "--ignore", "JF101,JF201", str(project), cwd=project)
    assert ignored.returncode == 0
    extended = run("check", "--select", "JF2", "--extend-select", "JF101", "--output-format", "json", str(project), cwd=project)
    assert {d["code"] for d in json.loads(extended.stdout)} == {"JF101", "JF201"}


def test_unknown_code_is_a_usage_error(project):
    r = run("check", "--select", "JF999", str(project), cwd=project)
    assert r.returncode == 2
    assert "unknown rule selector `JF999`" in r.stderr


def test_a_missing_path_is_a_diagnostic_and_the_other_paths_are_checked(project):
    """ruff's E902: the path is reported, the rest checked, exit 1 (not 2: nothing was misused)."""
    r = run("check", "missing/", "bad.py", cwd=project)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()  # in file order, as every report is
    assert lines[0].startswith("bad.py:9:16: JF101 ") and lines[1].startswith("bad.py:9:57: JF201 ")
    assert lines[2] == "missing:1:1: JF000 Could not read path: No such file or directory"
    assert "Found 3 diagnostics." in lines and r.stderr == ""
    data = json.loads(run("check", "--output-format", "json", "missing", "bad.py", cwd=project).stdout)
    assert [d["code"] for d in data] == ["JF101", "JF201", "JF000"]
    assert data[2]["message"] == "Could not read path: No such file or directory" and data[2]["fix"] is None
    alone = run("check", "missing.py", cwd=project)
    assert alone.returncode == 1 and alone.stdout.startswith("missing.py:1:1: JF000 Could not read path: ")
    assert run("check", "--exit-zero", "missing.py", cwd=project).returncode == 0
    fixed = run("check", "--fix", "missing", "bad.py", cwd=project)
    assert fixed.returncode == 1 and "missing:1:1: JF000 Could not read path: " in fixed.stdout


def test_the_summary_is_on_stdout_after_the_report_and_machine_formats_have_none(project):
    r = run("check", "bad.py", cwd=project)
    assert r.stdout.splitlines()[2:] == ["Found 2 diagnostics.", "[*] 1 fixable with `jaxfuse-lint --fix`."] \
        or r.stdout.splitlines()[2] == "Found 2 diagnostics.", r.stdout
    assert r.stderr == ""
    assert run("check", "clean.py", cwd=project).stdout == "All checks passed!\n"
    for fmt in ("json", "json-lines", "junit", "sarif", "github", "gitlab", "pylint", "rdjson"):
        out = run("check", "--output-format", fmt, "bad.py", cwd=project)
        assert "Found" not in out.stdout and "Found" not in out.stderr, fmt
    json.loads(run("check", "--output-format", "json", "bad.py", cwd=project).stdout)
    quiet = run("check", "-q", "bad.py", cwd=project)
    assert len(quiet.stdout.splitlines()) == 2 and quiet.stderr == ""
    to_file = run("check", "-o", "report.txt", "bad.py", cwd=project)
    assert to_file.stdout == "" and "Found 2 diagnostics." in (project / "report.txt").read_text()
    # --diff: stdout is the patch; its closing lines go to stderr (ruff's).
    diff = run("check", "--diff", "bad.py", cwd=project)
    assert diff.stdout.startswith("--- a/bad.py") and "Would fix" not in diff.stdout
    assert "Would fix 1 diagnostic in 1 file." in diff.stderr


def test_exit_zero_and_statistics(project):
    r = run("check", "--exit-zero", "--statistics", str(project), cwd=project)
    assert r.returncode == 0
    assert "JF101" in r.stdout and "small-axis-reduction" in r.stdout


def test_stdin_with_filename(project):
    r = run("check", "--stdin-filename", "editor.py", "-", cwd=project, stdin=BAD)
    assert r.returncode == 1
    assert r.stdout.startswith("editor.py:9:16: JF101")


def test_unparsable_file_is_reported_and_run_continues(project):
    (project / "broken.py").write_text("import jax\ndef f(:\n    pass\n")
    r = run("check", "--output-format", "json", str(project), cwd=project)
    data = json.loads(r.stdout)
    codes = sorted(d["code"] for d in data)
    assert codes == ["JF000", "JF101", "JF201"]
    broken = next(d for d in data if d["code"] == "JF000")
    assert broken["location"]["row"] == 2


def test_check_never_imports_jax(project):
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from jaxfuse_lint.cli.main import cli\n"
        f"r = CliRunner().invoke(cli, ['check', '--output-format', 'json', {str(project)!r}])\n"
        "assert r.exit_code == 1, r.output\n"
        "assert 'jax' not in sys.modules, 'check imported jax'\n"
        "assert not any(m == 'jax' or m.startswith('jax.') for m in sys.modules)\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_rule_command(project):
    r = run("rule", "JF203")
    assert r.returncode == 0
    assert "# loop-invariant-capture (JF203)" in r.stdout and "## Why is this bad?" in r.stdout
    listing = run("rule", "--all")
    assert "JF101" in listing.stdout and "JF302" in listing.stdout
    assert run("rule", "JF999").returncode == 2


def test_discovery_respects_gitignore_and_excludes(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    for d in ("generated", "pkg", ".venv", "build"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "m.py").write_text(BAD)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nextend-exclude = ["skipme.py"]\n')
    (tmp_path / "skipme.py").write_text(BAD)
    r = run("check", "--output-format", "json", ".", cwd=tmp_path)
    files = {Path(d["filename"]).relative_to(tmp_path).as_posix() for d in json.loads(r.stdout)}
    assert files == {"pkg/m.py"}
    # A file named explicitly is always checked.
    r2 = run("check", "--output-format", "json", "generated/m.py", cwd=tmp_path)
    assert json.loads(r2.stdout)


def test_python_dash_m_works():
    r = run("--version")
    assert r.returncode == 0 and "jaxfuse-lint" in r.stdout
