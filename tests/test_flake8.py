"""The flake8 plugin, run through real flake8: same diagnostics, same 1-based columns."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ACCEPTANCE = ROOT.parent / "shared" / "acceptance" / "a01_fusion_notebook.py"


@pytest.mark.skipif(shutil.which("flake8") is None and not Path(sys.executable).with_name("flake8").exists(),
                    reason="flake8 not installed")
def test_flake8_reports_same_positions_as_cli(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x, y, z):\n"
        "    v = jnp.stack([x, y, z], axis=-1)\n    return v * jnp.sum(v * v, axis=-1, keepdims=True)  # a comment\n"
        "\n\n@jax.jit\ndef g(x, y, z):\n    v = jnp.stack([x, y, z], axis=-1)\n"
        "    return v * jnp.sum(v * v, axis=-1, keepdims=True)  # noqa: JF101\n"
    )
    flake8 = Path(sys.executable).with_name("flake8")
    r = subprocess.run([str(flake8), "--select", "JF", str(src)], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    got = [line.split(": ", 1)[0].rsplit(":", 2)[1:] + [line.split(": ", 1)[1].split()[0]] for line in r.stdout.splitlines()]
    cli = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--output-format", "json", str(src)],
                         capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})
    want = [[str(d["location"]["row"]), str(d["location"]["column"]), d["code"]] for d in json.loads(cli.stdout)]
    assert got == want == [["8", "16", "JF101"]]
