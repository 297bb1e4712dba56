"""A fix's edits come from the top-level statements it changes (fixes.plan_to_fix), not from a
diff of the whole file (quadratic in the file's size: issue 27). They must say exactly what the
whole-file way says, on every fixture."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import Analysis
from jaxfuse_lint.codemods.plan import plan_to_fix
from jaxfuse_lint.core.edits import apply_edits

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(p for p in (ROOT / "fixtures").glob("JF*/*.py") if not p.name.endswith((".fixed.py", ".unsafe.py")))


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_local_edits_apply_to_the_same_text_as_a_whole_file_diff(path):
    source = path.read_text()
    try:
        module = cst.parse_module(source)
    except Exception:
        pytest.skip("not parsable")
    analysis = Analysis(module, str(path), replace(Settings(), select=("JF",)), source=source)
    for rule, v in analysis.violations:
        plan = analysis.plan(rule, v)
        if plan is None:
            continue
        local = plan_to_fix(module, plan, source, analysis.model.parent)
        whole = plan_to_fix(module, plan, source, None)
        assert (local is None) == (whole is None), (rule.code, v)
        if local is not None:
            # (blank lines around inserted statements may be aligned differently by the two diffs)
            assert apply_edits(source, local.edits) == apply_edits(source, whole.edits), (rule.code, v)


def test_edits_of_a_fix_in_a_long_file_come_from_its_own_statement():
    """The first fixture grown to many copies: the fixes of the last copy are the first copy's,
    moved down (and computing them does not diff the whole file per fix: see
    benchmarks/bench_fix_scaling.py for the time)."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_fix_scaling import grown

    from jaxfuse_lint.engine.pipeline import check_source

    text = grown((ROOT / "fixtures" / "JF201" / "fix_numpy.py").read_text(), 6)
    # The fixture's raw pattern, as in its folder (tests/fixture_harness.py): these edits are the point.
    result = check_source(text, "grown.py", replace(Settings(), extra=(RAW,)))
    fixes = [d for d in result.diagnostics if d.fix is not None]
    assert len(fixes) >= 12
    for d in fixes:
        fixed = apply_edits(text, d.fix.edits)
        assert compile(fixed, "grown.py", "exec")
