"""Rule metadata as the reporters show it (SARIF rules[], GitLab check names, review links).

Everything comes from `jaxfuse_lint.rules.all_rules()` (JF000, a file that could not
be parsed, included; the small entry here is a fallback only).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from jaxfuse_lint.core.diagnostics import DOCS_URL

TOOL_NAME = "jaxfuse-lint"
INFORMATION_URI = "https://github.com/jaxfuse-lint/jaxfuse-lint"
SYNTAX_ERROR = "JF000"


@dataclass(frozen=True)
class RuleInfo:
    code: str
    name: str
    summary: str
    fixable: str  # always | sometimes | never
    documentation: str  # markdown, ruff's sections
    url: str | None

    @property
    def what_it_does(self) -> str:
        """The "What it does" section as one paragraph (SARIF fullDescription)."""
        match = re.search(r"## What it does\s*\n(.*?)(?:\n## |\Z)", self.documentation, re.S)
        text = match.group(1) if match else self.summary
        return " ".join(text.split())


_SYNTAX_ERROR_INFO = RuleInfo(
    code=SYNTAX_ERROR,
    name="syntax-error",
    summary="The file could not be parsed, so no rule ran on it",
    fixable="never",
    documentation=(
        "# syntax-error (JF000)\n\nNo automatic fix.\n\n## What it does\n"
        "Reports a file that could not be parsed (a syntax error or an undecodable file). "
        "No rule runs on such a file until it parses.\n"
    ),
    url=None,
)


@lru_cache(maxsize=1)
def rule_table() -> dict[str, RuleInfo]:
    from jaxfuse_lint.rules import all_rules

    table = {}
    for r in all_rules():
        table[r.code] = RuleInfo(
            code=r.code, name=r.name, summary=r.summary, fixable=r.fixable,
            documentation=r.documentation(), url=DOCS_URL.format(name=r.name, code=r.code),
        )
    return table


def rule_info(code: str, name: str = "") -> RuleInfo:
    """Metadata for `code`; an unknown code (a plugin's, or a stale cache) gets a minimal entry."""
    info = rule_table().get(code)
    if info is None and code == SYNTAX_ERROR:
        return _SYNTAX_ERROR_INFO
    if info is not None:
        return info
    return RuleInfo(code=code, name=name or code.lower(), summary=name or code, fixable="never",
                    documentation=f"# {name or code} ({code})\n", url=None)


def tool_version() -> str:
    from jaxfuse_lint.core.version import __version__

    return __version__
