"""Axis sizes from asserts, unpacking, literal arrays, random draws, meshgrid stacks and trailing
slices: in the module, and through a helper's return shape in another module."""
from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.run.runner import check_files
from tests.fixture_harness import rule_settings


def _shape_of(src: str, fn_name: str, var: str):
    m = SemanticModel(cst.parse_module(textwrap.dedent(src)))
    fn = next(f for f in m.index.functions if f.name == fn_name)
    read = next(r.name for r in fn.reads if r.name.value == var)
    return m.shape(read, fn)


@pytest.mark.parametrize("body, var, axis, size", [
    ("w, x, y, z = q\nr = q", "q", 0, 4),
    ("a, b = q.T\nr = q", "q", -1, 2),
    ("r = jax.random.normal(key, (3,))", "r", 0, 3),
    ("r = jax.random.bernoulli(key, 0.5, shape=(7, 2))", "r", -1, 2),
    ("r = jnp.stack(jnp.meshgrid(q, q), axis=-1)", "r", -1, 2),
    ("g = jnp.meshgrid(q, q, q)\nr = jnp.array(g)", "r", 0, 3),
    ("assert q.shape[-1] == 3\nr = q[:, None, :] - q[None, :, :]", "r", -1, 3),
])
def test_size_sources(body, var, axis, size):
    src = "import jax\nimport jax.numpy as jnp\ndef f(q, key):\n" + textwrap.indent(body, "    ") + \
        f"\n    return {var}\n"
    shape = _shape_of(src, "f", var)
    assert shape is not None and shape.size(axis) == size


@pytest.mark.parametrize("body, var", [
    ("if q.shape[0] == 4:\n    w, x, y, z = q\nr = q", "q"),  # unpacked on one path only
    ("first, *rest = q\nr = q", "q"),
    ("r = jax.random.normal(key, q.shape)", "r"),
    ("r = jnp.stack(jnp.meshgrid(q, q, sparse=True), axis=-1)", "r"),
    ("r = q[:, None, :2] - q[None, :, :2]", "r"),
])
def test_unknown_sizes_stay_unknown(body, var):
    src = "import jax\nimport jax.numpy as jnp\ndef f(q, key):\n" + textwrap.indent(body, "    ") + \
        f"\n    return {var}\n"
    shape = _shape_of(src, "f", var)
    assert shape is None or shape.size(-1) is None and shape.size(0) is None


HELPERS = '''
import jax
import jax.numpy as jnp


def unit_cell():
    return jnp.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


def plane_grid(a, b):
    return jnp.stack(jnp.meshgrid(a, b), axis=-1)


def draws(key, n):
    return jax.random.normal(key, (n, 3))


def pair_diff(x):
    assert x.shape[-1] == 3
    return x[:, None, :] - x[None, :, :]


def unknown(x):
    return x[:, None, :] - x[None, :, :]
'''

STEP = '''
import jax
import jax.numpy as jnp

from geo.helpers import draws, pair_diff, plane_grid, unit_cell, unknown


@jax.jit
def step(x, a, b, key):
    c = unit_cell()
    g = plane_grid(a, b)
    r = draws(key, 10)
    d = pair_diff(x)
    u = unknown(x)
    out = jnp.sum(c, axis=-1)
    out = out + jnp.sum(g, axis=-1)
    out = out + jnp.sum(r, axis=-1)
    out = out + jnp.sum(d, axis=-1)
    return out + jnp.sum(u, axis=-1)
'''


def test_helper_return_shapes_across_modules(tmp_path: Path):
    pkg = tmp_path / "geo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "step.py").write_text(STEP)
    # The sizes are the subject, not the calibration: JF101's raw pattern, whatever its table says.
    run = check_files(sorted(pkg.glob("*.py")), rule_settings("JF101"), jobs=1)
    rows = sorted(d.location.row for d in run.diagnostics if d.code == "JF101")
    assert rows == [15, 16, 17, 18]  # not the unknown helper's (row 19)
