"""Every codemod is also a libcst command: `python -m libcst.tool codemod` applies the same fixes.

libcst formats with black by default, which jaxfuse-lint does not need: pass `--no-format`
(or configure a formatter in `.libcst.codemod.yaml`). The dotted path `jaxfuse_lint.codemods.<module>.<Command>`
needs `-x` (import it as given); with `modules: [jaxfuse_lint.codemods]` in `.libcst.codemod.yaml` the short
form `<module>.<Command>` works and `python -m libcst.tool list` shows the commands.
"""
from __future__ import annotations

import importlib
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from jaxfuse_lint.codemods._helpers import RuleCodemodCommand
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import fix_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

COMMANDS = {
    "JF101": "jf101_unroll_reduction.UnrollSmallReductionCommand",
    "JF201": "jf201_numpy_to_jnp.NumpyToJnpCommand",
    "JF202": "jf202_rebuild_with_jnp.RebuildWithJnpCommand",
    "JF203": "jf203_recompute_in_loop.RecomputeInLoopCommand",
    "JF301": "jf301_hoist_jit.HoistJitCommand",
    "JF302": "jf302_hoist_jit_to_module.HoistJitToModuleCommand",
}


def libcst_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("code", sorted(COMMANDS))
def test_each_rule_has_a_command_that_runs_the_rule(code):
    module_name, cls_name = COMMANDS[code].split(".")
    module = importlib.import_module(f"jaxfuse_lint.codemods.{module_name}")
    command = getattr(module, cls_name)
    assert issubclass(command, RuleCodemodCommand) and command.CODE == module.CODE == code
    assert command.DESCRIPTION.startswith(code)


@pytest.mark.parametrize("code,case,unsafe", [
    ("JF101", "fix_reductions", False),
    ("JF203", "fix_recompute", True),
    ("JF301", "fix_hoist", False),
])
def test_libcst_tool_applies_the_same_fix_as_jaxfuse_lint(tmp_path, code, case, unsafe):
    src = FIXTURES / code / f"{case}.py"
    target = tmp_path / "module.py"
    target.write_text(src.read_text())
    args = ["-x", "--no-format", f"jaxfuse_lint.codemods.{COMMANDS[code]}", str(target)] + (["--unsafe-fixes"] if unsafe else [])
    proc = libcst_tool(args, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = fix_source(src.read_text(), str(src), replace(Settings(), select=(code,)), unsafe=unsafe).source
    assert target.read_text() == expected
    assert target.read_text() != src.read_text()


def test_libcst_tool_short_names_with_a_config_file(tmp_path):
    (tmp_path / ".libcst.codemod.yaml").write_text("modules:\n  - jaxfuse_lint.codemods\n")
    target = tmp_path / "module.py"
    src = FIXTURES / "JF201" / "fix_numpy.py"
    target.write_text(src.read_text())
    proc = libcst_tool(["--no-format", COMMANDS["JF201"], str(target)], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert target.read_text() == (FIXTURES / "JF201" / "fix_numpy.fixed.py").read_text()


def test_libcst_tool_without_no_format_needs_a_formatter(tmp_path):
    """Documented behaviour: with no formatter installed, libcst refuses to write (nothing changes)."""
    target = tmp_path / "module.py"
    src = FIXTURES / "JF101" / "dtypes.py"
    target.write_text(src.read_text())
    env_has_black = subprocess.run([sys.executable, "-c", "import black"], capture_output=True).returncode == 0
    if env_has_black:
        pytest.skip("black is installed here")
    proc = libcst_tool(["-x", f"jaxfuse_lint.codemods.{COMMANDS['JF101']}", str(target)], tmp_path)
    assert "Failed to codemod 1 files" in proc.stderr
    assert target.read_text() == src.read_text()
