"""`jaxfuse-lint record` on the sample project (fixtures/runtime_project), run as a user runs it,
then `check` with and without the profile. One recording is shared by the module."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT

SAMPLE = FIXTURES / "runtime_project"


def jaxfuse(*args: str, cwd: Path, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = str(ROOT) + (os.pathsep + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], cwd=cwd, capture_output=True, text=True,
                          env=full_env, timeout=timeout)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    project = tmp_path_factory.mktemp("runtime") / "project"
    shutil.copytree(SAMPLE, project)
    proc = jaxfuse("record", "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    profile = json.loads((project / ".jaxfuse_lint" / "profile.json").read_text())
    return project, proc, profile


def _codes(output: str) -> list[tuple[str, str]]:
    """(file:line, code) of each concise diagnostic."""
    out = []
    for line in output.splitlines():
        parts = line.split(" ", 2)
        if len(parts) >= 2 and parts[1].startswith("JF"):
            file, row = parts[0].split(":")[:2]
            out.append((f"{file}:{row}", parts[1]))
    return out


def test_the_command_runs_unchanged(recorded):
    _, proc, _ = recorded
    assert proc.returncode == 0, proc.stderr
    assert "8 passed" in proc.stdout  # pytest's own output passes through
    assert "jaxfuse-lint record: 5 entry points, 8 compilations" in proc.stderr


def test_profile_records_entry_points_signatures_and_causes(recorded):
    _, _, profile = recorded
    assert profile["format"] == "jaxfuse-lint-profile" and profile["version"] == 1
    entries = {e["qualname"]: e for e in profile["entries"]}
    assert set(entries) == {"kinetic_energy", "swing_ratio", "power_spectrum", "weighted_speed", "advance"}
    kinetic = entries["kinetic_energy"]
    assert kinetic["file"] == "particles/kernels.py"
    assert kinetic["signatures"][0]["args"] == [{"name": "v", "shape": [256, 3], "dtype": "float32",
                                                 "weak_type": False}]
    assert kinetic["signatures"][0]["where"] == "tests/test_particles.py::test_kinetic_energy"
    advance = entries["advance"]
    assert [s["static"] for s in advance["signatures"]] == [{"steps": str(n)} for n in (1, 2, 3, 4)]
    assert [c["kind"] for c in advance["compilations"]] == ["first", "static", "static", "static"]
    assert advance["compilations"][1]["cause"] == "new static value steps: 1 -> 2"
    assert entries["weighted_speed"]["constants"][0]["bytes"] == 32768 * 4
    assert entries["weighted_speed"]["constants"][0]["lines"][0]["line"] == 29
    # Every compilation carries the per-line account of its program.
    costs = profile["programs"][entries["power_spectrum"]["compilations"][0]["program"]]
    assert costs["kernels"] and any(acc["line"] == 22 for acc in costs["lines"])
    # Each distinct program's account is stored once: `advance`'s four compilations (one per
    # static value) are four programs, and no account is stored inline.
    assert len({c["program"] for c in entries["advance"]["compilations"]}) == 4
    assert all("costs" not in c for e in profile["entries"] for c in e["compilations"])


def test_functions_called_under_an_entry_are_recorded_with_their_parameters(recorded):
    _, _, profile = recorded
    under_weighted = [f for f in profile["functions"] if f["entry_name"] == "weighted_speed"]
    chains = {f["qualname"]: f["chain"] for f in under_weighted}
    assert chains["kinetic_energy"] == ["weighted_speed", "kinetic_energy"]
    record = next(f for f in under_weighted if f["qualname"] == "kinetic_energy")
    assert record["params"]["v"][0]["shape"] == [256, 3]


def test_check_with_the_profile_reports_what_check_alone_cannot(recorded):
    project, _, _ = recorded
    plain = jaxfuse("check", "--no-profile", "--no-cache", ".", cwd=project)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    with_profile = jaxfuse("check", "--no-cache", ".", cwd=project)  # .jaxfuse_lint/profile.json by default
    assert with_profile.returncode == 1
    assert _codes(with_profile.stdout) == [
        ("particles/kernels.py:16", "JF503"),
        ("particles/kernels.py:22", "JF503"),
        ("particles/kernels.py:29", "JF502"),
        ("particles/kernels.py:29", "JF202"),
    ]
    assert ("traced at run time under `jax.jit(weighted_speed)` (tests/test_particles.py::test_weighted_speed) "
            "with v: f32[256,3]") in with_profile.stdout
    # The sizes the calibrated rules need come from the run too: the 3-wide sums, which XLA:GPU's
    # tables show harmless, are reported for XLA:CPU, whose table shows their harm.
    assert jaxfuse("check", "--no-profile", "--no-cache", "--target", "cpu", ".", cwd=project).returncode == 0
    on_cpu = jaxfuse("check", "--no-cache", "--target", "cpu", ".", cwd=project)
    assert on_cpu.returncode == 1
    assert _codes(on_cpu.stdout) == [
        ("particles/kernels.py:11", "JF101"),
        ("particles/kernels.py:16", "JF503"),
        ("particles/kernels.py:17", "JF101"),
        ("particles/kernels.py:22", "JF503"),
        ("particles/kernels.py:29", "JF502"),
    ]
    assert ("traced at run time under `jax.jit(kinetic_energy)` (tests/test_particles.py::test_kinetic_energy) "
            "with v: f32[256,3]") in on_cpu.stdout
    assert "(size 3, elementwise work on an input): on XLA:CPU" in on_cpu.stdout
    # `advance` was compiled 4 times, once per case of a parametrized test (steps=1..4): a sweep the
    # suite chose, not a recompilation (JF501 counts per test).
    assert "JF501" not in with_profile.stdout


def test_fixes_that_rely_on_recorded_shapes_are_unsafe(recorded):
    project, _, _ = recorded
    # (XLA:CPU: the target whose table reports the 3-wide sums the recorded shapes reveal.)
    safe = jaxfuse("check", "--no-cache", "--diff", "--target", "cpu", "particles/kernels.py", cwd=project)
    assert safe.stdout == ""
    unsafe = jaxfuse("check", "--no-cache", "--diff", "--unsafe-fixes", "--target", "cpu", "particles/kernels.py",
                     cwd=project)
    assert "+    return 0.5 * (v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1] + v[..., 2] * v[..., 2])" in unsafe.stdout


def test_verify_with_the_profile_proves_the_fixes_without_arguments(recorded):
    project, _, _ = recorded
    proc = jaxfuse("verify", "--profile", ".jaxfuse_lint/profile.json", "--unsafe-fixes", "--target", "cpu",
                   "particles", cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert ("particles/kernels.py::swing_ratio (theta: f32[4096,3]): proved: on CPU: "
            "48.0 KiB → 16.0 KiB temporaries") in lines
    assert ("particles/kernels.py::kinetic_energy (v: f32[256,3]): unchanged: on CPU: no measurable change "
            "(1 kernel, 0 B temporaries)") in lines
    assert "1 proved, 2 unchanged" in proc.stderr


def test_facts_are_keyed_by_each_functions_own_source(recorded, tmp_path):
    project, _, _ = recorded
    copy = tmp_path / "edited"
    shutil.copytree(project, copy)
    kernels = copy / "particles" / "kernels.py"
    text = kernels.read_text()
    # An edit elsewhere in the file (a line above, a comment below) keeps every fact, at its line now.
    kernels.write_text("# a new first line\n" + text + "\n# edited after the run\n")
    result = jaxfuse("check", "--no-cache", "particles/kernels.py", cwd=copy)
    assert _codes(result.stdout) == [("particles/kernels.py:17", "JF503"), ("particles/kernels.py:23", "JF503"),
                                     ("particles/kernels.py:30", "JF502"), ("particles/kernels.py:30", "JF202")]
    assert ("note: 1 file changed since .jaxfuse_lint/profile.json was recorded (particles/kernels.py): "
            "the facts of the functions that changed are ignored") in result.stderr
    # An edit to a function drops its facts; one to a function an entry called drops the entry's
    # programs (`weighted_speed` calls `kinetic_energy`), not the others'.
    kernels.write_text(text.replace("u = 1.0 - jnp.cos(theta)", "u = 1.0 - jnp.cos(theta)  # pendulum energy")
                       .replace("return 0.5 * jnp.sum(v * v, axis=-1)", "return jnp.sum(v * v, axis=-1) / 2"))
    result = jaxfuse("check", "--no-cache", "particles/kernels.py", cwd=copy)
    # (JF202 stays: `weighted_speed` itself is unchanged, so it is still known traced.)
    assert _codes(result.stdout) == [("particles/kernels.py:22", "JF503"), ("particles/kernels.py:29", "JF202")]


def test_check_never_imports_jax_when_reading_a_profile(recorded):
    project, _, _ = recorded
    script = textwrap.dedent("""
        import sys
        from click.testing import CliRunner
        from jaxfuse_lint.cli.main import cli
        result = CliRunner().invoke(cli, ["check", "--no-cache", "-j", "1", "--target", "cpu", "."])
        assert result.exit_code == 1, result.output
        assert "JF101" in result.output
        assert "jax" not in sys.modules, "check imported jax"
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=project, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_exit_code_and_output_pass_through(tmp_path):
    proc = jaxfuse("record", "--", sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); "
                   "sys.exit(3)", cwd=tmp_path)
    assert proc.returncode == 3
    assert proc.stdout == "out\n"
    assert proc.stderr.startswith("err\n")
    assert not (tmp_path / ".jaxfuse_lint").exists()  # nothing traced, nothing written


def test_subprocesses_merge_into_one_profile_and_site_customisation_is_kept(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = '1'\n")
    (tmp_path / "work.py").write_text(textwrap.dedent("""
        import os, sys
        import jax, jax.numpy as jnp

        def double(x):
            return x * 2

        assert os.environ.get("USER_SITE_RAN") == "1"
        n = int(sys.argv[1])
        jax.jit(double)(jnp.ones(n))
    """))
    (tmp_path / "driver.py").write_text(textwrap.dedent("""
        import subprocess, sys
        for n in (2, 3):
            subprocess.run([sys.executable, "work.py", str(n)], check=True)
    """))
    proc = jaxfuse("record", "-o", "out.json", "--", sys.executable, "driver.py", cwd=tmp_path,
                   env={"PYTHONPATH": str(tmp_path / "site")})
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((tmp_path / "out.json").read_text())
    assert len(profile["processes"]) == 2
    (entry,) = profile["entries"]
    assert entry["qualname"] == "double"
    assert sorted(s["args"][0]["shape"] for s in entry["signatures"]) == [[2], [3]]
    # One compilation in each process: neither is a recompilation.
    assert [c["kind"] for c in entry["compilations"]] == ["first", "first"]


def test_fix_verify_uses_the_profile_and_rolls_back_what_does_not_prove(recorded, tmp_path):
    project, _, _ = recorded
    copy = tmp_path / "fix"
    shutil.copytree(project, copy)
    proc = jaxfuse("check", "--no-cache", "--fix", "--unsafe-fixes", "--verify", "--target", "cpu", "particles",
                   cwd=copy)
    err = proc.stderr
    assert "verified swing_ratio (theta: f32[4096,3]): proved: on CPU: 48.0 KiB → 16.0 KiB temporaries" in err
    assert "particles/kernels.py::kinetic_energy: fix not proved by the recorded signatures; rolled back" in err
    fixed = (copy / "particles" / "kernels.py").read_text()
    assert "return 0.5 * jnp.sum(v * v, axis=-1)" in fixed  # rolled back: unchanged on CPU
    assert "jnp.sum(u, axis=-1, keepdims=True)" not in fixed  # proved: kept


def test_review_verify_quotes_the_measured_before_and_after(recorded, tmp_path):
    project, _, _ = recorded
    repo = tmp_path / "repo"
    shutil.copytree(project, repo)
    kernels = repo / "particles" / "kernels.py"
    recorded_text = kernels.read_text()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    (repo / ".gitignore").write_text(".jaxfuse_lint/\n")
    with open(repo / "pyproject.toml", "a") as fh:  # XLA:CPU's figures are asserted below
        fh.write('target = "cpu"\n')
    kernels.write_text(recorded_text.replace("return jnp.max(u / jnp.sum(u, axis=-1, keepdims=True), axis=-1)",
                                             "return u[..., 0]"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True)
    kernels.write_text(recorded_text)  # the head is the text the profile was recorded on
    subprocess.run([*git, "commit", "-qam", "head"], cwd=repo, check=True)
    proc = jaxfuse("review", "--base", "HEAD~1", "--verify", "-o", "review.json", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    comments = json.loads((repo / "review.json").read_text())["comments"]
    assert len(comments) == 1 and all(c["line"] == 17 for c in comments)  # the sum (the max: preview)
    for c in comments:
        assert "traced at run time under `jax.jit(swing_ratio)`" in c["body"]
        assert "Measured by `jaxfuse-lint verify`: on CPU:" in c["body"]
        assert "for theta: f32[4096,3], recorded in tests/test_particles.py::test_swing_ratio" in c["body"]


needs_xla_gpu = pytest.mark.skipif(
    not __import__("jaxfuse_lint.verify.backend", fromlist=["_"])._cuda_plugin_installed(),
    reason="needs jax's CUDA plugin to compile with XLA:GPU without a GPU: python3 -m pip install -e '.[gpu]'")


@needs_xla_gpu
def test_a_run_recorded_on_cpu_is_verified_and_explained_for_the_gpu(recorded):
    project, _, profile = recorded
    assert {s.get("backend") for e in profile["entries"] for s in e["signatures"]} == {"cpu"}
    proc = jaxfuse("verify", "--profile", ".jaxfuse_lint/profile.json", "--unsafe-fixes", "--target", "gpu",
                   "particles", cwd=project)
    assert proc.returncode == 0, proc.stderr
    # (XLA:GPU's tables show the 3-wide sums harmless: the finding verified is JF202's.)
    assert ("particles/kernels.py::weighted_speed (v: f32[256,3]): proved: on GPU (H100, deviceless): "
            "128.0 KiB → 0 B folded constants") in proc.stdout.splitlines()
    proc = jaxfuse("explain", "--profile", ".jaxfuse_lint/profile.json", "particles/kernels.py::swing_ratio",
                   "--target", "gpu", cwd=project)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("particles/kernels.py::swing_ratio(f32[4096,3]) on GPU (H100, deviceless)")
    # XLA:GPU fuses the whole function (on CPU, line 16 writes 48.0 KiB: see the next test).
    assert out.splitlines()[1].startswith("1 kernel (1 launch), 0 B temporaries")
    row = next(line for line in out.splitlines() if line.strip().startswith("16 "))
    assert "K1" in row and "KiB" not in row and "u = 1.0 - jnp.cos(theta)" in row
    assert "(tests/test_particles.py::test_swing_ratio) on CPU, compiled again" in out


def test_explain_reads_the_per_line_accounts_of_the_profile(recorded):
    project, _, _ = recorded
    proc = jaxfuse("explain", "--profile", ".jaxfuse_lint/profile.json", "particles/kernels.py::swing_ratio",
                   cwd=project)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("particles/kernels.py::swing_ratio(f32[4096,3]) on CPU")
    row = next(line for line in out.splitlines() if line.strip().startswith("16 "))
    assert "48.0 KiB" in row and "u = 1.0 - jnp.cos(theta)" in row
    assert "kinetic_energy" not in out  # only the program recorded for swing_ratio


def test_append_merges_runs_into_one_profile(tmp_path):
    (tmp_path / "work.py").write_text("import sys\nimport jax, jax.numpy as jnp\n\n\ndef double(x):\n    return x * 2\n\n\n"
                                      "jax.jit(double)(jnp.ones(int(sys.argv[1])))\n")
    first = jaxfuse("record", "--", sys.executable, "work.py", "2", cwd=tmp_path)
    second = jaxfuse("record", "--append", "--", sys.executable, "work.py", "5", cwd=tmp_path)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    # The summary says what this run added and that the totals are the merged profile's.
    assert "this run: 1 entry point, 1 compilation, 1 traced function from 1 process" in second.stderr
    assert "which now holds 1 entry point, 2 compilations, 1 traced function (totals of all the runs" \
        in second.stderr
    profile = json.loads((tmp_path / ".jaxfuse_lint" / "profile.json").read_text())
    (entry,) = profile["entries"]
    assert sorted(s["args"][0]["shape"] for s in entry["signatures"]) == [[2], [5]]
    assert len(profile["processes"]) == 2


def test_a_process_ending_with_os_exit_still_leaves_its_record(tmp_path):
    (tmp_path / "work.py").write_text("import os\nimport jax, jax.numpy as jnp\n\n\ndef double(x):\n    return x * 2\n\n\n"
                                      "jax.jit(double)(jnp.ones(3))\nos._exit(0)  # no exit handlers run\n")
    proc = jaxfuse("record", "--", sys.executable, "work.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((tmp_path / ".jaxfuse_lint" / "profile.json").read_text())
    assert [e["qualname"] for e in profile["entries"]] == ["double"]


def test_the_profile_folder_ignores_itself_in_git(tmp_path):
    (tmp_path / "work.py").write_text("import jax, jax.numpy as jnp\n\n\ndef double(x):\n    return x * 2\n\n\n"
                                      "jax.jit(double)(jnp.ones(3))\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    proc = jaxfuse("record", "--", sys.executable, "work.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / ".jaxfuse_lint" / ".gitignore").read_text().splitlines()[-1] == "*"
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert status.splitlines() == ["?? work.py"]
    # A profile written where the user chose (`-o`) leaves the user's folder alone.
    proc = jaxfuse("record", "-o", "run.json", "--", sys.executable, "work.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / ".gitignore").exists()


def test_each_distinct_program_is_stored_once(tmp_path):
    # The same program compiled three times (a fresh callable each time) and another shape once.
    (tmp_path / "work.py").write_text("import jax, jax.numpy as jnp\n\n"
                                      "for n in (3, 3, 3, 5):\n"
                                      "    jax.jit(lambda x: x * 2 + 1)(jnp.ones(n))\n")
    proc = jaxfuse("record", "--", sys.executable, "work.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((tmp_path / ".jaxfuse_lint" / "profile.json").read_text())
    (entry,) = profile["entries"]
    assert [c["kind"] for c in entry["compilations"]] == ["first", "fresh-callable", "fresh-callable", "shape"]
    assert len({c["program"] for c in entry["compilations"]}) == 2
    assert len(profile["programs"]) == 2


def test_explain_finds_a_nested_function_by_its_qualified_name(tmp_path):
    (tmp_path / "kernels.py").write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp


        class A:
            @staticmethod
            def make():
                def kernel(x):
                    y = jnp.sin(x) * 2.0
                    return jnp.cumsum(y, axis=0) + jnp.cumsum(y, axis=1)
                return jax.jit(kernel)


        class B:
            @staticmethod
            def make():
                def kernel(x):
                    return jnp.exp(x) + 1.0
                return jax.jit(kernel)


        A.make()(jnp.ones((64, 64)))
        B.make()(jnp.ones((8,)))
    """))
    assert jaxfuse("record", "--", sys.executable, "kernels.py", cwd=tmp_path).returncode == 0
    for name, shape, row in (("A", "f32[64,64]", "y = jnp.sin(x) * 2.0"), ("B", "f32[8]", "jnp.exp(x) + 1.0")):
        proc = jaxfuse("explain", f"kernels.py::{name}.make.<locals>.kernel", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"kernels.py::{name}.make.<locals>.kernel({shape}) on CPU\n")
        assert row in proc.stdout
    # The whole file: each program under its own function, and every kernel at a source line.
    proc = jaxfuse("explain", "kernels.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    heads = [line for line in proc.stdout.splitlines() if line.startswith("kernels.py::")]
    assert heads == ["kernels.py::A.make.<locals>.kernel(f32[64,64]) on CPU",
                     "kernels.py::B.make.<locals>.kernel(f32[8]) on CPU"]
    assert "no source line" not in proc.stdout


def test_the_line_that_captured_a_constant_is_recorded(tmp_path):
    (tmp_path / "design.py").write_text(textwrap.dedent("""
        import jax
        import jax.numpy as jnp
        import numpy as np

        FMAT = np.ones((512, 512), np.float32)


        def helper(m, x):
            return m @ x


        def make():
            design = lambda params: FMAT
            def loss(params, x):
                F = design(params)
                return helper(F, x).sum() + helper(F, 2 * x).sum()
            return jax.jit(loss)


        class Model:
            def __init__(self):
                self.table = np.ones((300, 300), np.float32)

            def apply(self, x):
                return x @ self.table


        make()(None, jnp.ones((512, 4)))
        jax.jit(Model().apply)(jnp.ones((2, 300)))
    """))
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nconstant-bytes-max = 1024\n")
    assert jaxfuse("record", "--", sys.executable, "design.py", cwd=tmp_path).returncode == 0
    profile = json.loads((tmp_path / ".jaxfuse_lint" / "profile.json").read_text())
    consts = {e["qualname"]: e["constants"][0] for e in profile["entries"]}
    loss = consts["make.<locals>.loss"]
    assert [ref["line"] for ref in loss["lines"]] == [10]  # the helper's matmul, where it is a parameter
    assert [ref["line"] for ref in loss["captures"]] == [14]  # `design = lambda params: FMAT`
    assert [ref["line"] for ref in consts["Model.apply"]["captures"]] == [26]  # `x @ self.table`
    check = jaxfuse("check", "--no-cache", "--select", "JF502", "design.py", cwd=tmp_path)
    assert _codes(check.stdout) == [("design.py:14", "JF502"), ("design.py:26", "JF502")]


def test_measured_findings_withheld_by_per_file_ignores_are_counted(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_scale.py").write_text(textwrap.dedent("""
        import functools
        import jax
        import jax.numpy as jnp


        @functools.partial(jax.jit, static_argnums=1)
        def scale(x, n):
            return x * n


        def test_scale():
            for n in range(6):
                scale(jnp.ones(3), n)
    """))
    proc = jaxfuse("record", "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check = jaxfuse("check", "--no-cache", ".", cwd=tmp_path)
    assert check.returncode == 0 and "JF501" not in check.stdout
    assert ("note: 1 measured finding in tests/ not reported: per-file-ignores (test code runs on inputs the "
            "test chose: see docs/record.md; set `per-file-ignores` to report it)") in check.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nper-file-ignores = {}\n")
    check = jaxfuse("check", "--no-cache", ".", cwd=tmp_path)
    assert _codes(check.stdout) == [("tests/test_scale.py:8", "JF501")]
    assert "not reported" not in check.stderr


@needs_xla_gpu
def test_confirm_decides_a_temporary_measured_on_cpu_by_compiling_for_the_target(recorded):
    project, _, _ = recorded
    proc = jaxfuse("check", "--no-cache", "--confirm", "--select", "JF503", "particles", cwd=project)
    # XLA:GPU fuses `swing_ratio` whole (the CPU run wrote 48 KiB on line 16); the FFT's line still
    # writes its temporaries there.
    assert _codes(proc.stdout) == [("particles/kernels.py:22", "JF503")]
    assert ("confirmed on GPU (H100, deviceless): compiling `power_spectrum` for the recorded field: f32[16,16,3] "
            "writes 12.0 KiB of temporaries for this line") in proc.stdout
    assert ("particles/kernels.py:16:5: JF503: dropped: on GPU (H100, deviceless), compiling `swing_ratio` for the "
            "recorded theta: f32[4096,3] writes 0 B of temporaries for this line") in proc.stderr
