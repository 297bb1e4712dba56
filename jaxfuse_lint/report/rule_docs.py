"""Rule documentation for people: `docs/rules/<name>.md` pages and the README's rule table.

Both are generated from the rules themselves (`python -m jaxfuse_lint.report.rule_docs`), and a
test fails when they drift, so the docs users read are the docs the code carries.
"""
from __future__ import annotations

import sys
from pathlib import Path

from jaxfuse_lint.rules import all_rules

START, END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"
FIX = {"always": "yes", "sometimes": "sometimes", "never": ""}


def rules_table() -> str:
    lines = ["| Code | Name | What it finds | Fix | Tier |", "|---|---|---|---|---|"]
    for r in all_rules():
        tier = "preview" if r.preview else ("opt-in" if not r.default_enabled else "default")
        lines.append(f"| {r.code} | [{r.name}](docs/rules/{r.name}.md) | {r.summary} | {FIX[r.fixable]} | {tier} |")
    return "\n".join(lines)


TEST_FILES = """## Test files
Off by default in test files (`**/tests/**`, `**/test/**`, `test_*.py`,
`*_test.py`, `conftest.py`): test code runs once, so a performance finding there is rarely
worth a change. The default `per-file-ignores` table says so (see
`jaxfuse-lint check --show-settings`); an empty `per-file-ignores` table turns
it back on, `extend-per-file-ignores` adds to it. See
[configuration](../configuration.md#test-code).
"""


def rule_page(rule) -> str:
    from jaxfuse_lint.core.config import PERFORMANCE_CODES

    examples = []
    if rule.code.startswith(PERFORMANCE_CODES):
        examples.append(TEST_FILES)
    if rule.invalid:
        examples.append("## Flagged (from the rule's own test cases)\n")
        for src in rule.invalid:
            examples.append("```python\n" + src.rstrip() + "\n```\n")
    if rule.valid:
        examples.append("## Not flagged (from the rule's own test cases)\n")
        for src in rule.valid:
            examples.append("```python\n" + src.rstrip() + "\n```\n")
    return rule.documentation() + "\n" + "\n".join(examples)


def expected_files(root: Path) -> dict[Path, str]:
    files = {root / "docs" / "rules" / f"{r.name}.md": rule_page(r) for r in all_rules()}
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    if START in text and END in text:
        before, rest = text.split(START, 1)
        _, after = rest.split(END, 1)
        files[readme] = f"{before}{START}\n{rules_table()}\n{END}{after}"
    return files


def main(argv: list[str] | None = None) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2]
    (root / "docs" / "rules").mkdir(parents=True, exist_ok=True)
    for path, content in expected_files(root).items():
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            print(f"wrote {path.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
