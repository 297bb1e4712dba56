"""Names that are one name to Python however they are spelled (issue 42, item 2). Python reads
identifiers NFKC-normalised: the fullwidth `ｇ` is `g`, the ligature `ﬁ` is `fi`. The safe JF203
fix took `g` and a read of `ｇ` after the loop for two names, moved `g` into the loop body, and the
fixed module raised NameError. Each module here is fixed by the CLI, then imported and run with
jax: it must still run and compute what the original computes."""
from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine import check_source
from jaxfuse_lint.parse.identifiers import normalized

jnp = pytest.importorskip("jax.numpy")

# The module: `g` bound before a fori_loop whose body reads it, read again after the
# loop as `ｇ`.
FULLWIDTH = """\
import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def f(x):
    g = jnp.sin(jnp.arange(x.size).reshape(x.shape) ** 2.3)

    def step(i, c):
        return c + g

    r = lax.fori_loop(0, 5, step, x)
    return r + ｇ
"""
# `jnp` spelled fullwidth and bound to a float: a fix that adds `import jax.numpy as jnp` would
# rebind it (the fixed module's `ｊｎｐ` would be the module, its `jnp.eye` a float's attribute).
TAKEN = """\
import jax
import numpy as np

ｊｎｐ = 2.0


@jax.jit
def f(x):
    return x * ｊｎｐ + np.eye(64)
"""
# A ligature: `ﬁ` is `fi`, one character spelled, two read. Findings after it are located in
# the text as written.
LIGATURE = """\
import jax
import numpy as np


@jax.jit
def f(x):
    ﬁ = x * 2
    return ﬁ + np.eye(64)
"""

_count = itertools.count()


def run(path, x):
    """Import the module at PATH (under a name of its own) and call its `f`."""
    spec = importlib.util.spec_from_file_location(f"nfkc_module_{next(_count)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return np.asarray(module.f(x))


@pytest.mark.parametrize("source", [FULLWIDTH, TAKEN, LIGATURE], ids=["fullwidth", "taken", "ligature"])
def test_the_fixed_module_still_runs_and_computes_the_same(tmp_path, monkeypatch, source):
    original = tmp_path / "original.py"
    original.write_text(source, encoding="utf-8")
    fixed = tmp_path / "fixed.py"
    fixed.write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--fix", "fixed.py"])
    assert result.exit_code in (0, 1), result.output
    x = jnp.ones((64, 64), dtype=jnp.float32)
    np.testing.assert_allclose(run(fixed, x), run(original, x), rtol=1e-6)


def test_the_loop_fix_keeps_the_value_read_after_the_loop(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(FULLWIDTH, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(cli, ["check", "--no-cache", "--fix", "m.py"])
    text = (tmp_path / "m.py").read_text(encoding="utf-8")
    assert "    g = jnp.sin(" in text.split("def step")[0]  # still bound before the loop
    assert text.endswith("    return r + ｇ\n")  # a line the fix left keeps its spelling


def test_a_fix_never_binds_a_name_the_module_uses_under_another_spelling():
    result = check_source(TAKEN, "m.py", Settings())
    (d,) = [d for d in result.diagnostics if d.code == "JF201"]
    assert d.fix is None or all("import jax.numpy as jnp" not in e.content for e in d.fix.edits)


def test_findings_are_located_in_the_text_as_written():
    result = check_source(LIGATURE, "m.py", Settings())
    (d,) = [d for d in result.diagnostics if d.code == "JF201"]
    line = LIGATURE.splitlines()[d.location.row - 1]
    assert line[d.location.column - 1:].startswith("np.eye(64)")
    assert line[d.end_location.column - 2] == ")"


def test_only_identifiers_are_normalised():
    text = 'ｇ = "ｇ"  # ｇ\nprint(ｇ, f"{ｇ}", b"x")\n'
    names = normalized(text)
    assert names.text.startswith('g = "ｇ"  # ｇ\nprint(g, ')
    assert normalized("g = 'ｇ'\n") is None  # nothing but a string to change
    assert normalized("x = 1\n") is None and normalized("x = '½'  # µ\n") is None
    assert names.restore(names.text) == text
    assert names.restore(names.text + "y = 2\n") == text + "y = 2\n"
