"""What the command line says besides the diagnostics: verbosity, warnings, colour, settings.

Levels (ruff's): `-v` adds what was configured, checked and skipped; the default adds
warnings and the summary; `-q` prints the diagnostics only; `-s` prints nothing (the exit
code still tells). The report and its closing lines (the summary: "Found 3 diagnostics.")
go to stdout, as ruff's do; warnings, errors and `-v`'s lines go to stderr, and so does the
summary where stdout carries something else (a `--diff` patch, a fixed buffer).

Colour: only on a terminal, never when NO_COLOR is set (https://no-color.org), always when
FORCE_COLOR is set (non-empty) even when piped; NO_COLOR wins when both are set.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import fields
from typing import Iterator, TextIO

import click


@contextmanager
def announcing_user_code(command: str) -> Iterator[None]:
    """While the block runs, each file of the user's is announced on stderr just before its
    code first runs (`jaxfuse-lint verify: this runs your code (importing m.py runs top-level
    code)`): `check` never imports the code it lints, the commands that do say so."""
    from jaxfuse_lint.verify import loader

    announced: set[str] = set()

    def announce(filename: str) -> None:
        if filename not in announced:
            announced.add(filename)
            click.echo(f"jaxfuse-lint {command}: this runs your code (importing {filename} runs top-level code)",
                       err=True)

    previous, loader.on_import = loader.on_import, announce
    try:
        yield
    finally:
        loader.on_import = previous


def color_wanted(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Output:
    def __init__(self, *, verbose: bool = False, quiet: bool = False, silent: bool = False) -> None:
        self.silent = silent
        self.quiet = quiet or silent
        self.verbose = verbose and not self.quiet
        self.err_color = color_wanted(sys.stderr)

    def info(self, message: str) -> None:
        """-v only."""
        if self.verbose:
            click.echo(f"jaxfuse-lint: {message}", err=True)

    def warn(self, message: str) -> None:
        """Shown unless -q/-s: something the user should know, not a diagnostic."""
        if not self.quiet:
            prefix = click.style("warning:", fg="yellow", bold=True) if self.err_color else "warning:"
            click.echo(f"{prefix} {message}", err=True, color=self.err_color)

    def summary(self, message: str) -> None:
        """A closing line printed apart from the report ("Would fix 2 diagnostics." after a `--diff`
        patch): on stderr, unless -q/-s. The report's own closing lines go with it (`closing`)."""
        if not self.quiet:
            click.echo(message, err=True, color=self.err_color)

    def closing(self, lines: list[str]) -> str:
        """The report's closing lines ("Found 3 diagnostics."), to print after it on stdout (or in its
        -o file); nothing with -q/-s."""
        return "" if self.quiet or not lines else "".join(f"{line}\n" for line in lines)

    def error(self, message: str) -> None:
        """Errors about the run itself (a file that cannot be read): shown unless -s."""
        if not self.silent:
            click.echo(f"jaxfuse-lint: {message}", err=True)


def describe_settings(settings) -> str:
    """--show-settings: every setting as `key = value`, TOML-like, after the config's path."""
    lines = [f"# config: {settings.config_path or '(none found: built-in defaults)'}",
             f"# project root: {settings.project_root}"]
    for f in fields(settings):
        if f.name in ("config_path", "project_root", "cache_dir_root", "extra"):
            continue
        value = getattr(settings, f.name)
        key = f.name.replace("_", "-")
        if f.name in ("per_file_ignores",):
            value = {pattern: list(codes) for pattern, codes in value}
        elif f.name == "verify":
            value = {target: {"args": list(spec.args), "static": dict(spec.static)} for target, spec in value}
        elif isinstance(value, tuple):
            value = list(value)
        if value is None:
            lines.append(f"# {key}: not set")
            continue
        lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines)


def _toml(value) -> str:
    import json

    if value is None:
        return '""  # not set'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else str(value)
