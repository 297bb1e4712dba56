"""Reporters: one module per output format, each exposing `render(diagnostics, context) -> str`.

The registry maps `--output-format` names to modules; adding a format means
adding a module and one line here.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from jaxfuse_lint.diagnostics import Diagnostic

FORMATS: dict[str, str] = {
    "concise": "concise",
    "full": "full",
    "json": "json_format",
    "json-lines": "json_lines",
}


@dataclass
class ReportContext:
    """What reporters may need beyond the diagnostics themselves."""

    # filename -> source text, for formats that quote code (full, sarif snippets)
    sources: dict[str, str] = field(default_factory=dict)
    show_fixes: bool = False
    unsafe_fixes: bool = False
    root: str | None = None  # paths are shown relative to this when possible
    color: bool = False


def renderer(name: str) -> Callable[[list[Diagnostic], ReportContext], str]:
    module = importlib.import_module(f"{__name__}.{FORMATS[name]}")
    return module.render


def render(name: str, diagnostics: list[Diagnostic], context: ReportContext | None = None) -> str:
    return renderer(name)(diagnostics, context or ReportContext())
