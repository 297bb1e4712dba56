"""A cloned repository's configuration and odd files (issue 42, items 5 and 7): a `gpu` target
file that is not an XLA target config, a pyproject.toml nested 5,000 deep, a FIFO named on the
command line. Each is said on one line; a configuration error exits 2."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"


def run_process(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def proj(tmp_path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n")
    (proj / "m.py").write_text(BAD)
    return proj


# -- item 7: a pyproject.toml nested 5,000 deep ---------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("where", ["tool table", "another table", "--config"])
def test_a_toml_file_nested_too_deeply_is_a_configuration_error(proj, where):
    if where == "tool table":
        (proj / "pyproject.toml").write_text(f"[tool.jaxfuse-lint]\nselect = {DEEP}\n")
        args = ["check", "--no-cache", "m.py"]
    elif where == "another table":  # read while looking for the configuration
        (proj / "pyproject.toml").write_text(f"[project]\nname = 'x'\nkeywords = {DEEP}\n")
        args = ["check", "--no-cache", "m.py"]
    else:
        (proj / "lint.toml").write_text(f"select = {DEEP}\n")
        args = ["check", "--no-cache", "--config", "lint.toml", "m.py"]
    result = run_process(*args, cwd=proj)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"jaxfuse-lint: error: {'lint.toml' if where == '--config' else proj / 'pyproject.toml'}: invalid TOML: "
        "arrays or tables nested too deeply to read"]


# -- item 7: a FIFO named on the command line -----------------------------------------------------------

def test_a_named_fifo_is_one_warning(proj):
    os.mkfifo(proj / "f.py")
    result = run_process("check", "--no-cache", "f.py", "m.py", cwd=proj)
    assert result.returncode == 1 and "m.py:7:16: JF201" in result.stdout
    said = [line for line in result.stderr.splitlines() if "f.py" in line]
    assert said == ["warning: f.py: not a regular file: a FIFO; skipped"]
