"""The calibration tables and the rules that follow them (jaxfuse_lint/core/calibration.py).

- The decision logic: what counts as a change, "harm" / "some" / "none" / "unknown", size classes.
- Agreement: every variant of a committed table, as source, checked by its rule with the table's
  target: the rule reports it (default tier) exactly where the compiler showed the harm. The rule
  reads the same table, so a disagreement is the rule misreading the code around the pattern
  (producer, consumer, sizes, dtype, loop) — the features its decision rests on.
- Freshness: where the installed jax made the table and XLA:GPU is here, a sample of variants
  compiled again gives the table's figures.
"""
from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from jaxfuse_lint.calibrate.variants import GENERATORS, generator, module
from jaxfuse_lint.core import calibration
from jaxfuse_lint.core.calibration import Figures, OneOf, Row, Table, decide, measured_verdicts, verdict
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine import check_source

CHUNK = 200


def F(kernels, launches=None, temp=0, const=0, seconds=None):
    return Figures(kernels, kernels if launches is None else launches, temp, const, seconds)


def test_what_counts_as_a_change():
    assert verdict(F(2, temp=1 << 20), F(1)) == "harm"
    assert verdict(F(1, temp=524_548), F(1, temp=524_544)) == "none"  # 4 bytes of buffer assignment
    assert verdict(F(1, temp=0), F(2, temp=16 << 20)) == "worse"
    assert verdict(F(2), F(1, temp=1 << 20)) == "mixed"
    assert verdict(F(1, seconds=1.0), F(1, seconds=0.5), noise=0.1) == "harm"
    assert verdict(F(1, seconds=1.0), F(1, seconds=0.95), noise=0.1) == "none"
    assert verdict(F(5, launches=35), F(5, launches=27)) == "harm"  # a loop's launches
    assert verdict(F(2), F(1)) == "launch"  # one launch, no memory: not evidence enough untimed
    assert verdict(F(2, seconds=1.0), F(1, seconds=1.0), noise=0.1) == "none"  # timed: the clock decides


def _table(rows, nearest=()):
    features = {"producer": ("arg", "stack"), "rows": (4096, 262144, 4194304)}
    return Table("JF999", "h100", {"compiler": "XLA:GPU", "device": "NVIDIA H100 80GB HBM3", "deviceless": True,
                                   "jax": "0.10.2"}, features,
                 tuple(Row({"producer": p, "rows": n}, F(2, temp=n * 12), F(1), v, None, f"f32[{n},3]")
                       for p, n, v in rows), nearest)


def test_decisions(monkeypatch):
    table = _table([("arg", 4096, "none"), ("arg", 262144, "harm"), ("arg", 4194304, "harm"),
                    ("stack", 4096, "harm"), ("stack", 262144, "harm"), ("stack", 4194304, "harm")], ("rows",))
    monkeypatch.setattr(calibration, "load_table", lambda code, key: table if key == "h100" else None)
    s = Settings()
    assert decide("JF999", s, producer="stack").outcome == "harm"
    some = decide("JF999", s, producer="arg")
    assert some.outcome == "some" and some.preview and "rows" in some.preview
    assert decide("JF999", s, producer="arg", rows=300_000).outcome == "harm"  # snaps to 262,144
    assert decide("JF999", s, producer="arg", rows=5000).outcome == "none"  # snaps to 4,096
    unknown = decide("JF999", s, producer="matmul")
    assert unknown.outcome == "unknown" and "its producer (`matmul`) is none of the calibrated" in unknown.preview
    assert decide("JF999", dataclasses.replace(s, target="tpu"), producer="stack").outcome == "unknown"
    assert decide("JF999", dataclasses.replace(s, gpu="a6000"), producer="stack").outcome == "unknown"
    evidence = decide("JF999", s, producer="stack")
    text = calibration.evidence_text(evidence, "this form", "the fix")
    assert text.startswith("on XLA:GPU for the NVIDIA H100 80GB HBM3 (jax 0.10.2, deviceless), this form at "
                           "f32[4194304,3] compiles to 2 kernels, 48.0 MiB of temporaries; the fix to 1 kernel")


def test_a_size_far_outside_the_calibrated_classes_is_not_calibrated(monkeypatch):
    """Size classes stand for the sizes around them (one class step either side), not for a scalar
    against classes of thousands of rows."""
    table = _table([("arg", 4096, "harm"), ("arg", 262144, "harm"), ("arg", 4194304, "harm")], ("rows",))
    monkeypatch.setattr(calibration, "load_table", lambda code, key: table if key == "h100" else None)
    s = Settings()
    assert decide("JF999", s, producer="arg", rows=100).outcome == "harm"  # 4096 / 64 = 64 <= 100
    far = decide("JF999", s, producer="arg", rows=1)
    assert far.outcome == "unknown" and "its rows (`1`) is none of the calibrated ones" in far.preview
    assert decide("JF999", s, producer="arg", rows=4194304 * 16).outcome == "harm"  # one step (× 16) above
    assert decide("JF999", s, producer="arg", rows=4194304 * 64).outcome == "unknown"


def test_a_decision_says_from_which_size_on_it_shows_the_harm(monkeypatch):
    table = _table([("arg", 4096, "none"), ("arg", 262144, "harm"), ("arg", 4194304, "harm"),
                    ("stack", 4096, "harm"), ("stack", 262144, "none"), ("stack", 4194304, "harm")], ("rows",))
    monkeypatch.setattr(calibration, "load_table", lambda code, key: table if key == "h100" else None)
    s = Settings()
    some = decide("JF999", s, producer="arg")
    assert some.open_features() == ["rows"]
    t = some.threshold("rows")
    assert (t.value, t.every_larger, t.text()) == (262144, True, "harm from 262,144 rows")
    assert "rows: harm from 262,144 rows" in some.preview
    assert some.given("rows", [262144, 4194304]).outcome == "harm"
    gappy = decide("JF999", s, producer="stack")  # harm at the smallest size too: the size draws no line
    assert gappy.open_features() == ["rows"] and gappy.threshold("rows") is None
    assert "rows: harm for 4096, 4194304" in gappy.preview
    both = decide("JF999", s)  # producer and rows open: the harm follows the rows only
    assert both.open_features() == ["rows"] and both.threshold("rows") is None
    table = _table([("arg", 4096, "none"), ("arg", 262144, "harm"), ("arg", 4194304, "none")], ("rows",))
    middle = decide("JF999", s, producer="arg")
    assert middle.threshold("rows").text() == "harm from 262,144 rows (not in every form there)"


def test_measured_verdicts_follow_the_timings_noise_statement():
    """The compiled figures decide first; a launch saved is decided by the clock: a consistent
    direction over SIGNAL_PAIRS pairs or more is signal, else only a ratio beyond the noise counts."""
    def pair(k0, k1, t0, t1, rows, temp0=0, temp1=0):
        return Row({"rows": rows}, F(k0, temp=temp0, seconds=t0), F(k1, temp=temp1, seconds=t1), "")

    faster = [pair(2, 1, 1.0, 0.9, 4194304) for _ in range(calibration.SIGNAL_PAIRS)]
    mixed = [pair(2, 1, 1.0, 0.9, 262144), pair(2, 1, 1.0, 1.05, 262144), pair(2, 1, 1.0, 0.7, 262144)]
    same = [pair(1, 1, 1.0, 0.5, 4194304)]  # no kernel or memory changed: whatever the clock says is noise
    added = [pair(1, 2, 1.0, 1.3, 4194304, temp1=16 << 20)]
    memory = [pair(2, 2, 1.0, 1.1, 262144, temp0=4096 << 10, temp1=0)]
    verdicts = measured_verdicts(faster + mixed + same + added + memory, 0.2, ("rows",))
    assert verdicts == ["harm"] * calibration.SIGNAL_PAIRS + ["none", "none", "harm", "none", "worse", "harm"]
    assert measured_verdicts(faster[:-1], 0.2, ("rows",)) == ["none"] * (calibration.SIGNAL_PAIRS - 1)


def test_the_h200_timings_decide_the_launch_rows_they_timed():
    """JF101.h200.json (calibrate/measured.py from shared/gpu/h200-turn4.md): the 2 -> 1 kernel pairs at
    4,194,304 rows are harm, at 262,144 rows noise; a fix that adds a kernel is worse. They decide the
    `h100` table's "launch" rows of the same forms, and nothing else."""
    measured = calibration.load_table("JF101", "h200")
    assert measured.meta["device"] == "NVIDIA H200 (measured 2026-11-26, jax 0.11.2)" and measured.meta["measured"]
    launch = [r for r in measured.rows if (r.before.kernels, r.after.kernels) == (2, 1) and r.before.temp_bytes == 0]
    assert {r.verdict for r in launch if r.features["rows"] == 4194304} == {"harm"}
    assert {r.verdict for r in launch if r.features["rows"] == 262144} == {"none"}
    assert {r.verdict for r in measured.rows if r.after.kernels > r.before.kernels} == {"worse"}
    compiled, effective = calibration.load_table("JF101", "h100"), calibration.table_for("JF101", "h100")
    changed = [(a, b) for a, b in zip(compiled.rows, effective.rows) if a.verdict != b.verdict]
    assert changed and all(a.verdict == "launch" and b.timing is not None for a, b in changed)
    assert {b.verdict for _, b in changed} == {"harm", "none"}
    assert all(b.verdict == "harm" for _, b in changed if b.features["rows"] == 4194304)
    assert calibration.table_for("JF101", "a100") is calibration.load_table("JF101", "a100")  # not measured
    s = Settings()
    timed = decide("JF101", s, reduction="sum", producer="arg", consumer="epilogue", size=2, rows=4194304,
                   dtype="float32", loop="none")
    assert timed.fires and timed.measured_on == measured.meta["device"]
    text = calibration.evidence_text(timed, "this form", "2 explicit terms")
    assert "timed on the NVIDIA H200 (measured 2026-11-26, jax 0.11.2): `" in text and "(0.8" in text
    assert decide("JF101", s, reduction="sum", producer="arg", consumer="epilogue", size=2, rows=262144,
                  dtype="float32", loop="none").outcome == "none"
    open_rows = decide("JF101", s, reduction="sum", producer="arg", consumer="epilogue", size=2, dtype="float32",
                       loop="none")
    assert open_rows.outcome == "some" and open_rows.threshold("rows").text() == "harm from 4,194,304 rows"
    page = calibration.page_section("JF101")
    assert "### Measured on a GPU: NVIDIA H200 (measured 2026-11-26, jax 0.11.2)" in page
    assert "| `sum(x)*2+1` | sum | arg | epilogue | 2 | 4194304 |" in page


def test_the_measured_table_reads_back_as_written(tmp_path):
    from jaxfuse_lint.calibrate.harness import reverdict, write_table

    measured = calibration.load_table("JF101", "h200")
    path = tmp_path / "JF101.h200.json"
    write_table(measured, str(path))
    import json

    assert Table.from_json(json.loads(path.read_text())) == measured
    assert reverdict(str(path)) == {}  # its verdicts are `measured_verdicts`' own


def test_a_table_reads_back_as_written(tmp_path):
    from jaxfuse_lint.calibrate.harness import write_table

    table = _table([("arg", 4096, "none"), ("stack", 4096, "harm")], ("rows",))
    path = tmp_path / "JF999.h100.json"
    write_table(table, str(path))
    import json

    assert Table.from_json(json.loads(path.read_text())) == table


def _tables():
    out = []
    for code in sorted(GENERATORS):
        for key in ("h100", "a100", "cpu"):
            if calibration.load_table(code, key) is not None:
                out.append((code, key))
    return out


TABLES = _tables()


def test_every_calibrated_rule_has_its_tables():
    for code in GENERATORS:
        for key in ("h100", "a100", "cpu"):
            assert calibration.load_table(code, key) is not None, f"{code} has no {key} table: " \
                f"python -m jaxfuse_lint.calibrate --rule {code} --target {key}"


def _settings(code: str, key: str) -> Settings:
    target = {"target": "cpu"} if key == "cpu" else {"target": "gpu", "gpu": key}
    return Settings(select=(code,), per_file_ignores=(), **target)


@pytest.mark.parametrize("code,key", TABLES, ids=[f"{c}-{k}" for c, k in TABLES])
def test_the_rule_decides_as_the_compiler_did(code, key):
    """Every variant for the default target (h100), a seeded fifth of them for the others; each with
    the verdict `decide` reads (`table_for`: a "launch" decided by a real GPU's timing where one
    timed the form)."""
    table = calibration.table_for(code, key)
    gen = generator(code)
    rows = [r for r in table.rows if r.verdict in calibration.MEASURED]
    if key != "h100":
        rows = random.Random(0).sample(rows, max(1, len(rows) // 5))
    settings = _settings(code, key)
    agree = false_harm = 0
    disagreements = []
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start:start + CHUNK]
        source, names = module(gen, [r.features for r in chunk])
        result = check_source(source, "variants.py", settings, with_fixes=False)
        assert not result.errors, result.errors
        lines = source.splitlines()
        starts = {i + 1: line.split("(")[0][4:] for i, line in enumerate(lines) if line.startswith("def ")}
        reported = set()
        for d in result.diagnostics:
            row = max(r for r in starts if r <= d.location.row)
            reported.add(starts[row])
        for name, row in zip(names, chunk):
            fired, harm = name in reported, row.verdict == "harm"
            agree += fired == harm
            false_harm += fired and not harm
            if fired != harm and len(disagreements) < 10:
                disagreements.append((dict(row.features), row.verdict, fired))
    n = len(rows)
    assert agree / n >= 0.95 and false_harm / n <= 0.02, (
        f"{code} on {key}: agreement {agree}/{n}, harm claimed where the compiler shows none {false_harm}/{n}; "
        f"first disagreements: {disagreements}")


def test_the_committed_tables_are_what_this_compiler_says():
    """A sample of each rule's XLA:GPU tables, compiled again (only where this jax made the table).
    One GPU model per rule, the H100 and the A100 in turn, two variants each: the two tables of a rule
    come from one compiler, and a table made by another compiler differs in most of its rows (each
    variant costs about a second to compile twice: four of every table took a minute)."""
    jax = pytest.importorskip("jax")
    from jaxfuse_lint.calibrate.harness import _measure_batch, fixed_batches

    gpu_keys = ("h100", "a100")
    checked = 0
    for code, key in TABLES:
        table = calibration.load_table(code, key)
        if key == "cpu" or table.meta.get("jax") != jax.__version__:
            continue
        if key != gpu_keys[sorted(GENERATORS).index(code) % len(gpu_keys)]:
            continue
        try:
            from jaxfuse_lint.calibrate.harness import _target

            _target(key)
        except Exception as exc:  # noqa: BLE001
            pytest.skip(f"no XLA:GPU compiler here: {exc}")
        sample = random.Random(1).sample([r for r in table.rows if r.verdict in ("harm", "none")], 2)
        (batch,) = fixed_batches(code, [r.features for r in sample])
        for (features, before, after, v, _, _), row in zip(_measure_batch(batch, key, 0), sample):
            assert (before, after, v) == (row.before, row.after, row.verdict), (code, key, features)
            checked += 1
    if not checked:
        pytest.skip("no table was made with the installed jax")


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CALIBRATED_CASES = sorted(p for p in FIXTURES.glob("JF*/calibrated*.py") if not p.name.endswith((".fixed.py", ".unsafe.py")))


@pytest.mark.parametrize("path", CALIBRATED_CASES, ids=[f"{p.parent.name}/{p.name}" for p in CALIBRATED_CASES])
def test_a_calibrated_finding_says_what_the_compiler_showed(path):
    """A default finding cites the table's figures; a preview one says what it depends on and
    offers no fix."""
    from tests.fixture_harness import case_settings

    code = path.parent.name
    result = check_source(path.read_bytes(), str(path), case_settings(path, code))
    found = [d for d in result.diagnostics if d.code == code]
    for d in found:
        if "(preview:" in d.message:
            assert d.fix is None, d.message
        else:
            assert " compiles to " in d.message and "; " in d.message, d.message
