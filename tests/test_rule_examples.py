"""The VALID/INVALID examples written next to each rule (Fixit's habit) are tests."""
from __future__ import annotations

import pytest

from jaxfuse_lint.engine import check_source
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
def test_invalid_example_is_flagged(rule, index, source):
    result = check_source(source, "example.py", rule_settings(rule.code))
    assert not result.errors
    assert any(d.code == rule.code for d in result.diagnostics)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_documentation_has_ruffs_sections(rule):
    doc = rule.documentation()
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in doc, f"{rule.code} doc lacks {section}"
    assert rule.valid and rule.invalid, f"{rule.code} needs valid and invalid examples"
