"""`verify` and `explain` on a notebook: its code cells run as one module, rows named by cell."""
from __future__ import annotations

import json
import linecache
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.loader import cell_row, read_source, source_row


def code(*lines: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": [line + "\n" for line in lines]}


def write_notebook(path: Path, cells: list[dict], language: str = "python") -> Path:
    data = {"cells": cells, "metadata": {"kernelspec": {"name": "k", "language": language, "display_name": "K"}},
            "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


STEP_CELLS = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Reductions over two elements\n"]},
    code("import jax", "import jax.numpy as jnp", "!pip list | head -1"),
    code("@jax.jit", "def step(x: jax.Array):", "    y = jnp.sum(x[:, :2], axis=1)", "    return x * y[:, None]"),
    code("%timeit step(jnp.ones((4, 8)))"),
]
# The same notebook with a form whose fix the default calibration tables offer: the stacked columns,
# broadcast back against their sum (JF101's own example).
STACK_ROWS = ["    v = jnp.stack([x[:, 0] * 2.0, x[:, 1] + 1.0], axis=-1)",
              "    return v * jnp.sum(v * v, axis=-1, keepdims=True)"]
FIXABLE_CELLS = [*STEP_CELLS[:2], code("@jax.jit", "def step(x: jax.Array):", *STACK_ROWS), STEP_CELLS[3]]


def test_a_notebook_reads_as_the_module_its_code_cells_make(tmp_path):
    path = write_notebook(tmp_path / "nb.ipynb", STEP_CELLS)
    module = read_source(str(path))
    assert "def step(x: jax.Array):" in module
    assert "!pip" not in module and "%timeit" not in module  # masked, so the module compiles
    compile(module, str(path), "exec")
    row = module.splitlines().index("    y = jnp.sum(x[:, :2], axis=1)") + 1
    assert cell_row(str(path), row) == (3, 3)
    assert source_row(str(path), row) == "cell 3:3"
    # JAX and tracebacks read source lines through linecache: the cells' code, not the JSON.
    assert linecache.getline(str(path), row).strip() == "y = jnp.sum(x[:, :2], axis=1)"
    assert source_row(str(tmp_path / "other.py"), row) == str(row)


@pytest.mark.parametrize("text, message", [
    ('{"cells": 3, "nbformat": 4}', "not a Jupyter notebook"),
    ("{not json", "not valid JSON"),
])
def test_a_broken_notebook_is_one_line(tmp_path, text, message):
    path = tmp_path / "bad.ipynb"
    path.write_text(text)
    with pytest.raises(VerifyError, match=message) as info:
        read_source(str(path))
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_a_notebook_without_python_code_is_refused(tmp_path):
    julia = write_notebook(tmp_path / "julia.ipynb", [code("x = 1")], language="julia")
    with pytest.raises(VerifyError, match="not a Python notebook"):
        read_source(str(julia))
    prose = write_notebook(tmp_path / "prose.ipynb", [{"cell_type": "markdown", "metadata": {}, "source": ["hi"]}])
    with pytest.raises(VerifyError, match="no Python code cells"):
        read_source(str(prose))


jax = pytest.importorskip("jax")


def test_verify_proves_a_fix_in_a_notebook_and_names_its_cell(tmp_path):
    from jaxfuse_lint.cli.verify import verify_command

    path = write_notebook(tmp_path / "nb.ipynb", FIXABLE_CELLS)
    result = CliRunner().invoke(verify_command, [f"{path}::step", "--arg", "f32[256,64]", "--unsafe-fixes",
                                                 "--output-format", "json"], catch_exceptions=False)
    data = json.loads(result.stdout)
    assert data["verdict"] == "proved", data
    assert [(f["code"], f["cell"], f["row"]) for f in data["fixes"]] == [("JF101", 3, 4)]
    kernels = [data[side]["measurement"]["kernels"]["total"] for side in ("before", "after")]
    assert kernels == [2, 1]
    assert any("3 Python code cells" in n and "2 IPython lines masked" in n for n in data["notes"])
    text = CliRunner().invoke(verify_command, [f"{path}::step", "--arg", "f32[256,64]", "--unsafe-fixes"],
                              catch_exceptions=False).output
    assert "cell 3:4:16 JF101" in text
    # The notebook file itself is left as it was.
    assert json.loads(path.read_text())["cells"][2]["source"][3] == STACK_ROWS[1] + "\n"


def test_an_error_while_tracing_names_the_cell_and_row(tmp_path):
    from jaxfuse_lint.cli.verify import verify_command

    path = write_notebook(tmp_path / "nb.ipynb", [
        code("import jax", "import jax.numpy as jnp"),
        # A fix applies (the stacked columns broadcast back); the matmul then fails while tracing.
        code("@jax.jit", "def step(x):", STACK_ROWS[0], "    return x @ (v * jnp.sum(v * v, axis=-1, keepdims=True))"),
    ])
    result = CliRunner().invoke(verify_command, [f"{path}::step", "--arg", "f32[8,5]", "--unsafe-fixes"],
                                catch_exceptions=False)
    assert f"{path}:cell 2:4: tracing the before version" in result.output, result.output


def test_explain_numbers_a_notebook_function_by_its_cell(tmp_path):
    from jaxfuse_lint.cli.explain import explain_command

    path = write_notebook(tmp_path / "nb.ipynb", STEP_CELLS)
    text = CliRunner().invoke(explain_command, [f"{path}::step", "--arg", "f32[256,64]", "--target", "cpu"],
                              catch_exceptions=False).stdout
    assert text.splitlines()[0].endswith("on CPU, cell 3")
    rows = {line.split()[0]: line for line in text.splitlines() if line.strip().startswith(("1 ", "2 ", "3 ", "4 "))}
    assert "jnp.sum(x[:, :2], axis=1)" in rows["3"] and "K1" in rows["3"]
    assert "lines: L3" in text
    data = json.loads(CliRunner().invoke(explain_command, [f"{path}::step", "--arg", "f32[256,64]",
                                                           "--output-format", "json"]).stdout)
    data = data[0] if isinstance(data, list) else data
    assert data["cell"] == 3
    assert [(line["cell_line"], line["source"].strip()) for line in data["lines"]] == [
        (3, "y = jnp.sum(x[:, :2], axis=1)"), (4, "return x * y[:, None]")]
