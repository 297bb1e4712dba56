"""The rule pages in docs/rules/ and the README's rule table are generated from the rules: no drift."""
from pathlib import Path

from jaxfuse_lint.report.rule_docs import expected_files

ROOT = Path(__file__).resolve().parent.parent


def test_generated_docs_are_up_to_date():
    stale = [str(p.relative_to(ROOT)) for p, content in expected_files(ROOT).items()
             if not p.exists() or p.read_text(encoding="utf-8") != content]
    assert not stale, f"run `python -m jaxfuse_lint.report.rule_docs` to regenerate: {stale}"
