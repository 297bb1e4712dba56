"""`jaxfuse-lint explain`: the notebook's examples accounted for line by line, as a user runs it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.explain import explain_command

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "fixtures" / "proofs"
SUM = PROOFS / "sum_reduction.py"
KMESH = PROOFS / "kmesh_filter.py"


def run(*args: str):
    return CliRunner().invoke(explain_command, list(args), catch_exceptions=False)


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.fixture(scope="module")
def sum_json() -> dict:
    result = run(f"{SUM}::f_sum_jax", "--arg", "f32[131072,2]", "--output-format", "json", "--target", "cpu")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_sum_temporary_is_attributed_to_the_jnp_sum_line(sum_json):
    rows = {row["line"]: row for row in sum_json["lines"]}
    sum_line = line_of(SUM, "jnp.sum(kvm * x, axis=1, keepdims=True)")
    assert "jnp.sum" in rows[sum_line]["source"]
    assert rows[sum_line]["temp_bytes"] == 1 << 20  # the notebook's 1 MiB
    # Both kernels run operations of the sum line; the k-mesh kernel is shared with `kvm = kvec_mesh(...)`.
    assert len(rows[sum_line]["kernels"]) == 2
    kvm_line = line_of(SUM, "kvm = kvec_mesh(len(x))")
    shared = [k for k in rows[sum_line]["kernels"] if kvm_line in rows[sum_line]["shared_with"][k]]
    assert len(shared) == 1 and rows[kvm_line]["kernels"] == shared
    assert sum_json["attribution"]["temp_bytes"] == 1 << 20
    assert sum_json["summary"].startswith("2 kernels (2 launches), 1.0 MiB temporaries")


def test_json_round_trips(sum_json):
    from jaxfuse_lint.runtime.explain import Explanation

    again = Explanation.from_json(json.loads(json.dumps(sum_json)))
    assert again.to_json() == sum_json


def test_kmesh_temporary_is_attributed_to_the_k2_line():
    result = run(f"{KMESH}::f_filter_with_temp", "--arg", "f32[32,32,32]", "--output-format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {row["line"]: row for row in data["lines"]}
    k2 = rows[line_of(KMESH, "k2 = get_kmesh(rho, norm2=True)")]
    assert k2["temp_bytes"] >= 32 * 32 * 17 * 4  # the k-mesh (XLA may keep exp(-k2/2) as complex)
    (writer,) = k2["temp_buffers"]
    kernel = next(k for k in data["attribution"]["kernels"] if data["kernel_ids"][k["name"]] == writer)
    assert kernel["loop_depth"] == 0  # built once, before the loop, and kept alive through it
    # The helper's lines are accounted for too, under their own file and line.
    helpers = {a["function"] for a in data["attribution"]["lines"]}
    assert {"get_kmesh", "myfftfreq"} <= helpers


def test_text_output_is_a_line_profile():
    result = run(f"{SUM}::f_sum_jax", "--arg", "f32[1024,2]", "--target", "cpu")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.splitlines()[0] == f"{SUM}::f_sum_jax(f32[1024,2]) on CPU"
    assert "Line  Kernels" in out and "Source" in out
    sum_row = next(line for line in out.splitlines() if "jnp.sum(kvm * x" in line and "K1" in line)
    total = out.splitlines()[1].split(", ")[1].removesuffix(" temporaries")
    assert total != "0 B" and f"  {total}  " in sum_row  # the program's whole temporary is this line's
    assert "Lines it calls into:" in out and "kvec_mesh" in out
    assert "Kernels:" in out


def test_graph_writes_dot_and_svg_with_line_labels(tmp_path):
    out = tmp_path / "graphs"
    result = run(f"{SUM}::f_sum_jax", "--arg", "f32[1024,2]", "--graph", str(out))
    assert result.exit_code == 0, result.output
    dot = (out / "f_sum_jax.dot").read_text()
    svg = (out / "f_sum_jax.svg").read_text()
    assert dot.startswith('digraph "jit_f_sum_jax"')
    assert "L18 return x * 2 + jnp.sum(kvm * x" in dot and "L17 kvm = kvec_mesh(len(x))" in dot
    assert "<svg" in svg and "L18 return x * 2 + jnp.sum(kvm * x" in svg
    assert f"graph: {out / 'f_sum_jax.svg'}" in result.stdout


def test_html_output_has_the_table_and_the_picture():
    result = run(f"{SUM}::f_sum_jax", "--arg", "f32[1024,2]", "--output-format", "html")
    assert result.exit_code == 0, result.output
    page = result.stdout
    assert page.startswith("<!DOCTYPE html>") and "<table" in page and "<svg" in page
    assert "jnp.sum(kvm * x, axis=1, keepdims=True)" in page
    assert "Lines it calls into:" in page and "kvec_mesh" in page


def test_profile_accounts_are_read_without_compiling(tmp_path, sum_json):
    # A profile holds Attribution.to_json() per traced entry point (what `record` stores).
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"functions": [
        {"qualname": "f_sum_jax", "args": ["f32[131072,2]"], "attribution": sum_json["attribution"]},
    ]}))
    result = run("--profile", str(profile), str(SUM), "--output-format", "json")
    assert result.exit_code == 0, result.output
    (data,) = json.loads(result.stdout)
    rows = {row["line"]: row for row in data["lines"]}
    assert rows[line_of(SUM, "jnp.sum(kvm * x")]["temp_bytes"] == 1 << 20
    assert data["function"] == "f_sum_jax" and data["args"] == ["f32[131072,2]"]
    text = run("--profile", str(profile), f"{SUM}::f_sum_jax")
    assert text.exit_code == 0 and "jnp.sum(kvm * x" in text.stdout
    missing = run("--profile", str(profile), str(KMESH))
    assert missing.exit_code == 2 and "no per-line account" in missing.output


def test_profile_in_the_record_layout(tmp_path, sum_json):
    # `jaxfuse-lint record` keeps each compilation's account under its entry, by file digest.
    import hashlib

    digest = hashlib.sha256(SUM.read_text().encode()).hexdigest()
    entry = {"file": str(SUM), "sha256": digest, "qualname": "f_sum_jax", "line": 15,
             "signatures": [{"args": [{"name": "x", "shape": [131072, 2], "dtype": "float32"}], "static": {},
                             "where": "tests/test_x.py::test_sum"}],
             "compilations": [{"signature": 0, "cause": "first compilation", "where": "tests/test_x.py::test_sum",
                               "costs": sum_json["attribution"]}]}
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"format": "jaxfuse-lint-profile", "version": 1, "entries": [entry]}))
    result = run("--profile", str(profile), str(SUM))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"{SUM}::f_sum_jax(f32[131072,2]) on CPU"
    assert f"note: from {profile} (tests/test_x.py::test_sum)" in result.stdout
    entry["sha256"] = "0" * 64  # the file changed since the run
    profile.write_text(json.dumps({"entries": [entry]}))
    result = run("--profile", str(profile), str(SUM))
    assert result.exit_code == 2 and "changed since it was recorded" in result.output


def test_default_profile_is_used_without_shapes(tmp_path, sum_json, monkeypatch):
    work = tmp_path / "proj"
    (work / ".jaxfuse_lint").mkdir(parents=True)
    source = work / "sum_reduction.py"
    source.write_text(SUM.read_text())
    attribution = json.loads(json.dumps(sum_json["attribution"]).replace(str(SUM), str(source)))
    (work / ".jaxfuse_lint" / "profile.json").write_text(json.dumps({"entries": [attribution]}))
    monkeypatch.chdir(work)
    for target in ("sum_reduction.py", "sum_reduction.py::f_sum_jax"):
        result = run(target)
        assert result.exit_code == 0, result.output
        assert "jnp.sum(kvm * x" in result.stdout and "1.0 MiB" in result.stdout
        assert "note: from .jaxfuse_lint/profile.json" in result.stdout
    (work / ".jaxfuse_lint" / "profile.json").unlink()
    result = run("sum_reduction.py")
    assert result.exit_code == 2 and "explain needs PATH::FUNC" in result.output


def test_errors_are_one_line():
    result = run("nope.py::f", "--arg", "f32[2]")
    assert result.exit_code == 2
    assert result.output.strip() == "jaxfuse-lint explain: error: nope.py: file not found"
    result = run(f"{SUM}::missing", "--arg", "f32[2]")
    assert result.exit_code == 2 and "no function `missing`" in result.output


def test_cli_subprocess_and_help_warns_it_runs_code():
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "explain", "--help"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "imports and runs the code under test" in proc.stdout
    code = ("import sys\nimport jaxfuse_lint, jaxfuse_lint.cli.explain, jaxfuse_lint.verify.attribution\n"
            "assert 'jax' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


CAPTURED = '''import jax
import numpy as np

noise = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)


@jax.jit
def f(x):
    y = x * 2.0
    return y + noise
'''


def test_a_folded_constant_is_on_the_users_line(tmp_path):
    """jax lowers a captured array with the stack of the `.lower()` call (click's core.py:911 outermost):
    explain names the user's line that reads it (issue 41, item 8)."""
    from jaxfuse_lint.verify.backend import select

    if not select("gpu").deviceless:
        pytest.skip("no XLA:GPU compiler here (jax's CUDA plugin)")
    path = tmp_path / "ex.py"
    path.write_text(CAPTURED)
    result = run(f"{path}::f", "--arg", "f32[512,512]")
    assert result.exit_code == 0, result.output
    constants = result.stdout.split("Folded constants:")[1].strip().splitlines()[0]
    assert constants.endswith("f32[512,512] 1.0 MiB  lines: L10"), result.stdout
    assert "core.py" not in result.stdout
    data = json.loads(run(f"{path}::f", "--arg", "f32[512,512]", "--output-format", "json").stdout)
    rows = {row["line"]: row for row in data["lines"]}
    assert rows[10]["constant_bytes"] == 512 * 512 * 4
    assert {a["file"] for a in data["attribution"]["lines"]} == {str(path)}
