"""Reporters: one module per output format, each exposing `render(diagnostics, context) -> str`.

The registry maps `--output-format` names to modules; adding a format means
adding a module, one line here and its name in `core.config.OUTPUT_FORMATS`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from jaxfuse_lint.core.diagnostics import Diagnostic

# The module that renders each format name the configuration accepts (core.config.OUTPUT_FORMATS).
FORMATS: dict[str, str] = {
    "concise": "concise",
    "full": "full",
    "json": "json_format",
    "json-lines": "json_lines",
    "sarif": "sarif",
    "github": "github",
    "gitlab": "gitlab",
    "rdjson": "rdjson",
    "junit": "junit",
    "pylint": "pylint",
}


@dataclass
class ReportContext:
    """What reporters may need beyond the diagnostics themselves."""

    # filename -> source text, for formats that quote code (full, sarif snippets)
    sources: dict[str, str] = field(default_factory=dict)
    show_fixes: bool = False
    unsafe_fixes: bool = False
    # Paths are shown relative to this when possible (default: the working directory;
    # github/gitlab fall back to $GITHUB_WORKSPACE/$CI_PROJECT_DIR).
    root: str | None = None
    color: bool = False
    # Files an internal error left unchecked: the closing lines name them, never "All checks passed!".
    unchecked: list[str] = field(default_factory=list)
    # `[tool.jaxfuse-lint.severity]` (core/severity.py): the level formats that have one give a finding.
    severity: tuple[tuple[str, str], ...] = ()

    def level(self, code: str) -> str:
        """"error", "warning" or "note" (core/severity.py)."""
        from jaxfuse_lint.core.severity import level

        return level(code, self.severity)


def renderer(name: str) -> Callable[[list[Diagnostic], ReportContext], str]:
    module = importlib.import_module(f"{__name__}.{FORMATS[name]}")
    return module.render


def render(name: str, diagnostics: list[Diagnostic], context: ReportContext | None = None) -> str:
    return renderer(name)(diagnostics, context or ReportContext())
