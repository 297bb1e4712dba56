"""flake8 plugin: the same diagnostics under flake8's `JF` prefix.

flake8 hands plugins the file's lines; jaxfuse-lint parses them itself (with
libcst), applies its own `[tool.jaxfuse-lint]` settings, and returns 0-based
columns, because flake8 adds one to what a plugin reports (the off-by-one
TorchFix ships). `# noqa` is left to flake8, which applies it to every plugin.

flake8 does not read Jupyter notebooks (it checks `*.py` files); use
`jaxfuse-lint check`, which does, or nbQA.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from jaxfuse_lint.core.version import __version__


@lru_cache(maxsize=64)
def _settings_for(directory: str):
    from jaxfuse_lint.core.config import ConfigError, Settings, load_settings

    try:
        settings = load_settings(None, start=directory)
    except ConfigError:
        settings = Settings()
    # flake8 owns suppression and selection (its --select/--extend-ignore/# noqa).
    return replace(settings, select=("JF",), ignore=(), per_file_ignores=())


class JaxFusePlugin:
    name = "jaxfuse-lint"
    version = __version__

    def __init__(self, tree, filename: str = "stdin", lines: list[str] | None = None) -> None:
        self.filename = filename
        self.lines = lines or []

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from jaxfuse_lint.engine.pipeline import check_source

        directory = str(Path(self.filename).resolve().parent) if self.filename not in ("stdin", "-") else "."
        settings = _settings_for(directory)
        source = "".join(self.lines)
        result = check_source(source, self.filename, settings, with_fixes=False, apply_noqa=False)
        diagnostics = result.diagnostics
        if self.filename.lower().endswith(".ipynb"):
            # flake8 only reads notebooks when told to (`--filename=*.ipynb`), and then as
            # the JSON text: findings go on the lines of the file that hold their cell rows.
            from jaxfuse_lint.report.notebooks import file_located

            diagnostics = file_located(diagnostics, {self.filename: source})
        for d in diagnostics:
            if d.code == "JF000":
                continue  # flake8 reports syntax errors itself (E999)
            yield d.location.row, d.location.column - 1, f"{d.code} {d.message}", type(self)
