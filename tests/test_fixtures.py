"""Every fixture folder: exact diagnostics (row, column, end), exact fixes, and fixing twice == once."""
from __future__ import annotations

import pytest

from tests.fixture_harness import UPDATE, diagnostics_text, fixed_text, input_files, rule_settings
from jaxfuse_lint.engine import fix_source

CASES = input_files()


def _id(p):
    return f"{p.parent.name}/{p.name}"


@pytest.mark.parametrize("path", CASES, ids=_id)
def test_diagnostics_match_expected(path):
    code = path.parent.name
    expected = path.with_suffix(".expected")
    actual = diagnostics_text(path, code)
    if UPDATE:
        expected.write_text(actual)
    assert expected.exists(), f"missing {expected.name}: run with JAXFUSE_UPDATE_FIXTURES=1 and review it"
    assert actual == expected.read_text()


@pytest.mark.parametrize("path", CASES, ids=_id)
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_fix_matches_expected_and_is_idempotent(path, unsafe):
    code = path.parent.name
    target = path.with_name(path.stem + (".unsafe.py" if unsafe else ".fixed.py"))
    if not target.exists() and not UPDATE:
        # No expected file means: the fix must leave this case alone.
        assert fixed_text(path, code, unsafe) == path.read_text(), f"{target.name} is missing but fixes changed the file"
        return
    actual = fixed_text(path, code, unsafe)
    if UPDATE:
        if actual != path.read_text():
            target.write_text(actual)
        elif target.exists():
            target.unlink()
        return
    assert actual == target.read_text()
    again = fix_source(actual, str(target), rule_settings(code), unsafe=unsafe)
    assert again.source == actual, "a second --fix changed the fixed file"


def test_every_rule_has_fixtures():
    from jaxfuse_lint.rules import all_rules

    folders = {p.parent.name for p in CASES}
    missing = [r.code for r in all_rules() if r.code not in folders]
    assert not missing, f"rules without fixtures/<CODE>/: {missing}"
