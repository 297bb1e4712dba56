"""`verify --time`: wall-clock beside the static metrics, and slower-beyond-the-noise is a regression."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxfuse_lint.verify.api import Metric
from jaxfuse_lint.verify.timing import Timing, format_time, noise

ROOT = Path(__file__).resolve().parent.parent


def test_timing_statistics():
    t = Timing(runs=[0.004, 0.001, 0.002, 0.003, 0.010])
    assert t.median == 0.003
    assert t.quartiles == (0.002, 0.004)
    assert t.spread == pytest.approx(0.002)
    data = t.to_json()
    assert data["runs"] == 5 and data["min_seconds"] == 0.001 and data["max_seconds"] == 0.010


def test_noise_is_the_larger_spread_or_five_percent():
    tight = Timing(runs=[1.0, 1.0, 1.0, 1.0])
    loose = Timing(runs=[0.5, 1.0, 1.0, 1.5])
    assert noise(tight, tight) == pytest.approx(0.05)
    assert noise(tight, loose) == pytest.approx(0.25)


def test_a_change_within_the_tolerance_is_the_same():
    assert Metric("wall_seconds", "w", 1.0, 1.04, "time", True, tolerance=0.05).change == "same"
    assert Metric("wall_seconds", "w", 1.0, 1.06, "time", True, tolerance=0.05).change == "worse"
    assert Metric("wall_seconds", "w", 1.0, 0.90, "time", True, tolerance=0.05).change == "better"
    assert Metric("kernels", "k", 2, 1, "count", True).change == "better"


def test_format_time():
    assert format_time(56e-6) == "56.0 µs"
    assert format_time(0.001927) == "1.93 ms"
    assert format_time(0.1234) == "123 ms"
    assert format_time(2.5) == "2.50 s"


jax = pytest.importorskip("jax")

# `after` computes the same values with a large, useless detour that XLA cannot drop
# (0 * a finite sum is not folded away for floats, because of NaN and infinities).
SLOWER = textwrap.dedent("""\
    import jax.numpy as jnp


    def fast(x):
        return x * 2.0


    def slow(x):
        detour = jnp.sum(jnp.sin(jnp.outer(x, x)) ** 2)
        return x * 2.0 + 0.0 * detour
    """)


def run_verify(*args, cwd):
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", "verify", *args], capture_output=True,
                          text=True, cwd=cwd)


def scripted_timer(seconds: dict[str, float]):
    """A timer that runs each call (the compiled program really runs) and says it took SECONDS[label],
    with a deterministic spread of 1%: the verdict's logic without the machine's load in it."""
    runs: dict[str, int] = {}

    def timer(label, call):
        jax.block_until_ready(call())
        runs[label] = runs.get(label, 0) + 1
        return seconds[label] * (1 + 0.01 * (runs[label] % 3))

    timer.runs = runs
    return timer


def test_a_slower_version_is_a_regression():
    from jaxfuse_lint.verify import verify_pair

    timer = scripted_timer({"before": 1e-3, "after": 2e-3})
    result = verify_pair(SLOWER, SLOWER, "fast", ["f32[1500]"], after_func_name="slow", time_runs=9,
                         target="cpu", timer=timer)
    assert result.verdict == "regressed", result.summary()
    assert timer.runs == {"before": 9 + 3, "after": 9 + 3}  # the warm-up runs, then 9 each, alternating
    report = result.to_json()
    wall = next(m for m in report["metrics"] if m["key"] == "wall_seconds")
    assert wall["deciding"] and wall["change"] == "worse" and wall["after"] > wall["before"] + wall["tolerance"]
    for side in ("before", "after"):
        timing = report[side]["timing"]
        assert timing["runs"] == 9 and timing["mode"] == "compiled"
        assert timing["p25_seconds"] <= timing["median_seconds"] <= timing["p75_seconds"]
    # Within the noise (5% of the median, or the spread): the same, never a regression.
    close = verify_pair(SLOWER, SLOWER, "fast", ["f32[1500]"], after_func_name="fast", time_runs=5,
                        target="cpu", timer=scripted_timer({"before": 1e-3, "after": 1.03e-3}))
    assert close.metric("wall_seconds").change == "same" and close.verdict != "regressed"


def test_time_in_the_text_report_and_the_summary(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from jaxfuse_lint.cli.verify import verify_command
    from jaxfuse_lint.verify import timing

    monkeypatch.setattr(timing, "wall_clock", scripted_timer({"before": 2e-3, "after": 1e-3}))
    (tmp_path / "pair.py").write_text(SLOWER)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(verify_command, ["pair.py::slow", "--against", "pair.py::fast", "--arg", "f32[1500]",
                                            "--time", "--repeat", "9", "--target", "cpu"])
    assert r.exit_code == 0, r.output
    assert "wall-clock (median)" in r.stdout
    assert "wall-clock before: median" in r.stdout and "(interquartile" in r.stdout
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("verdict: proved") and "wall-clock" in last


def test_the_command_line_times_both_versions(tmp_path):
    """`verify --time` end to end, as a user runs it: both versions timed, whatever the verdict the
    machine's load gives (the verdict's logic is the scripted tests' above)."""
    (tmp_path / "pair.py").write_text(SLOWER)
    r = run_verify("pair.py::fast", "--against", "pair.py::slow", "--arg", "f32[64]", "--time", "--repeat", "3",
                   "--output-format", "json", "--target", "cpu", cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    assert next(m for m in report["metrics"] if m["key"] == "wall_seconds")["deciding"]
    assert [report[side]["timing"]["runs"] for side in ("before", "after")] == [3, 3]


def test_repeat_needs_time(tmp_path):
    (tmp_path / "pair.py").write_text(SLOWER)
    r = run_verify("pair.py::fast", "--against", "pair.py::slow", "--arg", "f32[8]", "--repeat", "3", cwd=tmp_path)
    assert r.returncode == 2 and "--repeat needs --time" in r.stderr


def test_without_time_nothing_is_timed():
    from jaxfuse_lint.verify import verify_pair

    result = verify_pair(SLOWER, SLOWER, "fast", ["f32[8]"], after_func_name="slow")
    assert result.metric("wall_seconds") is None and result.before.timing is None


def test_proofs_table_runs_a_proof(tmp_path):
    out = tmp_path / "proofs.md"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "proofs.py"), "--only", "sum_reduction",
                        "--repeat", "3", "--target", "cpu", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert f"jax {jax.__version__}" in text and f"**{jax.default_backend().upper()}**" in text
    row = next(line for line in text.splitlines() if line.startswith("| sum_reduction: f_sum_jax → f_sum_explicit"))
    assert row.count("|") == 9 and "2 → **1**" in row  # kernels, the notebook's claim


def test_every_proof_file_names_a_verify_command():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from proofs import PROOFS, find_proofs
    finally:
        sys.path.pop(0)
    proofs = find_proofs()
    files = {p.file.name for p in proofs}
    paired = {f.name for f in PROOFS.glob("*.py") if not f.name.endswith("_fixed.py")}
    assert files == paired
    assert all(p.argv[0].startswith("fixtures/proofs/") and "--arg" in p.argv for p in proofs)
