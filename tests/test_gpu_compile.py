"""XLA:GPU without a GPU: verify, explain and --fix --verify compile for the configured GPU model.

With jax's CUDA plugin installed (the `gpu` extra, `pip install -e '.[gpu]'`; no NVIDIA runtime, no
device), XLA:GPU compiles for a compile-only device built from one of XLA's target configs
(jaxfuse_lint/gpu_targets). The figures asserted here are the GPU compiler's own, measured
with jax/jaxlib 0.10.2 and the H100 config; tests that need the plugin are skipped without it.
Without the plugin, XLA:CPU stands in and never rolls back a fix made for the GPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

jax = pytest.importorskip("jax")

from jaxfuse_lint.verify import backend  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "fixtures" / "proofs"
SUM = PROOFS / "sum_reduction.py"
CCCL = PROOFS / "reduction_1m.py"
LOOP = PROOFS / "loop_input.py"

needs_xla_gpu = pytest.mark.skipif(
    not backend._cuda_plugin_installed(),
    reason="needs jax's CUDA plugin to compile with XLA:GPU without a GPU: python3 -m pip install -e '.[gpu]'",
)
# Exact figures: XLA:GPU of jaxlib 0.10.2 for the shipped H100 config, no XLA_FLAGS.
MEASURED = jax.__version__ == "0.10.2" and not os.environ.get("XLA_FLAGS")
exact = pytest.mark.skipif(not MEASURED, reason="figures measured with jax 0.10.2's XLA:GPU (H100 config)")


def verify(*args: str) -> dict:
    from jaxfuse_lint.cli.verify import verify_command

    result = CliRunner().invoke(verify_command, [*args, "--output-format", "json"], catch_exceptions=False)
    return json.loads(result.stdout)


def metric(data: dict, key: str) -> tuple:
    m = next(m for m in data["metrics"] if m["key"] == key)
    return m["before"], m["after"]


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@needs_xla_gpu
def test_the_cccl921_pair_is_proved_by_xla_gpu_without_a_gpu():
    data = verify(f"{CCCL}::sum_last", "--against", f"{CCCL}::explicit_terms", "--arg", "f32[1000000,2]",
                  "--target", "gpu", "--gpu", "h100")
    assert data["verdict"] == "proved", data
    env = data["environment"]
    assert env["backend"] == "gpu" and env["deviceless"] is True and env["gpu_model"] == "h100"
    assert env["device"] == "NVIDIA H100 80GB HBM3"
    assert metric(data, "kernels") == (2, 1)  # XLA:CPU: 1 -> 1, unchanged
    assert data["summary"] == "on GPU (H100, deviceless): 2 → 1 kernels"
    assert any("without a GPU (deviceless)" in note for note in data["notes"])
    assert data["numerics"]["agree"]  # compared by running both on the CPU


@needs_xla_gpu
@exact
def test_the_loop_input_pair_proves_its_temporary_drop_on_the_gpu():
    data = verify(f"{LOOP}::damp_captured", "--against", f"{LOOP}::damp_recomputed", "--arg", "f32[64,64,64]",
                  "--target", "gpu")
    assert data["verdict"] == "proved"
    before, after = metric(data, "temp_bytes")
    assert before >= 1 << 20 and after < 1024  # XLA:CPU hoists the recomputation back out: 1 MiB either way
    assert metric(data, "kernels") == (6, 5)


@needs_xla_gpu
def test_text_report_names_the_gpu_model_and_deviceless_compilation():
    from jaxfuse_lint.cli.verify import verify_command

    out = CliRunner().invoke(verify_command, [f"{CCCL}::sum_last", "--against", f"{CCCL}::explicit_terms",
                                              "--arg", "f32[1000,2]"], catch_exceptions=False).stdout
    # The repository's configured target is the default, gpu.
    assert "backend gpu (NVIDIA H100 80GB HBM3)" in out
    assert 'compiled with XLA:GPU for NVIDIA H100 80GB HBM3 (gpu = "h100") without a GPU (deviceless)' in out
    assert out.strip().splitlines()[-1] == "verdict: proved — on GPU (H100, deviceless): 2 → 1 kernels"


@needs_xla_gpu
@exact
def test_explain_attributes_the_512_kib_gpu_temporary_to_the_sum_line():
    from jaxfuse_lint.cli.explain import explain_command

    result = CliRunner().invoke(explain_command, [f"{SUM}::f_sum_jax", "--arg", "f32[131072,2]", "--target", "gpu",
                                                  "--output-format", "json"], catch_exceptions=False)
    data = json.loads(result.stdout)
    assert data["environment"]["deviceless"] is True
    assert len(data["attribution"]["kernels"]) == 2
    rows = {row["line"]: row for row in data["lines"]}
    sum_line = rows[line_of(SUM, "jnp.sum(kvm * x, axis=1, keepdims=True)")]
    assert sum_line["temp_bytes"] == 512 << 10  # XLA:CPU: 1 MiB
    assert data["attribution"]["temp_bytes"] == 512 << 10
    text = CliRunner().invoke(explain_command, [f"{SUM}::f_sum_jax", "--arg", "f32[131072,2]"]).stdout
    assert text.splitlines()[0] == f"{SUM}::f_sum_jax(f32[131072,2]) on GPU (H100, deviceless)"


@needs_xla_gpu
@pytest.mark.parametrize("model, kind", [("h100", "NVIDIA H100 80GB HBM3"), ("a100", "NVIDIA A100-SXM4-80GB"),
                                         ("a6000", "NVIDIA RTX A6000")])
def test_every_shipped_target_config_compiles(model, kind):
    target = backend.select("gpu", model)
    assert target.deviceless and target.device_kind == kind and target.run_device.platform == "cpu"
    data = verify(f"{SUM}::f_sum_jax", "--against", f"{SUM}::f_sum_explicit", "--arg", "f32[4096,2]",
                  "--target", "gpu", "--gpu", model)
    assert data["verdict"] == "proved" and data["environment"]["device"] == kind


@needs_xla_gpu
def test_a_users_own_target_config_by_path(tmp_path):
    from jaxfuse_lint.gpu_targets import config_path

    mine = tmp_path / "my_gpu.txtpb"
    mine.write_text(Path(config_path("a100")).read_text())
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\ngpu = "my_gpu.txtpb"\n')
    (tmp_path / "m.py").write_text(CCCL.read_text())
    data = verify(f"{tmp_path / 'm.py'}::sum_last", "--against", f"{tmp_path / 'm.py'}::explicit_terms",
                  "--arg", "f32[1000,2]")
    assert data["environment"]["device"] == "NVIDIA A100-SXM4-80GB"
    assert data["summary"].startswith("on GPU (MY_GPU, deviceless): ")
    broken = tmp_path / "broken.txtpb"
    broken.write_text("gpu_device_info { no_such_field: 1 }\n")
    bad = verify(f"{tmp_path / 'm.py'}::sum_last", "--against", f"{tmp_path / 'm.py'}::explicit_terms",
                 "--arg", "f32[1000,2]", "--gpu", str(broken))
    assert bad["verdict"] == "error" and "XLA:GPU cannot use the target config" in bad["error"]


# Forms the default tables (XLA:GPU, h100) report, with fixes --verify then proves. (reduction_1m.py's
# `x.sum(-1) * 2.0 + 1.0` saves one launch and no memory: its table keeps it in the preview tier.)
GPU_PROJECT = {
    "pyproject.toml": textwrap.dedent('''\
        [tool.jaxfuse-lint]
        target = "gpu"
        gpu = "h100"

        [tool.jaxfuse-lint.verify]
        "norms:unit_vectors" = ["f32[1000000,3]"]
        "loop:damp_captured" = ["f32[64,64,64]"]
    '''),
    # A sum over a stacked axis of 2 broadcast back against it: a materialised temporary (JF101).
    "norms.py": textwrap.dedent('''\
        import jax
        import jax.numpy as jnp


        @jax.jit
        def unit_vectors(p):
            v = jnp.stack([p[:, 0] - p[:, 1], p[:, 1] - p[:, 2]], axis=-1)
            return v / jnp.sum(v * v, axis=-1, keepdims=True)
    '''),
    # The size is stated (JF203's table shows the harm from 4,096 elements), so the capture is reported.
    "loop.py": LOOP.read_text().replace("def damp_captured(a0):\n",
                                        "def damp_captured(a0):\n    assert a0.shape == (64, 64, 64)\n"),
}


@needs_xla_gpu
def test_fix_verify_keeps_the_fixes_xla_gpu_proves(tmp_path):
    for name, text in GPU_PROJECT.items():
        (tmp_path / name).write_text(text)
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "--fix", "--unsafe-fixes",
                        "--verify", "norms.py", "loop.py"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    assert "Fixed 2 diagnostics, 0 remaining." in r.stdout, (r.stdout, r.stderr)
    assert "verified norms.py::unit_vectors: on GPU (H100, deviceless): 2 → 1 kernels" in r.stderr, r.stderr
    assert "verified loop.py::damp_captured: on GPU (H100, deviceless): 6 → 5 kernels" in r.stderr, r.stderr
    assert "rolled back" not in r.stderr
    assert "jnp.sum(v * v" not in (tmp_path / "norms.py").read_text()
    loop = (tmp_path / "loop.py").read_text()
    assert "    def body(i, c):\n        w = jnp.exp(-0.5 * a0)" in loop.split("def damp_captured")[1]


def test_the_cuda_plugin_is_found_whichever_cuda_it_is_built_for(tmp_path, monkeypatch):
    # jax 0.11 ships `jax-cuda13-plugin` (module jax_plugins.xla_cuda13), not xla_cuda12: seen on the
    # lent H100 (jax 0.11.2). Found without importing it; other plugins are not the CUDA one.
    for name in ("xla_cuda13", "xla_rocm7"):
        (tmp_path / "jax_plugins" / name).mkdir(parents=True)
        (tmp_path / "jax_plugins" / name / "__init__.py").write_text("raise ImportError('never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = backend._cuda_plugins()
    assert "jax_plugins.xla_cuda13" in found and "jax_plugins.xla_rocm7" not in found
    assert backend._cuda_plugin_installed()


# --- without the plugin: XLA:CPU stands in, and rejects nothing -----------------------------------


@pytest.fixture
def no_gpu_compiler(monkeypatch):
    monkeypatch.setattr(backend, "_gpu_compiler_available", lambda jax: False)
    monkeypatch.setattr(backend, "_cuda_plugin_installed", lambda: False)


def test_without_the_plugin_a_gpu_target_says_what_stood_in_and_how_to_get_xla_gpu(no_gpu_compiler):
    data = verify(f"{CCCL}::sum_last", "--against", f"{CCCL}::explicit_terms", "--arg", "f32[1000,2]",
                  "--target", "gpu")
    env = data["environment"]
    assert env["backend"] == "cpu" and env["deviceless"] is False and env["target"] == "gpu"
    assert "XLA:CPU stood in for the GPU target" in env["stand_in"]
    assert "python3 -m pip install -e '.[gpu]' in jaxfuse-lint's repository" in env["stand_in"]
    assert data["summary"].startswith("on CPU (stand-in for GPU): ")
    assert data["verdict"] == "unchanged"  # XLA:CPU makes one kernel of either
    assert any("rejects nothing" in note for note in data["notes"])


def test_stand_in_evidence_never_rolls_back_a_fix_for_the_gpu(no_gpu_compiler):
    from jaxfuse_lint.core.config import Settings, VerifySpec
    from jaxfuse_lint.runtime.fix_rollback import _verify_functions

    # The reduction_1m pair with its width stated (the stand-in compiles it, no rule decides it here).
    original = CCCL.read_text().replace("def sum_last(x):\n", "def sum_last(x):\n    assert x.shape[-1] == 2\n")
    fixed = original.replace("return x.sum(-1) * 2.0 + 1.0", "return (x[..., 0] + x[..., 1]) * 2.0 + 1.0")
    messages: list[str] = []
    settings = Settings(target="gpu", verify=(("cccl:sum_last", VerifySpec(("f32[1000,2]",))),))
    rollback = _verify_functions(original, fixed, "cccl.py", [], settings, messages.append, None)
    assert rollback == []
    assert "cccl.py::sum_last: fix kept, not proved here (unchanged: on CPU (stand-in for GPU)" in messages[0]
    # Targeting the CPU itself, the same evidence does roll it back.
    cpu = Settings(target="cpu", verify=settings.verify)
    assert _verify_functions(original, fixed, "cccl.py", [], cpu, messages.append, None) == ["sum_last"]


def test_the_cpu_target_compiles_with_xla_cpu():
    data = verify(f"{CCCL}::sum_last", "--against", f"{CCCL}::explicit_terms", "--arg", "f32[1000,2]",
                  "--target", "cpu")
    env = data["environment"]
    assert env["backend"] == "cpu" and not env["deviceless"] and env["stand_in"] is None
    assert data["summary"].startswith("on CPU: ")


def test_gpu_setting_is_validated():
    from jaxfuse_lint.core.config import ConfigError, settings_from_table

    assert settings_from_table({"gpu": "A100"}, "pyproject.toml", ".").gpu == "a100"
    with pytest.raises(ConfigError, match="`gpu` must be one of a100, a6000, h100 or the path"):
        settings_from_table({"gpu": "h200x"}, "pyproject.toml", ".")


@needs_xla_gpu
def test_the_proof_table_for_the_h100_config_says_wall_clock_needs_a_gpu(tmp_path):
    out = tmp_path / "proofs.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "proofs.py"), "--only", "reduction_1m",
                        "--target", "gpu", "--gpu", "h100", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert text.startswith("Backend **GPU (H100, deviceless)** (NVIDIA H100 80GB HBM3), jax ")
    assert "wall-clock needs a GPU" in text
    row = next(line for line in text.splitlines() if line.startswith("| reduction_1m: sum_last → explicit_terms"))
    assert "| 2 → **1** |" in row and "| needs a GPU | proved |" in row


def test_a_tpu_target_without_a_tpu_says_xla_cpu_stood_in():
    target = backend.select("tpu")
    assert target.backend == "cpu" and not target.deviceless
    assert target.stand_in == "no TPU here: XLA:CPU stood in for the TPU target"
    assert target.label() == "CPU (stand-in for TPU)"


@needs_xla_gpu
def test_review_verify_quotes_the_gpu_evidence(tmp_path, monkeypatch):
    from jaxfuse_lint.cli.review import review_command

    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF101"]\n\n[tool.jaxfuse-lint.verify]\n'
                                             '"model:f_sum_jax" = ["f32[131072,2]"]\n')
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    (tmp_path / "model.py").write_text(SUM.read_text())
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "head"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(review_command, ["--base", "HEAD~1", "--verify", "--gpu", "h100", "-o", "out.json"])
    assert result.exit_code == 1, result.output
    bodies = [c["body"] for c in json.loads((tmp_path / "out.json").read_text())["comments"]]
    assert any("Measured by `jaxfuse-lint verify`: on GPU (H100, deviceless): 2 → 1 kernels" in b for b in bodies)


@needs_xla_gpu
def test_without_jax_platforms_set_the_plugin_neither_fails_nor_speaks(tmp_path):
    """No NVIDIA driver here: jaxfuse-lint sets JAX's platforms to the CPU before JAX starts (else the
    plugin fails to initialise, logs a traceback and registers no compiler) and filters its stub lines."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "verify", f"{CCCL}::sum_last", "--against",
                        f"{CCCL}::explicit_terms", "--arg", "f32[1000,2]", "--time", "--repeat", "3"],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr == f"jaxfuse-lint verify: this runs your code (importing {CCCL} runs top-level code)\n"
    assert "note: wall-clock needs a GPU: not measured (--time) for NVIDIA H100 80GB HBM3" in r.stdout
    assert r.stdout.strip().splitlines()[-1] == "verdict: proved — on GPU (H100, deviceless): 2 → 1 kernels"
