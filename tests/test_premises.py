"""The premise ledger (model/premises.py): every finding states its premises, and one mechanism
decides its tier from them, for every rule.

- every rule that runs on the model declares the claims its findings rest on, and every finding it
  makes carries a premise for each of them, with a valid status;
- no finding is reported by default with an assumed premise; one with an assumed premise is in the
  preview tier, names what it assumes and has no fix; one with a disproved premise is not reported;
- no rule decides a tier itself: a Violation's `preview` is read-only, derived from its premises;
- the JSON, SARIF and full outputs carry the premises.
"""
from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import Analysis, check_source
from jaxfuse_lint.model.premises import (ASSUMED, CLAIMS, DEFAULT, DISPROVED, PREVIEW, PROVEN, RECORDED, SILENT,
                                         STATUSES, assumed, disproved, proven, tier)
from jaxfuse_lint.rules import all_rules
from jaxfuse_lint.rules.base import Rule, Violation, message

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = ROOT / "jaxfuse_lint" / "rules"
MODEL_RULES = [r for r in all_rules() if r.stage == "model"]


def _fixture_files() -> list[Path]:
    files = sorted(p for p in (ROOT / "fixtures").glob("JF*/*.py")
                   if not p.name.endswith((".fixed.py", ".unsafe.py")))
    files += sorted((ROOT / "benchmarks" / "recall").glob("*.py"))
    return files


def test_every_model_rule_declares_its_claims():
    for rule in MODEL_RULES:
        assert rule.premises, f"{rule.code} states no premises"
        unknown = set(rule.premises) - set(CLAIMS)
        assert not unknown, f"{rule.code}: claims not in the ledger's vocabulary: {unknown}"


def test_preview_is_read_only_and_derived_from_premises():
    node = cst.Name("x")
    v = Violation(node, message("m"), premises=(proven("traced", "`x`", "value-flow"),))
    assert v.preview is None and v.tier == DEFAULT
    with pytest.raises(AttributeError):
        v.preview = "assumed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Violation(node, message("m"), preview="assumed")  # type: ignore[call-arg]
    v.with_premises(assumed("called-repeatedly", "`f`", "assumes its users call it more than once"))
    assert v.tier == PREVIEW and "".join(v.preview) == "assumes its users call it more than once"
    v.with_premises(disproved("harm", "`f`", "calibration-table", "no form shows harm"))
    assert v.tier == SILENT


def test_tiers():
    p, r = proven("size", "`x`", "shape-analysis"), Premise_recorded()
    a, d = assumed("size", "`x`", "unknown"), disproved("harm", "`x`", "calibration-table")
    assert tier([p, r]) == DEFAULT
    assert tier([p, a]) == PREVIEW
    assert tier([p, a, d]) == SILENT
    assert tier([]) == DEFAULT
    with pytest.raises(ValueError):
        proven("not-a-claim", "`x`", "inference")


def Premise_recorded():
    from jaxfuse_lint.model.premises import recorded

    return recorded("size", "`x`", "every recorded call had size 3")


def test_no_rule_decides_its_own_tier():
    """Rules state premises; only the engine reads a finding's tier. A rule module that reads
    `.preview`/`.tier` of a finding or passes a tier to a Violation decides outside the ledger."""
    offenders = []
    for path in sorted(RULES_DIR.glob("*.py")):
        if path.name == "base.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("preview", "tier", "premises") and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "settings")):
                if isinstance(node.ctx, ast.Store) or node.attr != "premises":
                    offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.keyword) and node.arg == "preview":
                offenders.append(f"{path.name}:{node.lineno} preview=")
    assert not offenders, offenders


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_finding_carries_its_rules_premises(path):
    """With the preview tier on, every finding carries a premise for each claim its rule states; by
    default no finding has an assumed premise, and every preview finding says what it assumes and
    offers no fix."""
    source = path.read_text(encoding="utf-8")
    claims = {r.code: set(r.premises) for r in MODEL_RULES}
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.skip("a deliberate syntax error (JF000)")
    analysis = Analysis(module, str(path), replace(Settings(), preview=True))
    assert not analysis.errors, analysis.errors  # a rule that raised loses its findings silently
    for rule, v in analysis.violations:
        statuses = {p.status for p in v.premises}
        assert statuses <= set(STATUSES)
        stated = {p.claim for p in v.premises}
        missing = claims[rule.code] - stated
        assert not missing, f"{rule.code} at {analysis.locator.line(v.node)}: no premise for {missing}"
        assert DISPROVED not in statuses
        if ASSUMED in statuses:
            assert v.preview, f"{rule.code}: an assumed premise that names nothing"
            assert analysis.plan(rule, v) is None, f"{rule.code}: a preview finding with a fix"
    for d in check_source(source, str(path), Settings()).diagnostics:
        if d.code in claims:
            assert d.premises, f"{d.code} at {d.location.row}: a default finding without premises"
            assert all(p.status in (PROVEN, RECORDED) for p in d.premises), (d.code, d.location.row, d.premises)


def test_outputs_carry_the_premises(tmp_path):
    from jaxfuse_lint.report import ReportContext, render

    src = "import jax\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"
    path = tmp_path / "m.py"
    path.write_text(src)
    diagnostics = check_source(src, str(path), Settings()).diagnostics
    assert [d.code for d in diagnostics] == ["JF402"]
    context = ReportContext(sources={str(path): src})
    data = json.loads(render("json", diagnostics, context))
    assert {p["premise"].split("(")[0] for p in data[0]["premises"]} == {"runs-traced", "traced"}
    assert all(p["status"] == "proven" and p["source"] for p in data[0]["premises"])
    sarif = json.loads(render("sarif", diagnostics, context))
    assert sarif["runs"][0]["results"][0]["properties"]["premises"] == data[0]["premises"]
    full = render("full", diagnostics, context)
    assert "proven    traced(`x > 0`): value-flow: computed from `x`" in full


def test_a_convention_is_an_assumption():
    """A flax Module body's input is a tracer by convention only: a comparison of it is in the
    preview tier, naming the assumption; used as an array in the body, it is proven traced."""
    src = ("import flax.linen as nn\n"
           "class Pos(nn.Module):\n"
           "    def __call__(self, length):\n"
           "        if length > 8:\n"
           "            return 1\n"
           "        return 0\n")
    assert check_source(src, "m.py", Settings()).diagnostics == []
    found = check_source(src, "m.py", replace(Settings(), preview=True)).diagnostics
    assert [d.code for d in found] == ["JF402"]
    assert "framework Module's body, is taken to be an array by convention" in found[0].message
    used = src.replace("        if length > 8:", "        y = length - 1\n        if y.sum() > 8:")
    found = check_source(used, "m.py", Settings()).diagnostics
    assert [d.code for d in found] == ["JF402"]
    assert {p.status for p in found[0].premises} == {PROVEN}
