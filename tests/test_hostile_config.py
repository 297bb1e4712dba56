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


# -- item 5: a `gpu` file that is not an XLA target config ------------------------------------------

NOT_CONFIGS = {
    "text": "hello\n",
    "toml": "[gpu]\nname = 'h100'\n",
    "python": "print('h100')\n",
    "another message": "platform_name: \"CUDA\"\ndevice_description_str: \"NVIDIA H100\"\n",
    "a scalar device info": "gpu_device_info: 3\n",
    "unclosed": "gpu_device_info {\n  core_count: 132\n",
    "binary": "\x00\x01gpu_device_info {}",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(NOT_CONFIGS))
@pytest.mark.parametrize("where", ["config", "command line"])
def test_a_gpu_file_that_is_not_a_target_config_is_a_configuration_error(proj, name, where):
    (proj / "g.txt").write_text(NOT_CONFIGS[name])
    if where == "config":
        (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\ngpu = \"g.txt\"\n")
        result = run_process("check", "--no-cache", "proj", cwd=proj.parent)
        prefix = f"jaxfuse-lint: error: {proj / 'pyproject.toml'}: `gpu`: 'g.txt' is not an XLA target config"
    else:
        result = run_process("check", "--no-cache", "--gpu", "proj/g.txt", "proj", cwd=proj.parent)
        prefix = "jaxfuse-lint: error: --gpu: 'proj/g.txt' is not an XLA target config"
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(prefix), lines
    assert result.stdout == ""


def test_a_target_config_of_ones_own_is_accepted(proj):
    """A copy of a shipped config, as XLA writes one for the GPU it sees: accepted, by path."""
    shipped = ROOT / "jaxfuse_lint" / "gpu_targets" / "a6000.txtpb"
    (proj / "mine.txtpb").write_text(shipped.read_text())
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\ngpu = \"mine.txtpb\"\n")
    result = run_process("check", "--no-cache", "--show-settings", "proj", cwd=proj.parent)
    assert result.returncode == 0, result.stderr
    assert str(proj / "mine.txtpb") in result.stdout


def test_every_shipped_target_config_reads_as_one():
    from jaxfuse_lint.gpu_targets import MODELS
    from jaxfuse_lint.gpu_targets.config_file import check_file

    for name in MODELS.values():
        check_file(str(ROOT / "jaxfuse_lint" / "gpu_targets" / name))


def test_a_deeply_nested_gpu_file_is_read_without_recursion():
    from jaxfuse_lint.gpu_targets.config_file import NotATargetConfig, check_text

    check_text("gpu_device_info {" + " a {" * 100_000 + " }" * 100_000 + " }")
    with pytest.raises(NotATargetConfig, match="a `}` is missing"):
        check_text("gpu_device_info {" + " a {" * 100_000)
