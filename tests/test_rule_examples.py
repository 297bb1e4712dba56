"""The VALID/INVALID examples written next to each rule (Fixit's habit) are tests."""
from __future__ import annotations

import pytest

from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.rules import all_rules
from tests.fixture_harness import rule_settings

VALID = [(r, i, src) for r in all_rules() for i, src in enumerate(r.valid)]
INVALID = [(r, i, src) for r in all_rules() for i, src in enumerate(r.invalid)]


@pytest.mark.parametrize("rule,index,source", VALID, ids=[f"{r.code}-valid{i}" for r, i, _ in VALID])
def test_valid_example_is_clean(rule, index, source):
    result = check_source(source, "example.py", rule_settings(rule.code))
    assert not result.errors
    assert [d for d in result.diagnostics if d.code == rule.code] == []


@pytest.mark.parametrize("rule,index,source", INVALID, ids=[f"{r.code}-invalid{i}" for r, i, _ in INVALID])
def test_invalid_example_is_flagged(rule, index, source, tmp_path):
    settings = rule_settings(rule.code)
    if getattr(rule, "measured", False):
        # A measured rule needs a recorded run: run the example under `record`.
        settings = _recorded_settings(rule, source, tmp_path)
    result = check_source(source, "example.py", settings)
    assert not result.errors
    assert any(d.code == rule.code for d in result.diagnostics)


def _recorded_settings(rule, source, tmp_path):
    import subprocess
    import sys

    from jaxfuse_lint.runtime.use import with_profile

    (tmp_path / "example.py").write_text(source)
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "record", "-o", "profile.json", "--",
                           sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    settings, _ = with_profile(rule_settings(rule.code), str(tmp_path / "profile.json"))
    return settings


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_documentation_has_ruffs_sections(rule):
    doc = rule.documentation()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in doc, f"{rule.code} doc lacks {section}"
    assert rule.valid and rule.invalid, f"{rule.code} needs valid and invalid examples"
