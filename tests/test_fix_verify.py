"""`--fix --verify`: proved fixes stay, unproved ones are rolled back per function."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

from jaxfuse_lint.fix_verify import changed_functions, restore_functions

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
