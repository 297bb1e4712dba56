"""Every fixture folder: exact diagnostics (row, column, end), exact fixes, and fixing twice == once."""
from __future__ import annotations

import pytest

from tests.fixture_harness import UPDATE, diagnostics_text, fixed_text, input_files, rule_settings
from jaxfuse_lint.engine.pipeline import fix_source

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
    original = path.read_text()
    safe_target = path.with_name(path.stem + ".fixed.py")
    unsafe_target = path.with_name(path.stem + ".unsafe.py")
    actual = fixed_text(path, code, unsafe)
    if UPDATE:
        if not unsafe:
            if actual != original:
                safe_target.write_text(actual)
            elif safe_target.exists():
                safe_target.unlink()
        else:
            # .unsafe.py only exists where unsafe fixes change more than the safe ones.
            safe_result = safe_target.read_text() if safe_target.exists() else original
            if actual != safe_result:
                unsafe_target.write_text(actual)
            elif unsafe_target.exists():
                unsafe_target.unlink()
        return
    # The expected result: .unsafe.py, else (also for --unsafe-fixes) .fixed.py, else unchanged.
    candidates = [unsafe_target, safe_target] if unsafe else [safe_target]
    target = next((c for c in candidates if c.exists()), None)
    expected = target.read_text() if target is not None else original
    assert actual == expected, f"fix result differs from {target.name if target else 'the unchanged input'}"
    if actual != original:
        again = fix_source(actual, str(path), rule_settings(code, path), unsafe=unsafe)
        assert again.source == actual, "a second --fix changed the fixed file"


def test_every_rule_has_fixtures():
    from jaxfuse_lint.rules import all_rules

    folders = {p.parent.name for p in CASES}
    missing = [r.code for r in all_rules() if r.code not in folders]
    assert not missing, f"rules without fixtures/<CODE>/: {missing}"
