"""Run the engine over many files: read each, check or fix it, collect results in a stable order."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from jaxfuse_lint.config import Settings
from jaxfuse_lint.diagnostics import Diagnostic
from jaxfuse_lint.engine import FileResult, FixOutcome, check_source, fix_source, syntax_error_diagnostic


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    fixes: list[FixOutcome] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        out = [d for r in self.results for d in r.diagnostics]
        out.sort(key=Diagnostic.sort_key)
        return out

    @property
    def sources(self) -> dict[str, str]:
        return {r.filename: r.source for r in self.results if r.source is not None}


def read_file(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def check_files(files: Iterable[Path], settings: Settings) -> RunResult:
    run = RunResult()
    for path in files:
        filename = str(path)
        try:
            data = read_file(path)
        except (OSError, UnicodeError) as exc:
            run.errors.append(f"{filename}: cannot read file: {exc.strerror if isinstance(exc, OSError) else exc}")
            continue
        result = check_source(data, filename, settings)
        run.results.append(result)
        run.errors.extend(result.errors)
    return run


def fix_files(files: Iterable[Path], settings: Settings, *, unsafe: bool) -> RunResult:
    """Fix every file in memory; nothing is written here (the caller writes, or prints a diff)."""
    run = RunResult()
    for path in files:
        filename = str(path)
        try:
            data = read_file(path)
        except OSError as exc:
            run.errors.append(f"{filename}: cannot read file: {exc.strerror}")
            continue
        try:
            outcome = fix_source(data, filename, settings, unsafe=unsafe)
        except Exception as exc:  # unparsable: report as JF000 and leave the file alone
            result = FileResult(filename)
            result.diagnostics.append(syntax_error_diagnostic(filename, exc))
            run.results.append(result)
            continue
        run.fixes.append(outcome)
        run.errors.extend(outcome.errors)
        run.errors.extend(outcome.dropped)
        result = FileResult(filename, outcome.remaining, outcome.source)
        run.results.append(result)
    return run


def relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
