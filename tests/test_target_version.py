"""The parser follows the project's Python: `target-version` (ruff's spelling, defaulting from
`requires-python`) decides the grammar. Valid code for that version is never JF000, even where
the running Python cannot parse it (libcst's parser reads the newer grammar); where no parser
here reads it, the run says the file was not checked instead of reporting a syntax error. A
notebook cell that does not parse is reported and left out alone."""
from __future__ import annotations

import json
import sys
from dataclasses import replace

import pytest

from jaxfuse_lint.core.config import ConfigError, Settings, load_settings, settings_from_table, target_from_requires_python
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from jaxfuse_lint.parse.grammar import libcst_newest

PEP701 = 'd = {"k": 1}\nlabel = f"{d["k"]}"\n'
PEP701_JAX = """\
import jax
import jax.numpy as jnp

d = {"k": 1}
label = f"{d["k"]}"


@jax.jit
def f(x):
    return x.reshape(jnp.array(x.shape).prod())
"""
OLD_PYTHON = sys.version_info < (3, 12)


@pytest.mark.parametrize("spec, expected", [
    (">=3.12", "py312"), (">=3.10,<3.14", "py310"), ("~=3.11", "py311"), ("==3.11.*", "py311"),
    (">= 3.12.1", "py312"), ("<3.13", None), (">=3.6", "py37"), ("not a specifier", None),
])
def test_target_version_from_requires_python(spec, expected):
    assert target_from_requires_python(spec) == expected


def test_requires_python_is_the_default_and_the_key_wins(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nrequires-python = ">=3.12"\n')
    assert load_settings(start=tmp_path).target_version == "py312"
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\nrequires-python = ">=3.12"\n\n'
                                             '[tool.jaxfuse-lint]\nselect = ["JF4"]\n')
    assert load_settings(start=tmp_path).target_version == "py312"
    (tmp_path / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.12"\n\n'
                                             '[tool.jaxfuse-lint]\ntarget-version = "py313"\n')
    assert load_settings(start=tmp_path).target_version == "py313"


@pytest.mark.parametrize("value", ["3.12", "py2", "py36", 312, "python312"])
def test_target_version_must_be_spelled_like_ruff(value):
    with pytest.raises(ConfigError, match="target-version"):
        settings_from_table({"target-version": value}, "pyproject.toml", ".")


def test_pep701_is_valid_in_a_312_project_whatever_python_runs():
    settings = replace(Settings(), target_version="py312")
    assert check_source(PEP701, "m.py", settings).diagnostics == []
    result = check_source(PEP701_JAX, "m.py", replace(settings, select=("JF405",)))
    assert [d.code for d in result.diagnostics] == ["JF405"] and result.errors == []
    # The fix is checked with the target's grammar (libcst), not the running Python's compiler.
    assert result.diagnostics[0].fix is not None
    outcome = fix_source(PEP701_JAX, "m.py", replace(settings, select=("JF405",)))
    assert outcome.changed and "math.prod" in outcome.source and 'f"{d["k"]}"' in outcome.source


@pytest.mark.skipif(not OLD_PYTHON, reason="this Python parses PEP 701 f-strings itself")
def test_pep701_is_a_syntax_error_where_the_target_python_cannot_read_it():
    settings = replace(Settings(), target_version="py311")
    [d] = check_source(PEP701, "m.py", settings).diagnostics
    assert d.code == "JF000"


def test_a_target_newer_than_every_parser_here_is_said_not_checked_never_jf000():
    newest = libcst_newest()
    settings = replace(Settings(), target_version=f"py3{max(newest[1], sys.version_info[1]) + 1}")
    text = "x = (1 2\n"  # invalid everywhere known, but the target's grammar is unknown here
    result = check_source(text, "m.py", settings)
    assert result.diagnostics == []
    assert len(result.errors) == 1 and "not checked" in result.errors[0] and "target-version" in result.errors[0]
    result = check_source("import jax\n" + text, "m.py", settings)
    assert result.diagnostics == [] and "not checked" in result.errors[0]
    # Code it can read is checked as usual.
    assert check_source("import jax\nx = 1\n", "m.py", settings).errors == []


def test_a_real_syntax_error_in_a_newer_target_is_reported_where_libcst_finds_it():
    settings = replace(Settings(), target_version="py312")
    text = 'import jax\nlabel = f"{d["k"]}"\nx = foo(a b)\n'
    [d] = check_source(text, "m.py", settings).diagnostics
    assert d.code == "JF000" and d.location.row == 3


@pytest.mark.skipif(not OLD_PYTHON, reason="CPython 3.12 places f-string errors in the line itself")
def test_an_error_inside_an_f_string_field_is_placed_in_its_line():
    text = "import jax\nyyyyyyyy = 'ab' + f'{a b}'\n"
    [d] = check_source(text, "m.py", Settings()).diagnostics
    assert (d.location.row, d.location.column) == (2, 22)
    [d] = check_source(text.replace("import jax\n", "import os\n"), "m.py", Settings()).diagnostics
    assert (d.location.row, d.location.column) == (2, 22)


def _notebook(*sources: str) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": s}
             for s in sources]
    cells.insert(1, {"cell_type": "markdown", "metadata": {}, "source": "# notes"})
    return json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}},
                       "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


JITTED_CELL = "@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"
SHAPE_CELL = "@jax.jit\ndef g(x):\n    return x.reshape(jnp.array(x.shape).prod())\n"


def test_a_cell_that_does_not_parse_is_reported_and_skipped_alone():
    nb = _notebook("import jax\nimport jax.numpy as jnp\n", "y = 2\nz = foo(a, b))\n", JITTED_CELL, "%time v = 1\nw = (1,\n")
    result = check_source(nb, "t.ipynb", replace(Settings(), select=("JF000", "JF402")))
    found = [(d.cell, d.location.row, d.location.column, d.code) for d in result.diagnostics]
    assert found == [(3, 2, 14, "JF000"), (4, 3, 8, "JF402"), (5, 2, 5, "JF000")], found
    assert "this cell" in result.diagnostics[0].message


def test_fixes_of_the_other_cells_are_written_and_the_broken_cell_is_left_as_it_was():
    broken = "%matplotlib inline\nz = foo(a, b))\n"
    nb = _notebook("import jax\nimport jax.numpy as jnp\n", broken, SHAPE_CELL)
    outcome = fix_source(nb, "t.ipynb", replace(Settings(), select=("JF000", "JF405")))
    cells = json.loads(outcome.source)["cells"]
    assert cells[2]["source"] == broken
    assert "math.prod" in cells[3]["source"]
    assert [(d.cell, d.code) for d in outcome.remaining] == [(3, "JF000")]


def test_a_notebook_without_jax_reports_each_broken_cell():
    nb = _notebook("x = 1\n", "y = (1,\n", "z = foo(a))\n", "w = 3\n")
    result = check_source(nb, "t.ipynb", Settings())
    assert [(d.cell, d.code) for d in result.diagnostics] == [(3, "JF000"), (4, "JF000")]
