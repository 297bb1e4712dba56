"""The `verify` command end to end: output formats, exit codes, one-line errors, where shapes come from."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.verify import verify_command

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "fixtures" / "proofs"
SUM = str(PROOFS / "sum_reduction.py")


def run(*args: str):
    return CliRunner().invoke(verify_command, list(args), catch_exceptions=False)


def test_importing_verify_and_its_command_does_not_import_jax():
    code = (
        "import sys\n"
        "import jaxfuse_lint.verify, jaxfuse_lint.cli.verify\n"
        "assert 'jax' not in sys.modules, 'jax imported'\n"
        "assert 'numpy' not in sys.modules, 'numpy imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_help_warns_that_verify_runs_user_code():
    result = run("--help")
    assert result.exit_code == 0
    assert "imports and runs the code under test" in result.output
    assert verify_command.name == "verify"


pytest.importorskip("jax")


def test_text_report_side_by_side():
    result = run(f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[8192,2]",
                 "--target", "cpu")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"before: {SUM}::f_sum_jax" in out and f"after:  {SUM}::f_sum_explicit" in out
    assert "args:   f32[8192,2]" in out
    assert "jax " in out and "backend cpu" in out and "XLA_FLAGS=" in out
    for row in ("kernels", "temporaries", "folded constants", "bytes accessed", "compile time"):
        assert f"\n  {row} " in out
    assert "numerics (seed 0): 1 output agree" in out
    assert out.strip().splitlines()[-1].startswith("verdict: proved — on CPU: ")


def test_json_report_records_versions_backend_and_flags():
    import jax

    result = run(
        f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[8192,2]",
        "--output-format", "json", "--target", "cpu",
    )
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["verdict"] == "proved"
    env = data["environment"]
    assert env["jax"] == jax.__version__ and env["backend"] == "cpu" and "xla_flags" in env
    keys = {m["key"]: m for m in data["metrics"]}
    assert keys["kernels"]["change"] == "better" and keys["kernels"]["deciding"] is True
    assert keys["compile_seconds"]["deciding"] is False
    kernels = data["before"]["measurement"]["kernels"]
    assert kernels["total"] == len(kernels["kernels"]) == keys["kernels"]["before"]
    assert data["numerics"]["agree"] is True


def test_regression_exits_1():
    result = run(f"{SUM}::f_sum_explicit", "--against", f"{SUM}::f_sum_jax", "--arg", "f32[1024,2]")
    assert result.exit_code == 1
    assert "verdict: regressed" in result.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["nope.py::f", "--arg", "f32[3]"], "nope.py: file not found"),
        ([f"{SUM}::nope", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[3,2]"], "no function `nope`"),
        # Fix mode: a misspelt FUNC is an error even where no fix would apply.
        ([f"{SUM}::f_sum_jaxx", "--arg", "f32[3,2]"], "no function `f_sum_jaxx` (functions defined there: "),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[3,"], "bad argument spec"),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "q8[3]"], "unknown dtype `q8`"),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit"], "no argument shapes for `f_sum_jax`"),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[3,3]"],
         "tracing the before version under jax.jit raised TypeError"),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[4,2]", "--static", "n"],
         "bad --static `n`"),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f64[4,2]"], "JAX_ENABLE_X64"),
        ([SUM, "--arg", "f32[3]"], "expected PATH::FUNC"),
        ([f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[4,2]", "--backend", "tpu"],
         "backend `tpu` is not available"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    # (where the module was imported before the error, the notice that it runs the user's code comes first)
    lines = [ln for ln in result.stderr.strip().splitlines() if "this runs your code" not in ln]
    assert len(lines) == 1 and lines[0].startswith("jaxfuse-lint verify: error: ")
    assert message in lines[0]


def test_user_code_raising_on_import_is_reported(tmp_path):
    path = tmp_path / "explodes.py"
    path.write_text("import jax.numpy as jnp\n\nDATA = 1 / 0\n\ndef f(x):\n    return x\n")
    result = run(f"{path}::f", "--against", f"{path}::f", "--arg", "f32[3]")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"jaxfuse-lint verify: this runs your code (importing {path} runs top-level code)\n"
        f"jaxfuse-lint verify: error: {path}:3: importing the before version raised ZeroDivisionError: division by zero"
    )


def test_json_error_report(tmp_path):
    result = run("missing.py::f", "--arg", "f32[3]", "--output-format", "json")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert data["verdict"] == "error" and "file not found" in data["error"]


def _project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(table))
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(textwrap.dedent('''
        import jax
        import jax.numpy as jnp

        def mesh(n):
            return jnp.stack((jnp.arange(n), jnp.arange(n)), axis=-1)

        def reduce_pairs(x):
            return x * 2 + jnp.sum(mesh(len(x)) * x, axis=1, keepdims=True)

        def explicit_pairs(x):
            return x * 2 + (mesh(len(x))[:, 0] * x[:, 0] + mesh(len(x))[:, 1] * x[:, 1])[:, None]

        def looped(x, n):
            return jax.lax.fori_loop(0, n, lambda i, v: v * 0.5 + 1, x)

        def looped_unrolled(x, n):
            return jax.lax.fori_loop(0, n, lambda i, v: v * 0.5 + 1, x, unroll=True)
    '''))
    return pkg / "ops.py"


def test_shapes_and_static_values_from_pyproject(tmp_path):
    ops = _project(tmp_path, '''
        [tool.jaxfuse-lint.verify]
        "pkg.ops:reduce_pairs" = ["f32[4096,2]"]
        "pkg.ops:looped" = { args = ["f32[4096]"], static = { n = 3 } }
    ''')
    result = run(f"{ops}::reduce_pairs", "--against", f"{ops}::explicit_pairs")
    assert result.exit_code == 0, result.output
    assert "args:   f32[4096,2]" in result.stdout
    assert "argument shapes from [tool.jaxfuse-lint.verify]" in result.stdout

    result = run(f"{ops}::looped", "--against", f"{ops}::looped_unrolled", "--output-format", "json")
    data = json.loads(result.stdout)
    assert data["args"] == ["f32[4096]"] and data["static"] == {"n": "3"}
    assert data["verdict"] == "proved", data["error"]
    assert data["before"]["measurement"]["kernels"]["loops"][0]["trip_count"] == 3

    # --arg and --static on the command line win over the table.
    result = run(f"{ops}::looped", "--against", f"{ops}::looped_unrolled", "--arg", "f32[16]",
                 "--static", "n=2", "--output-format", "json")
    data = json.loads(result.stdout)
    assert data["args"] == ["f32[16]"] and data["static"] == {"n": "2"}


def test_shapes_from_jaxtyping_annotations_with_dims(tmp_path):
    path = tmp_path / "typed.py"
    # jaxtyping need not be installed: the annotations are read from the source text.
    path.write_text(textwrap.dedent('''
        from __future__ import annotations
        from typing import TYPE_CHECKING
        import jax.numpy as jnp
        if TYPE_CHECKING:
            from jaxtyping import Array, Float

        def summed(x: Float[Array, "n 2"], w: Float[Array, "n"]):
            return x * 2 + jnp.sum(x * w[:, None], axis=1, keepdims=True)

        def explicit(x: Float[Array, "n 2"], w: Float[Array, "n"]):
            return x * 2 + (x[:, 0] * w + x[:, 1] * w)[:, None]
    '''))
    result = run(f"{path}::summed", "--against", f"{path}::explicit", "--dim", "n=2048")
    assert result.exit_code == 0, result.output
    assert "args:   f32[2048,2], f32[2048]" in result.stdout
    assert "argument shapes from jaxtyping annotations" in result.stdout
    missing = run(f"{path}::summed", "--against", f"{path}::explicit")
    assert missing.exit_code == 2 and "pass --dim n=SIZE" in missing.stderr


def test_graphs_are_written(tmp_path):
    out = tmp_path / "graphs"
    result = run(
        f"{PROOFS / 'kmesh_filter.py'}::f_filter_with_temp", "--against",
        f"{PROOFS / 'kmesh_filter.py'}::f_filter_with_recalc", "--arg", "f32[16,16,16]", "--graph", str(out),
        "--target", "cpu",
    )
    assert result.exit_code == 0, result.output
    before = (out / "f_filter_with_temp.before.dot").read_text()
    after = (out / "f_filter_with_recalc.after.dot").read_text()
    assert before.startswith('digraph "jit_f_filter_with_temp"')
    assert "subgraph cluster_" in before and "while body" in before and "×5" in before
    # The k-mesh is built once outside the loop and read by the body: an arrow into the cluster.
    assert before.count("[shape=box") == 8 and after.count("[shape=box") == 7
    assert f"graph: {out / 'f_filter_with_temp.before.dot'}" in result.stdout
    # Drawn by Graphviz when installed, else laid out in pure Python: a picture either way.
    svgs = sorted(p.name for p in out.glob("*.svg"))
    assert svgs == ["f_filter_with_recalc.after.svg", "f_filter_with_temp.before.svg"]
    svg = (out / "f_filter_with_temp.before.svg").read_text()
    assert svg.lstrip().startswith(("<svg", "<?xml")) and "while body" in svg


def test_call_mode_reports_compilations_and_jax_explanations():
    path = PROOFS / "inner_jit.py"
    result = run(f"{path}::g_inner_jitted_lambda", "--against", f"{path}::g_hoisted_jit",
                 "--arg", "f32[8]", "--static", "n=4", "--call", "--target", "cpu")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "compilations per call" in out
    assert "before: compiled on the second call: jit(<lambda>) ×4" in out
    assert "jax_explain_cache_misses: TRACING CACHE MISS" in out
    assert "verdict: proved — on CPU: 4 → 1 compilations per call" in out


def test_fix_mode_without_applicable_fixes_is_unchanged(tmp_path):
    path = tmp_path / "clean.py"
    path.write_text("import jax.numpy as jnp\n\ndef f(x):\n    return jnp.sin(x)\n")
    result = run(f"{path}::f", "--arg", "f32[8]")
    assert result.exit_code == 0, result.output
    assert f"no fix applies to {path}" in result.stdout
    assert "verdict: unchanged" in result.stdout
