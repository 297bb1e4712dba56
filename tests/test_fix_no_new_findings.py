"""A fix never creates a finding of another rule: for every fixture, the fixed text has no
more diagnostics of any other code than the input had (if a fix did, `check` would promise
N fixes and `--fix` would report more fixed and more remaining)."""
from __future__ import annotations

from collections import Counter

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from tests.fixture_harness import input_files, rule_settings

CASES = [p for p in input_files() if p.parent.name != "JF000"]


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_fixed_output_has_no_new_findings_of_other_rules(path, unsafe):
    """`--fix` (every rule) leaves no more findings of any code than the input had: a fix
    that creates a finding of another rule must fix that one too (the next pass of the fix
    loop), or not be offered."""
    settings = Settings()
    source = path.read_text()
    outcome = fix_source(source, str(path), settings, unsafe=unsafe)
    if outcome.source == source:
        return
    before = Counter(d.code for d in check_source(source, str(path), settings).diagnostics)
    after = Counter(d.code for d in outcome.remaining)
    new = {c: after[c] - before[c] for c in after if after[c] > before[c]}
    assert not new, f"--fix{' --unsafe-fixes' if unsafe else ''} left new findings: {new}"


def test_the_jf301_fix_is_checked_against_every_rule():
    """The case of issue 17: hoisting a lambda out of a loop but not out of the function made a
    JF302 finding; fixing JF301 alone must not leave any finding of another code behind."""
    path = next(p for p in CASES if p.name == "fix_hoist.py" and p.parent.name == "JF301")
    everything = Settings(select=("ALL",))
    source = path.read_text()
    for unsafe in (False, True):
        fixed = fix_source(source, str(path), rule_settings("JF301"), unsafe=unsafe).source
        before = Counter(d.code for d in check_source(source, str(path), everything).diagnostics if d.code != "JF301")
        after = Counter(d.code for d in check_source(fixed, str(path), everything).diagnostics if d.code != "JF301")
        assert after <= before, (unsafe, after - before)


def test_all_fixes_together_report_what_check_promised(tmp_path):
    """`check` counts N safe fixes; `--fix` fixes exactly those (none created and then fixed)."""
    path = next(p for p in CASES if p.name == "fix_hoist.py" and p.parent.name == "JF301")
    settings = Settings()
    promised = sum(1 for d in check_source(path.read_text(), str(path), settings).diagnostics
                   if d.fix is not None and d.fix.applicability.value == "safe")
    outcome = fix_source(path.read_text(), str(path), settings)
    assert len(outcome.fixed) == promised
