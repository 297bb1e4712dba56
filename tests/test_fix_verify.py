"""`--fix --verify`: proved fixes stay, unproved ones are rolled back per function."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

from jaxfuse_lint.runtime.function_diff import changed_functions, restore_functions

ROOT = Path(__file__).resolve().parent.parent

ORIGINAL = textwrap.dedent('''\
    import jax
    import jax.numpy as jnp
    import numpy as np


    def kvec_mesh(n):
        return jnp.stack((jnp.arange(0, n), jnp.arange(0, n)), axis=-1)


    @jax.jit
    def f_sum_jax(x):
        kvm = kvec_mesh(len(x))
        return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)


    @jax.jit
    def f_numpy(x):
        return x + np.arange(x.size).reshape(x.shape) ** 2.3
''')


def test_changed_and_restored_functions():
    fixed = ORIGINAL.replace("x + np.arange", "x + jnp.arange")
    assert changed_functions(ORIGINAL, fixed) == ["f_numpy"]
    assert restore_functions(ORIGINAL, fixed, ["f_numpy"]) == ORIGINAL


def test_fix_verify_end_to_end(tmp_path):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.jaxfuse-lint.verify]
        "model:f_sum_jax" = ["f32[1024,2]"]
        "model:f_numpy" = ["f32[1024,2]"]
    '''))
    (tmp_path / "model.py").write_text(ORIGINAL)
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--fix", "--unsafe-fixes", "--verify", "model.py"],
                       capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert "imports and runs" in r.stderr
    assert "verified model.py::f_sum_jax" in r.stderr, r.stderr
    text = (tmp_path / "model.py").read_text()
    assert "jnp.sum" not in text


def test_fix_verify_runs_a_notebook_and_rolls_back_in_its_cell(tmp_path):
    import json

    # f_sum_jax's spec does not fit it (`kvm * x` needs two columns): its fix cannot be
    # proved and goes back into its cell; f_numpy's is proved and stays.
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent('''\
        [tool.jaxfuse-lint.verify]
        "analysis:f_sum_jax" = ["f32[16,3]"]
        "analysis:f_numpy" = ["f32[1024,2]"]
    '''))
    chunks = ORIGINAL.split("\n\n\n")  # imports, kvec_mesh, f_sum_jax, f_numpy: one cell each
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Fusion\n"]}]
    for i, chunk in enumerate(chunks):
        lines = (chunk.rstrip("\n") + ("\n!nvidia-smi" if i == 0 else "")).split("\n")
        cells.append({"cell_type": "code", "execution_count": i + 1, "metadata": {},
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": [f"out {i}\n"]}],
                      "source": [line + "\n" for line in lines[:-1]] + [lines[-1]]})
    data = {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                                         "display_name": "Python 3"}},
            "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "analysis.ipynb"
    path.write_text(json.dumps(data, indent=1) + "\n")
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--fix", "--unsafe-fixes", "--verify",
                        "analysis.ipynb"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert "verified analysis.ipynb::f_numpy" in r.stderr, r.stderr
    assert "analysis.ipynb::f_sum_jax: fix not proved (error: analysis.ipynb:cell 4:" in r.stderr, r.stderr
    assert "rolled back" in r.stderr
    after = json.loads(path.read_text())
    sources = ["".join(c["source"]) for c in after["cells"]]
    assert "jnp.sum(kvm * x, axis=1, keepdims=True)" in sources[3]  # as it was
    assert sources[3] == "".join(cells[3]["source"])
    assert "x + jnp.arange(x.size)" in sources[4]  # fixed
    assert "!nvidia-smi" in sources[1]
    assert [c.get("outputs") for c in after["cells"]] == [c.get("outputs") for c in cells]
    # What is reported is what the written notebook still has: the rolled-back JF101.
    assert "analysis.ipynb:cell 4:" in r.stdout and "JF101" in r.stdout, r.stdout
