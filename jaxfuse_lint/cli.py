"""Command line: `jaxfuse-lint [check] [PATHS]`, `rule`, `verify`, and friends.

Exit codes: 0 clean, 1 diagnostics (or changes with --diff), 2 usage or
configuration error. `check` and `--fix` never import jax and never import or
run the code they lint.
"""
from __future__ import annotations

import difflib
import sys
from collections import Counter
from pathlib import Path

import click

from jaxfuse_lint import __version__
from jaxfuse_lint.config import ConfigError, Settings, load_settings, with_cli_overrides
from jaxfuse_lint.diagnostics import Applicability, Diagnostic
from jaxfuse_lint.report import FORMATS, ReportContext, render

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


# Commands defined outside this module, imported only when they run (or `--help` lists
# them): `check` on a warm cache must not pay for the verifier, the review bot or the
# language server.
LAZY_COMMANDS = {
    "verify": "jaxfuse_lint.verify.command:verify_command",
    "review": "jaxfuse_lint.review.command:review_command",
    "server": "jaxfuse_lint.server.command:server_command",
}


class DefaultCommandGroup(click.Group):
    """`jaxfuse-lint PATHS` and `jaxfuse-lint --fix PATHS` mean `jaxfuse-lint check ...`."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.list_commands(ctx) and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name not in self.commands and name in LAZY_COMMANDS:
            import importlib

            module, attr = LAZY_COMMANDS[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jaxfuse-lint")
def cli() -> None:
    """jaxfuse-lint: find JAX code that XLA cannot fuse well, rewrite it, and prove the rewrite.

    `check` (the default) and `--fix` only read source text: they never import jax
    and never import or execute the code they lint. Only `verify` runs user code.
    """


def _load(config: str | None, paths: tuple[str, ...], select, extend_select, ignore, cache_dir=None) -> Settings:
    start = paths[0] if paths and paths[0] != "-" else "."
    settings = load_settings(config, start=start)
    return with_cli_overrides(settings, select=select, extend_select=extend_select, ignore=ignore, cache_dir=cache_dir)


def _fail(message: str) -> None:
    click.echo(f"jaxfuse-lint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@cli.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the configured set), e.g. JF1,JF203.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="concise", show_default=True)
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of each diagnostic.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are diagnostics.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(), default=None, help="Where to keep the cache (default .jaxfuse_lint_cache).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="0: one per core",
              help="Worker processes to check files in.")
@click.option("--config", type=click.Path(dir_okay=False), default=None, help="A pyproject.toml (or jaxfuse-lint.toml) to use.")
@click.option("--stdin-filename", default=None, help="The name of the file given on stdin as `-` (for editors).")
@click.option("--fix", is_flag=True, help="Apply safe fixes (and unsafe ones with --unsafe-fixes).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change results (review them).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing. Exit 1 if there would be changes.")
@click.option("--show-fixes", is_flag=True, help="List what was fixed.")
@click.option("--verify", "verify_fixes", is_flag=True,
              help="With --fix: verify every changed function that has a verify spec and roll back fixes that do not "
                   "prove out. This imports and runs your code.")
def check_command(paths, select, extend_select, ignore, output_format, statistics, exit_zero, no_cache, cache_dir,
                  jobs, config, stdin_filename, fix, unsafe_fixes, diff, show_fixes, verify_fixes) -> None:
    """Check PATHS (default: the current directory) for code XLA cannot fuse well."""
    try:
        settings = _load(config, paths, select, extend_select, ignore, cache_dir)
    except ConfigError as exc:
        _fail(str(exc))
        return
    paths = paths or (".",)
    if "-" in paths:
        _check_stdin(settings, stdin_filename or "-", output_format, fix or diff, unsafe_fixes, diff, exit_zero)
        return
    from jaxfuse_lint.discovery import discover

    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        _fail(f"{missing[0]}: no such file or directory")
    files = list(discover(list(paths), settings))
    context = ReportContext(show_fixes=show_fixes, unsafe_fixes=unsafe_fixes)

    from jaxfuse_lint import progress, runner

    # A progress bar only for people watching a terminal, never in machine-readable output.
    bar = progress.Progress(len(files), enabled=progress.wanted() and output_format in ("concise", "full"),
                            label="Fixing" if fix or diff else "Checking")
    try:
        with bar:
            if fix or diff:
                run = runner.fix_files(files, settings, unsafe=unsafe_fixes, jobs=jobs or None, progress=bar)
            else:
                run = runner.check_files(files, settings, jobs=jobs or None, use_cache=not no_cache, progress=bar)
    except KeyboardInterrupt:
        click.echo("jaxfuse-lint: interrupted; no file was written", err=True)
        sys.exit(130)
    for err in run.errors:
        click.echo(f"jaxfuse-lint: {err}", err=True)

    changed = [o for o in run.fixes if o.changed]
    if diff:
        for o in changed:
            name = o.filename
            sys.stdout.write("".join(difflib.unified_diff(
                o.original.splitlines(keepends=True), o.source.splitlines(keepends=True), f"a/{name}", f"b/{name}")))
        n = sum(len(o.fixed) for o in changed)
        click.echo(f"Would fix {n} diagnostic{'s' if n != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}.", err=True)
        sys.exit(EXIT_FINDINGS if changed and not exit_zero else EXIT_CLEAN)

    if fix:
        if verify_fixes:
            from jaxfuse_lint.fix_verify import verify_outcomes

            verify_outcomes(changed, settings, echo=lambda m: click.echo(m, err=True))
            changed = [o for o in changed if o.changed]
        from jaxfuse_lint.writer import write_atomic

        for o in changed:
            try:
                write_atomic(o.filename, o.source, o.encoding)
            except OSError as exc:
                click.echo(f"jaxfuse-lint: {o.filename}: cannot write file: {exc.strerror}", err=True)

    diagnostics = run.diagnostics
    context.sources = run.sources
    if statistics:
        _print_statistics(diagnostics)
    else:
        out = render(output_format, diagnostics, context)
        if out:
            sys.stdout.write(out)
    if fix and (show_fixes or output_format in ("concise", "full")):
        fixed = [d for o in changed for d in o.fixed]
        if show_fixes and fixed:
            click.echo("Fixed:", err=True)
            for d in fixed:
                click.echo(f"  {d.filename}:{d.location.row}:{d.location.column}: {d.code} {d.message}", err=True)
        if fixed or output_format == "concise":
            click.echo(f"Fixed {len(fixed)} diagnostic{'s' if len(fixed) != 1 else ''}, "
                       f"{len(diagnostics)} remaining.", err=True)
    elif output_format in ("concise", "full") and not statistics:
        _print_summary(diagnostics, unsafe_fixes)
    sys.exit(EXIT_FINDINGS if diagnostics and not exit_zero else EXIT_CLEAN)


def _print_summary(diagnostics: list[Diagnostic], unsafe: bool) -> None:
    if not diagnostics:
        click.echo("All checks passed!", err=True)
        return
    n = len(diagnostics)
    fixable = sum(1 for d in diagnostics if d.fix and d.fix.applicability is Applicability.SAFE)
    unsafe_n = sum(1 for d in diagnostics if d.fix and d.fix.applicability is Applicability.UNSAFE)
    msg = f"Found {n} diagnostic{'s' if n != 1 else ''}."
    if fixable:
        msg += f"\n[*] {fixable} fixable with `jaxfuse-lint --fix`."
    if unsafe_n and not unsafe:
        msg += f"\n{unsafe_n} more fixable with `--fix --unsafe-fixes` (review those)."
    click.echo(msg, err=True)


def _print_statistics(diagnostics: list[Diagnostic]) -> None:
    from jaxfuse_lint.rules import get_rule

    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if d.fix and d.fix.applicability is Applicability.SAFE)
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        rule = get_rule(code)
        name = rule.name if rule else "syntax-error"
        mark = "[*]" if fixable.get(code) else "   "
        click.echo(f"{n:>5}\t{code}\t{mark} {name}")


def _check_stdin(settings, filename, output_format, fix, unsafe, diff, exit_zero) -> None:
    from jaxfuse_lint.engine import check_source, fix_source

    data = sys.stdin.buffer.read()
    if fix:
        outcome = fix_source(data, filename, settings, unsafe=unsafe)
        if diff:
            sys.stdout.write("".join(difflib.unified_diff(
                outcome.original.splitlines(keepends=True), outcome.source.splitlines(keepends=True),
                f"a/{filename}", f"b/{filename}")))
            sys.exit(EXIT_FINDINGS if outcome.changed and not exit_zero else EXIT_CLEAN)
        sys.stdout.write(outcome.source)  # editors replace the buffer with what --fix prints
        for err in outcome.errors + outcome.dropped:
            click.echo(f"jaxfuse-lint: {err}", err=True)
        sys.exit(EXIT_FINDINGS if outcome.remaining and not exit_zero else EXIT_CLEAN)
    result = check_source(data, filename, settings)
    for err in result.errors:
        click.echo(f"jaxfuse-lint: {err}", err=True)
    context = ReportContext(sources={filename: result.source or ""}, unsafe_fixes=unsafe)
    out = render(output_format, result.diagnostics, context)
    sys.stdout.write(out)
    sys.exit(EXIT_FINDINGS if result.diagnostics and not exit_zero else EXIT_CLEAN)


@cli.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule_command(code, show_all, output_format) -> None:
    """Print a rule's documentation (`jaxfuse-lint rule JF203`), or list them all (`--all`)."""
    import json

    from jaxfuse_lint.rules import all_rules, get_rule

    if show_all or not code:
        rules = all_rules()
        if output_format == "json":
            click.echo(json.dumps([{"code": r.code, "name": r.name, "summary": r.summary, "fix": r.fixable,
                                    "explanation": r.documentation()} for r in rules], indent=2))
            return
        for r in rules:
            fix = {"always": "fix", "sometimes": "fix*", "never": ""}[r.fixable]
            click.echo(f"{r.code}  {r.name:<40} {fix:<5} {r.summary}")
        return
    rule = get_rule(code)
    if rule is None:
        _fail(f"unknown rule `{code}`; `jaxfuse-lint rule --all` lists them")
    if output_format == "json":
        click.echo(json.dumps({"code": rule.code, "name": rule.name, "summary": rule.summary, "fix": rule.fixable,
                               "explanation": rule.documentation()}, indent=2))
    else:
        click.echo(rule.documentation())


def main() -> None:
    cli(prog_name="jaxfuse-lint")


if __name__ == "__main__":
    main()
