"""Every codemod is also a libcst command: `python -m libcst.tool codemod` applies the same fixes.

libcst formats with black by default, which jaxfuse-lint does not need: pass `--no-format`
(or configure a formatter in `.libcst.codemod.yaml`). The dotted path `jaxfuse_lint.engine.libcst_commands.<Command>`
needs `-x` (import it as given); with `modules: [jaxfuse_lint.engine]` in `.libcst.codemod.yaml` the short
form `libcst_commands.<Command>` works and `python -m libcst.tool list` shows the commands.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine import libcst_commands
from jaxfuse_lint.engine.pipeline import fix_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# The command of each rule, and the codemod module whose fixes it applies.
COMMANDS = {
    "JF101": ("UnrollSmallReductionCommand", "jf101_unroll_reduction"),
    "JF201": ("NumpyToJnpCommand", "jf201_numpy_to_jnp"),
    "JF202": ("RebuildWithJnpCommand", "jf202_rebuild_with_jnp"),
    "JF203": ("RecomputeInLoopCommand", "jf203_recompute_in_loop"),
    "JF301": ("HoistJitCommand", "jf301_hoist_jit"),
    "JF302": ("HoistJitToModuleCommand", "jf302_hoist_jit_to_module"),
}


def libcst_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("code", sorted(COMMANDS))
def test_each_rule_has_a_command_that_runs_the_rule(code):
    cls_name, module_name = COMMANDS[code]
    module = importlib.import_module(f"jaxfuse_lint.codemods.{module_name}")
    command = getattr(libcst_commands, cls_name)
    assert issubclass(command, libcst_commands.RuleCodemodCommand) and command.CODE == module.CODE == code
    assert command.DESCRIPTION.startswith(code)


# A capture JF203's default table (XLA:GPU, h100) reports: elementwise work on an input of 4,096
# elements read in a fori_loop body (the command runs the rule with the tables, as `check` does: the
# fixture files of the raw pattern, such as fix_recompute.py, are silent there).
JF203_REPORTED = """import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def f(x):
    assert x.shape == (64, 64)
    g = jnp.exp(x)

    def step(i, c):
        return c + g

    return lax.fori_loop(0, 8, step, x)
"""


@pytest.mark.parametrize("code,case,unsafe", [
    # fix_reductions.py's findings the table reports have unsafe fixes (the operands' dtypes are unknown).
    ("JF101", "fix_reductions", True),
    ("JF203", JF203_REPORTED, True),
    ("JF301", "fix_hoist", False),
], ids=["JF101-fix_reductions-True", "JF203-reported_capture-True", "JF301-fix_hoist-False"])
def test_libcst_tool_applies_the_same_fix_as_jaxfuse_lint(tmp_path, code, case, unsafe):
    text = (FIXTURES / code / f"{case}.py").read_text() if case.isidentifier() else case
    target = tmp_path / "module.py"
    target.write_text(text)
    args = ["-x", "--no-format", f"jaxfuse_lint.engine.libcst_commands.{COMMANDS[code][0]}", str(target)] + (["--unsafe-fixes"] if unsafe else [])
    proc = libcst_tool(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = fix_source(text, "module.py", replace(Settings(), select=(code,)), unsafe=unsafe).source
    assert target.read_text() == expected
    assert target.read_text() != text


def test_libcst_tool_short_names_with_a_config_file(tmp_path):
    (tmp_path / ".libcst.codemod.yaml").write_text("modules:\n  - jaxfuse_lint.engine\n")
    target = tmp_path / "module.py"
    # A case run with the table's decisions (as the command runs: `calibrated*.py`, not the raw pattern).
    src = FIXTURES / "JF201" / "calibrated.py"
    target.write_text(src.read_text())
    proc = libcst_tool(["--no-format", f"libcst_commands.{COMMANDS['JF201'][0]}", str(target)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert target.read_text() == (FIXTURES / "JF201" / "calibrated.fixed.py").read_text()


def test_libcst_tool_without_no_format_needs_a_formatter(tmp_path):
    """Documented behaviour: with no formatter installed, libcst refuses to write (nothing changes)."""
    target = tmp_path / "module.py"
    # A file the command changes (JF101's table reports its findings; their fixes are unsafe).
    src = FIXTURES / "JF101" / "fix_reductions.py"
    target.write_text(src.read_text())
    env_has_black = subprocess.run([sys.executable, "-c", "import black"], capture_output=True).returncode == 0
    if env_has_black:
        pytest.skip("black is installed here")
    proc = libcst_tool(["-x", f"jaxfuse_lint.engine.libcst_commands.{COMMANDS['JF101'][0]}", str(target),
                        "--unsafe-fixes"], tmp_path)
    assert "Failed to codemod 1 files" in proc.stderr
    assert target.read_text() == src.read_text()
