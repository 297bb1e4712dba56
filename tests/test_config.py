"""[tool.jaxfuse-lint]: found upward, validated strictly, applied."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxfuse_lint.core.config import ConfigError, Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent

SRC = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x, y, z):
    v = jnp.stack([x, y, z], axis=-1)
    return v * jnp.sum(v * v, axis=-1, keepdims=True)
"""  # JF101 by default: the calibration tables show the harm of this form (stacked, broadcast back)


def write(tmp_path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n" + table)
    sub = tmp_path / "src" / "pkg"
    sub.mkdir(parents=True)
    (sub / "m.py").write_text(SRC)
    return sub / "m.py"


def codes(path: Path, cwd: Path, *extra):
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--output-format", "json", *extra, str(path)],
                       capture_output=True, text=True, cwd=cwd, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode in (0, 1), r.stderr
    return [d["code"] for d in json.loads(r.stdout)]


def test_found_upward_and_small_axis_max_applies(tmp_path):
    m = write(tmp_path, "small-axis-max = 3\n")
    assert codes(m, m.parent) == ["JF101"]
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nsmall-axis-max = 2\n")
    assert codes(m, m.parent) == []  # the default (4) would report the axis of 3


def test_a_raised_small_axis_max_applies(tmp_path):
    """An axis above the default limit is flagged once the tree raises it; no table calibrates a size
    of 6, so the finding is in the preview tier."""
    m = write(tmp_path, "small-axis-max = 6\npreview = true\n")
    m.write_text(SRC.replace("[x, y, z]", "[x, y, z, x, y, z]"))
    assert codes(m, m.parent) == ["JF101"]
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nsmall-axis-max = 5\npreview = true\n")
    assert codes(m, m.parent) == []


def test_per_file_ignores(tmp_path):
    m = write(tmp_path, 'small-axis-max = 8\n[tool.jaxfuse-lint.per-file-ignores]\n"src/pkg/*.py" = ["JF1"]\n')
    assert codes(m, tmp_path) == []


@pytest.mark.parametrize("table,needle", [
    ("selct = ['JF1']\n", "unknown key `selct` in [tool.jaxfuse-lint]; did you mean `select`?"),
    ("select = ['JF777']\n", "unknown rule selector"),
    ("small-axis-max = 0\n", "positive integer"),
    ("jax-modules = 'jax'\n", "list of strings"),
    ("small-axis-max = \n", "invalid TOML: Invalid value (at line 2, column 18)"),
    ("select = [\n", "invalid TOML: Invalid value (at the end of the file, line 3, column 1)"),
    # A linted tree cannot raise the file size limit past the ceiling (issue 37, item 9: a 12 MB
    # file then took a worker down).
    ("max-file-size = 12000000\n", "`max-file-size` must be at most 2,097,152 bytes"),
])
def test_bad_config_is_exit_2_with_one_line(tmp_path, table, needle):
    m = write(tmp_path, table)
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", str(m)], capture_output=True, text=True,
                       cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert r.returncode == 2
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_jax_modules_for_a_vendored_copy(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\njax-modules = ['jax', 'myjax']\nsmall-axis-max = 6\n")
    (tmp_path / "m.py").write_text(SRC.replace("import jax\nimport jax.numpy as jnp", "import myjax as jax\nimport myjax.numpy as jnp"))
    assert codes(tmp_path / "m.py", tmp_path) == ["JF101"]
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nsmall-axis-max = 6\n")
    assert codes(tmp_path / "m.py", tmp_path) == []


def test_explicit_config_and_defaults(tmp_path):
    cfg = tmp_path / "other.toml"
    cfg.write_text("ignore = ['JF101']\n")
    s = load_settings(cfg)
    assert not s.is_enabled("JF101") and s.is_enabled("JF203")
    assert Settings().is_enabled("JF101")
    with pytest.raises(ConfigError):
        load_settings(tmp_path / "missing.toml")


def test_most_specific_selector_wins():
    s = Settings(select=("JF",), ignore=("JF2",), extend_select=("JF203",))
    assert s.is_enabled("JF203") and not s.is_enabled("JF201") and s.is_enabled("JF101")


# -- test code: performance rules off by default, correctness rules on ------------------------------
TEST_SRC = SRC + "\n\n@jax.jit\ndef g(x):\n    print(x)\n    return x\n"  # JF101 (performance), JF401 (correctness)


@pytest.mark.parametrize("relative", ["tests/test_m.py", "tests/helpers.py", "pkg/tests/unit/m.py", "test/helpers.py",
                                      "src/pkg/test_m.py", "src/pkg/m_test.py", "conftest.py"])
def test_performance_findings_are_off_in_test_files_by_default(tmp_path, relative):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nsmall-axis-max = 6\n")
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEST_SRC)
    assert codes(path, tmp_path) == ["JF401"]
    # An explicit selection does not override the table (ruff: per-file-ignores win) ...
    assert codes(path, tmp_path, "--select", "JF101,JF401") == ["JF401"]
    # ... replacing the table does.
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nsmall-axis-max = 6\n"
                                             "[tool.jaxfuse-lint.per-file-ignores]\n")
    assert codes(path, tmp_path) == ["JF101", "JF401"]


@pytest.mark.parametrize("relative", ["src/pkg/m.py", "fixtures/JF101/cases.py", "testing_utils.py",
                                      "contest.py", "src/latest.py", "attests/m.py", "src/testing/m.py"])
def test_other_files_keep_every_rule(tmp_path, relative):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nsmall-axis-max = 6\n")
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEST_SRC)
    assert codes(path, tmp_path) == ["JF101", "JF401"]


def test_default_test_ignores_are_shown_and_extended_not_replaced_by_extend(tmp_path):
    from jaxfuse_lint.core.config import DEFAULT_PER_FILE_IGNORES

    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint.extend-per-file-ignores]\n"scripts/*" = ["JF3"]\n')
    s = load_settings(tmp_path / "pyproject.toml")
    assert s.per_file_ignores == DEFAULT_PER_FILE_IGNORES + (("scripts/*", ("JF3",)),)
    assert Settings().per_file_ignores == DEFAULT_PER_FILE_IGNORES
    assert all(codes == ("JF1", "JF2", "JF3", "JF5") for _, codes in DEFAULT_PER_FILE_IGNORES)
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--show-settings", "."], capture_output=True,
                       text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    shown = next(line for line in r.stdout.splitlines() if line.startswith("per-file-ignores = "))
    assert '"**/tests/**" = ["JF1", "JF2", "JF3", "JF5"]' in shown and '"scripts/*" = ["JF3"]' in shown


def test_the_file_size_limit_by_default_and_at_its_ceiling(tmp_path):
    """1 MiB by default (a file costs ~0.6 KB of memory per byte to check, ~1.2 KB to fix, and
    about 16 s per MiB of CPU: benchmarks/bench_fix_scaling.py); a tree may lower it, or raise
    it up to the ceiling of 2 MiB."""
    from jaxfuse_lint.core.config import MAX_FILE_SIZE_CEILING

    assert Settings().max_file_size == 1 << 20
    assert MAX_FILE_SIZE_CEILING == 2 << 20
    write(tmp_path, f"max-file-size = {MAX_FILE_SIZE_CEILING}\n")
    assert load_settings(None, start=str(tmp_path)).max_file_size == MAX_FILE_SIZE_CEILING
