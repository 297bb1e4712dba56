"""Command line: `jaxfuse-lint [check] [PATHS]`, `rule`, `verify`, and friends.

Exit codes (ruff's): 0 clean, or nothing to check (a warning says "No Python files
found"), or --fix-only; 1 diagnostics (a path that cannot be read is one, JF000; or changes
with --diff, or a fix applied with --exit-non-zero-on-fix); 2 usage or configuration error,
or a file an internal error left unchecked (a crash, a timeout: named in the closing lines;
--exit-zero does not hide it). `check` and `--fix` never
import jax and never import or run the code they lint.
"""
from __future__ import annotations

import sys

import click

from jaxfuse_lint.core.version import __version__
from jaxfuse_lint.core.config import ConfigError, Settings, load_settings, with_cli_overrides
from jaxfuse_lint.report import FORMATS, ReportContext, render
from jaxfuse_lint.report.paths import printable

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


# Commands defined outside this module, imported only when they run (or `--help` lists
# them): `check` on a warm cache must not pay for the verifier, the review bot or the
# language server.
LAZY_COMMANDS = ("verify", "review", "server", "record", "explain", "daemon")


def lazy_command(name: str) -> click.Command:
    """The command NAME of LAZY_COMMANDS, imported now."""
    if name == "verify":
        from jaxfuse_lint.cli.verify import verify_command as command
    elif name == "review":
        from jaxfuse_lint.cli.review import review_command as command
    elif name == "server":
        from jaxfuse_lint.cli.server import server_command as command
    elif name == "record":
        from jaxfuse_lint.cli.record import record_command as command
    elif name == "explain":
        from jaxfuse_lint.cli.explain import explain_command as command
    elif name == "daemon":
        from jaxfuse_lint.cli.daemon import daemon_command as command
    else:
        raise KeyError(name)
    return command


class DefaultCommandGroup(click.Group):
    """`jaxfuse-lint PATHS` and `jaxfuse-lint --fix PATHS` mean `jaxfuse-lint check ...`; options
    before a subcommand are its own; an unknown command or option is a usage error with the closest
    names (cli/arguments.py)."""

    def parse_args(self, ctx, args):
        from jaxfuse_lint.cli.arguments import with_command

        return super().parse_args(ctx, with_command(self, ctx, list(args)))

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.NoSuchOption as exc:
            from jaxfuse_lint.cli.arguments import close_options

            exc.possibilities = close_options(exc.option_name, exc.ctx.command if exc.ctx is not None else None)
            raise

    def list_commands(self, ctx):
        return sorted(set(super().list_commands(ctx)) | set(LAZY_COMMANDS))

    def get_command(self, ctx, name):
        if name not in self.commands and name in LAZY_COMMANDS:
            self.add_command(lazy_command(name), name)
        return super().get_command(ctx, name)


@click.group(cls=DefaultCommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="jaxfuse-lint")
def cli() -> None:
    """jaxfuse-lint: find JAX code that XLA cannot fuse well, rewrite it, and prove the rewrite.

    `check` (the default) and `--fix` only read source text: they never import jax
    and never import or execute the code they lint. `verify` and `explain` import
    and run your code, and so do `check --fix --verify` and `review --verify`: each
    says so on stderr before it runs any. `record` runs the command you give it.
    """


def _load(config: str | tuple[str, ...] | None, paths: tuple[str, ...], select, extend_select, ignore, cache_dir=None,
          target=None, gpu=None, preview=None, isolated: bool = False, **overrides) -> Settings:
    """The settings of a run: the configuration file (named with --config PATH, else found upward from
    the first path; none with --isolated), then the `--config KEY=VALUE` settings over it (ruff's), then
    the command line's own options."""
    from jaxfuse_lint.core.config import isolated_settings, with_config_overrides

    start = paths[0] if paths and paths[0] != "-" else "."
    files, inline = _config_arguments(config)
    if isolated and files:
        raise ConfigError(f"--config {files[0]}: a config file cannot be used with --isolated")
    if len(files) > 1:
        raise ConfigError(f"--config names one config file, got {len(files)}: {', '.join(files)}")
    settings = isolated_settings(start) if isolated else load_settings(files[0] if files else None, start=start)
    settings = with_config_overrides(settings, inline)
    return with_cli_overrides(settings, select=select, extend_select=extend_select, ignore=ignore, cache_dir=cache_dir,
                              target=target, gpu=gpu, preview=preview, **overrides)


def _config_arguments(config: str | tuple[str, ...] | None) -> tuple[list[str], list[str]]:
    """--config values: (config files, `KEY=VALUE` settings). A value is a file when one exists by
    that name or it has no `=` (ruff's rule); else it is a TOML setting."""
    import os

    values = [config] if isinstance(config, str) else list(config or ())
    files = [v for v in values if os.path.exists(v) or "=" not in v]
    return files, [v for v in values if v not in files]


def _fail(message: str) -> None:
    click.echo(f"jaxfuse-lint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@cli.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the configured set), e.g. JF1,JF203.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default=None,
              help="How to print diagnostics (default: `output-format` from the config, else concise).")
@click.option("--statistics", is_flag=True, help="Print counts per rule instead of each diagnostic.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are diagnostics.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the cache.")
@click.option("--cache-dir", type=click.Path(), default=None, help="Where to keep the cache (default .jaxfuse_lint_cache).")
@click.option("--jobs", "-j", type=click.IntRange(min=0), default=0, show_default="0: one per core",
              help="Worker processes to check files in.")
@click.option("--config", multiple=True, metavar="PATH | KEY=VALUE",
              help="A pyproject.toml (or jaxfuse-lint.toml) to use, or a setting that overrides the file's, in TOML "
                   "(`--config \"select = ['JF1']\"`, `--config preview=true`); repeatable.")
@click.option("--isolated", is_flag=True, help="Ignore every configuration file (use the defaults and the command line).")
@click.option("--stdin-filename", default=None, help="The name of the file given on stdin as `-` (for editors).")
@click.option("--fix", is_flag=True, help="Apply safe fixes (and unsafe ones with --unsafe-fixes).")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change results (review them).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing. Exit 1 if there would be changes.")
@click.option("--show-fixes", is_flag=True, help="List what was fixed.")
@click.option("--fixable", multiple=True, help="Rule codes or prefixes whose fixes may be applied (replaces the "
                                               "configured `fixable`).")
@click.option("--extend-fixable", multiple=True, help="Rule codes or prefixes whose fixes may be applied, in addition.")
@click.option("--unfixable", multiple=True, help="Rule codes or prefixes whose fixes are never applied (added to the "
                                                 "configured `unfixable`).")
@click.option("--ignore-noqa", is_flag=True, help="Ignore every `# noqa` comment and file-level exemption.")
@click.option("--target", type=click.Choice(["gpu", "cpu", "tpu"], case_sensitive=False), default=None,
              help="Backend the code runs on; rules and fixes decide for it (default: the config's `target`, "
                   "else gpu).")
@click.option("--gpu", default=None, metavar="MODEL|FILE",
              help="With --fix --verify: the GPU model to compile for when no GPU is present (h100, a100, a6000, "
                   "or an XLA target config file; default: the config's `gpu`, else h100).")
@click.option("--verify", "verify_fixes", is_flag=True,
              help="With --fix: verify every changed function that has a verify spec and roll back fixes that do not "
                   "prove out. This imports and runs your code.")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False), default=None,
              help="A runtime profile from `jaxfuse-lint record` (default: .jaxfuse_lint/profile.json when present).")
@click.option("--no-profile", is_flag=True, help="Ignore any runtime profile.")
@click.option("--force-exclude", is_flag=True,
              help="Apply exclude patterns to paths named on the command line too (for pre-commit).")
@click.option("--preview/--no-preview", default=None,
              help="Also report preview rules and findings (whose evidence is not yet good enough for the default "
                   "output); overrides `preview` in the config.")
@click.option("--confirm", is_flag=True,
              help="Confirm findings about kernels, temporaries and constants by compiling their functions where "
                   "argument shapes are known (imports and runs your code; docs/verify.md#confirm).")
@click.option("--show-undecided", is_flag=True,
              help="List the patterns seen but not decided (their findings assume a premise), with what each assumes.")
@click.option("--show-files", is_flag=True, help="List the files that would be checked, then exit.")
@click.option("--show-settings", is_flag=True, help="Print the resolved settings (and where they come from), then exit.")
@click.option("-v", "--verbose", is_flag=True, help="Say which config was used, which files were checked and skipped.")
@click.option("-q", "--quiet", is_flag=True, help="Print diagnostics only: no summary, warnings or progress.")
@click.option("-s", "--silent", is_flag=True, help="Print nothing; only the exit code tells.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), default=None,
              help="Write the report to this file instead of stdout (never through a symbolic link).")
@click.option("--follow-output-link", is_flag=True,
              help="Let -o write through a symbolic link (the output file's, or a folder's in the working directory).")
@click.option("--exclude", multiple=True, help="Patterns to exclude (replaces the configured `exclude`).")
@click.option("--extend-exclude", multiple=True, help="Patterns to exclude in addition.")
@click.option("--fix-only", is_flag=True, help="Apply fixes; do not report or exit non-zero for what is left.")
@click.option("--no-fix", is_flag=True, help="Do not apply fixes (overrides --fix).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if nothing is left.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments to every line with a diagnostic.")
@click.option("--no-daemon", is_flag=True, help="Run here even if a `jaxfuse-lint daemon` runs.")
@click.option("--watch", "-w", is_flag=True, help="Check again whenever a checked file (or the configuration) "
                                                  "changes; Ctrl-C ends it.")
def check_command(paths, select, extend_select, ignore, output_format, statistics, exit_zero, no_cache, cache_dir,
                  jobs, config, isolated, stdin_filename, fix, unsafe_fixes, diff, show_fixes, fixable, extend_fixable,
                  unfixable, ignore_noqa, target, gpu, verify_fixes,
                  profile_path, no_profile, force_exclude, preview, confirm, show_undecided,
                  show_files, show_settings, verbose, quiet, silent, output_file, follow_output_link, exclude,
                  extend_exclude, fix_only, no_fix, exit_non_zero_on_fix, add_noqa, no_daemon, watch) -> None:
    """Check PATHS (default: the current directory) for code XLA cannot fuse well.

    Paths named here are always checked, even inside excluded or gitignored folders
    (--force-exclude applies the excludes to them too). When no source file is found,
    a warning says so on stderr and the exit code is 0 (ruff's behaviour).
    """
    if watch:
        from jaxfuse_lint.cli.watch import watch_check

        refused = [flag for flag, given in (("-", "-" in paths), ("--add-noqa", add_noqa), ("--show-files", show_files),
                                            ("--show-settings", show_settings), ("--diff", diff)) if given]
        if refused:
            _fail(f"--watch cannot be used with {refused[0]}")
        params = dict(click.get_current_context().params, watch=False)
        watch_check(lambda: check_command.callback(**params), paths or (".",),
                    lambda: _load(config, paths, select, extend_select, ignore, cache_dir, target, gpu, preview,
                                  isolated, fixable=fixable, extend_fixable=extend_fixable, unfixable=unfixable,
                                  ignore_noqa=ignore_noqa))
        return
    from jaxfuse_lint.cli.output import Output

    out = Output(verbose=verbose, quiet=quiet, silent=silent)
    try:
        settings = _load(config, paths, select, extend_select, ignore, cache_dir, target, gpu, preview, isolated,
                         fixable=fixable, extend_fixable=extend_fixable, unfixable=unfixable, ignore_noqa=ignore_noqa)
        from jaxfuse_lint.runtime.use import with_profile

        settings, profile = with_profile(settings, profile_path, no_profile)
    except ConfigError as exc:
        _fail(str(exc))
        return
    if output_file:  # a link there is refused before the run, not after it
        _check_output_file(output_file, follow_output_link)
    if exclude or extend_exclude:
        from dataclasses import replace

        from jaxfuse_lint.core.config import split_patterns

        if exclude:
            settings = replace(settings, exclude=split_patterns(exclude))
        if extend_exclude:
            settings = replace(settings, extend_exclude=settings.extend_exclude + split_patterns(extend_exclude))
    if output_format is None:
        output_format = settings.output_format or "concise"
    paths = paths or (".",)
    keep_preview = settings.preview
    if confirm:  # preview findings too: a confirmed one is reported
        from dataclasses import replace as _replace

        settings = _replace(settings, preview=True)
    fix = (fix or fix_only) and not no_fix
    if show_settings:
        from jaxfuse_lint.cli.output import describe_settings

        click.echo(describe_settings(settings))
        sys.exit(EXIT_CLEAN)
    if "-" in paths:
        _check_stdin(settings, stdin_filename or "-", output_format, fix or diff, unsafe_fixes, diff, exit_zero)
        return
    from jaxfuse_lint.discover.files import discover_files

    checked = None
    if (fix and not diff) or add_noqa:
        from jaxfuse_lint.core.checked_paths import CheckedPaths

        checked = CheckedPaths(paths)  # before anything is read: what the named paths are now
    walk_cache = None
    if not no_cache and not (fix or diff or add_noqa):
        from jaxfuse_lint.run.cache import for_settings

        walk_cache = for_settings(settings)
    # A named path that does not exist is checked like a file: reading it gives its JF000 (ruff's E902).
    found = discover_files(list(paths), settings, force_exclude=force_exclude, cache=walk_cache)
    files = found.files
    out.info(f"config: {settings.config_path or 'none found; built-in defaults'}")
    unreadable_folders = []  # JF000 each, reported with the run's findings
    for path, why in found.skipped:
        if why.startswith("cannot read the folder: "):
            from jaxfuse_lint.engine.pipeline import FileResult
            from jaxfuse_lint.parse.syntax_errors import unreadable

            unreadable_folders.append(FileResult(path, [unreadable(path, why.split(": ", 1)[1], "folder")]))
        elif why.startswith(("cannot read", "not a regular file")):  # it looks like a source
            out.warn(f"{printable(path)}: {why}; skipped")
        else:
            out.info(f"skipped {path}: {why}")
    for path in found.not_sources:
        out.warn(f"{path}: not a Python source file; skipped")
    if show_files:
        for f in sorted(files, key=lambda p: str(p)):
            click.echo(printable(str(f)))
        if not files:
            out.warn("No Python files found under the given path(s)")
        sys.exit(EXIT_CLEAN)
    if not files and not unreadable_folders:
        # Not "All checks passed!": nothing was checked. Exit 0 as ruff does (pre-commit
        # passes only excluded files with --force-exclude), but say so.
        out.warn("No Python files found under the given path(s); nothing was checked")
        if output_format not in ("concise", "full"):  # machine-readable output stays well-formed
            _emit(render(output_format, [], ReportContext(severity=settings.severity)), output_file, out,
                  follow_output_link)
        sys.exit(EXIT_CLEAN)
    out.info(f"checking {len(files)} file{'s' if len(files) != 1 else ''}")
    context = ReportContext(show_fixes=show_fixes, unsafe_fixes=unsafe_fixes, severity=settings.severity)
    if add_noqa:
        _add_noqa(files, settings, jobs, out, checked)
        return

    from jaxfuse_lint.run import progress

    # A progress bar only for people watching a terminal, never in machine-readable output.
    from jaxfuse_lint.run import runner
    bar = progress.Progress(len(files), enabled=progress.wanted() and output_format in ("concise", "full")
                            and not out.quiet, label="Fixing" if fix or diff else "Checking")
    try:
        with bar:
            if fix or diff:
                run = runner.fix_files(files, settings, unsafe=unsafe_fixes, jobs=jobs or None, progress=bar)
            else:
                run = runner.check_files(files, settings, jobs=jobs or None, use_cache=not no_cache, progress=bar)
    except KeyboardInterrupt:
        click.echo("jaxfuse-lint: interrupted; no file was written", err=True)
        sys.exit(130)
    run.results += unreadable_folders
    for err in run.errors:
        out.error(err)
    out.info(_counts(run.stats, len(files)))

    changed = [o for o in run.fixes if o.changed]
    if diff:
        text = "".join(_unified_diff(o.original, o.source, o.filename) for o in changed)
        _emit(text, output_file, out, follow_output_link)
        n = sum(len(o.fixed) for o in changed)
        out.summary(f"Would fix {n} diagnostic{'s' if n != 1 else ''} in {len(changed)} "
                    f"file{'s' if len(changed) != 1 else ''}.")
        for line in _hidden_fixes_lines(run.diagnostics, unsafe_fixes):
            out.summary(line)  # stdout is the patch: its closing lines go to stderr (ruff's)
        if run.unchecked:
            from jaxfuse_lint.report.summary import unchecked_text

            out.summary(unchecked_text(run.unchecked))
            sys.exit(EXIT_ERROR)  # an internal error is not a finding: --exit-zero does not hide it
        sys.exit(EXIT_FINDINGS if changed and not exit_zero else EXIT_CLEAN)

    if fix:
        if verify_fixes:
            from jaxfuse_lint.runtime.fix_rollback import verify_outcomes

            verified_sources = {id(o): o.source for o in changed}
            verify_outcomes(changed, settings, echo=lambda m: click.echo(m, err=True), profile=profile)
            _recheck_rolled_back(run, [o for o in changed if o.source != verified_sources[id(o)]], settings)
            changed = [o for o in changed if o.changed]
        _write_fixes(run, changed, checked, settings, out)

    diagnostics = run.diagnostics
    if confirm:
        from jaxfuse_lint.runtime.confirm import confirm_findings

        diagnostics = confirm_findings(diagnostics, settings, echo=lambda m: click.echo(m, err=True),
                                       keep_preview=keep_preview)
    hidden_from = diagnostics  # what is left, before --fix-only drops it from the report
    # Patterns seen but not decided (preview-tier findings, preview off): counted, listed on request.
    undecided = [] if keep_preview or fix else run.undecided
    fixed = [d for o in changed for d in o.fixed] if fix else []
    if fix_only:
        diagnostics = []  # ruff: fixes applied, what is left is neither reported nor counted
    context.sources = run.sources
    context.unchecked = run.unchecked
    text_format = output_format in ("concise", "full")
    report = ""
    if statistics:
        if output_format not in ("concise", "full", "json"):
            _fail(f"--statistics supports --output-format concise, full or json, not {output_format}")
        from jaxfuse_lint.report.statistics import render_statistics

        context.color = not output_file and _color()
        report = render_statistics(diagnostics, context, json_format=output_format == "json")
    elif not fix_only or not text_format:
        context.color = text_format and not output_file and _color()
        shown = diagnostics
        if show_undecided and output_format in ("json", "json-lines", "sarif"):  # as notes, not findings
            from dataclasses import replace

            from jaxfuse_lint.core.diagnostics import Diagnostic

            shown = sorted(diagnostics + [replace(d, extra={**d.extra, "undecided": True}) for d in undecided],
                           key=Diagnostic.sort_key)
        report = render(output_format, shown, context)
    # The closing lines follow a text report (ruff's; machine formats carry none).
    closing: list[str] = []
    if text_format:
        if fix and show_fixes and fixed:
            closing.append("Fixed:")
            for d in fixed:
                where = printable(d.filename) + (f":cell {d.cell}" if d.cell is not None else "")
                closing.append(f"  {where}:{d.location.row}:{d.location.column}: {d.code} {d.message}")
        if fix:
            if fix_only:
                closing.append(f"Fixed {len(fixed)} diagnostic{'s' if len(fixed) != 1 else ''}.")
            else:
                closing.append(f"Fixed {len(fixed)} diagnostic{'s' if len(fixed) != 1 else ''}, "
                               f"{len(diagnostics)} remaining.")
            closing += _hidden_fixes_lines(hidden_from, unsafe_fixes)
            if run.unchecked:
                from jaxfuse_lint.report.summary import unchecked_text

                closing.append(unchecked_text(run.unchecked))
        elif not statistics:  # the statistics table ends with these lines itself
            from jaxfuse_lint.report.summary import summary_text, undecided_lines

            if show_undecided:
                closing += undecided_lines(undecided)
            closing.append(summary_text(diagnostics, unsafe_fixes, undecided, listed=show_undecided,
                                        unchecked=run.unchecked))
    _emit(report + out.closing(closing), output_file, out, follow_output_link)
    if run.unchecked and not (text_format and (fix or not statistics or diagnostics)):
        from jaxfuse_lint.report.summary import unchecked_text

        out.summary(unchecked_text(run.unchecked))  # a machine-readable report has no closing lines: on stderr
    if profile is not None and text_format and not fix and not statistics:
        from jaxfuse_lint.runtime.use import stale_note, withheld_note

        for note in (stale_note(profile), withheld_note(profile, settings, files)):
            if note:
                out.summary(note)  # about the run, not its findings: on stderr, as warnings are
    if run.unchecked:  # a file was not checked: an internal error, not a finding (--exit-zero does not hide it)
        sys.exit(EXIT_ERROR)
    failed = bool(diagnostics) or (exit_non_zero_on_fix and bool(fixed))
    sys.exit(EXIT_FINDINGS if failed and not exit_zero else EXIT_CLEAN)


def _counts(stats: dict, files: int) -> str:
    """-v's account of the run: every file once (analysed, from the cache, or without JAX), then the
    extra passes of files analysed again after a module they import changed."""
    total = stats.get("files", files)
    analysed = stats.get("analysed_files", stats.get("analysed", 0))
    cached = min(stats.get("cached", 0), total - analysed)
    parts = [f"{analysed} analysed", f"{cached} from the cache"]
    rest = total - analysed - cached
    if rest:
        parts.append(f"{rest} without JAX (syntax checked only)")
    text = f"{total} file{'s' if total != 1 else ''}: {', '.join(parts)}"
    again = stats.get("analysed", 0) - analysed
    if again > 0:
        text += f"; {again} more pass{'es' if again != 1 else ''} after a module they import changed"
    return text


def _write_fixes(run, changed, checked, settings: Settings, out) -> None:
    """Write the fixed files, each only while it is still the file that was read, inside the
    checked paths (core/checked_paths.py). A file that cannot be written safely is left alone,
    and said so; what it still has is reported (found again in the text that was read)."""
    from jaxfuse_lint.core.writer import NotWritten

    left = []
    for o in changed:
        try:
            written = checked.write(o.filename, o.source.encode(o.encoding), run.identities.get(o.filename))
        except NotWritten as exc:
            out.warn(f"{o.filename}: not fixed: {exc}")
            left.append(o)
            continue
        except OSError as exc:
            out.error(f"{o.filename}: cannot write file: {exc.strerror or exc}")
            left.append(o)
            continue
        for note in written.notes:
            out.warn(f"{o.filename}: fixed; {note}")
        for tmp in written.removed:
            out.warn(f"{tmp}: removed a temporary file left by an interrupted earlier run")
    for o in left:
        o.source, o.fixed = o.original, []
    if left:
        _recheck_rolled_back(run, left, settings)


def _hidden_fixes_lines(diagnostics, unsafe_fixes: bool) -> list[str]:
    """After a fix mode without --unsafe-fixes: the fixes it left out, and why each is unsafe."""
    if unsafe_fixes:
        return []
    from jaxfuse_lint.report.summary import hidden_fixes_text

    text = hidden_fixes_text(diagnostics)
    return [text] if text else []


def _recheck_rolled_back(run, outcomes, settings: Settings) -> None:
    """What remains in files whose fixes `--verify` rolled back (or that could not be written),
    located in the text that stays."""
    from jaxfuse_lint.engine.pipeline import check_source, runtime_facts_for

    by_name = {o.filename: o for o in outcomes}
    for i, result in enumerate(run.results):
        outcome = by_name.get(result.filename)
        if outcome is not None:
            # A runtime profile's facts are about the original text: they follow it by name.
            fresh = check_source(outcome.source, outcome.filename, settings,
                                 runtime=runtime_facts_for(outcome.original, settings))
            outcome.remaining = fresh.diagnostics
            run.results[i] = fresh


def _color() -> bool:
    from jaxfuse_lint.cli.output import color_wanted

    return color_wanted(sys.stdout)


def _check_output_file(output_file: str, follow_link: bool) -> None:
    from jaxfuse_lint.core.writer import LinkRefused, check_output_path

    try:
        check_output_path(output_file, follow_links=follow_link)
    except LinkRefused as exc:
        _fail(f"{output_file}: cannot write the output file: {exc} (--follow-output-link writes through it)")
    except OSError:
        pass  # said when the report is written


def _emit(text: str, output_file: str | None, out, follow_link: bool = False) -> None:
    """The report: to stdout, or to -o FILE (written whole, atomically, never through a
    symbolic link unless `follow_link`: core/writer.py, write_output); -s prints nothing."""
    if output_file:
        from jaxfuse_lint.core.writer import LinkRefused, write_output

        try:
            write_output(output_file, text, "utf-8", follow_links=follow_link)
        except LinkRefused as exc:
            _fail(f"{output_file}: cannot write the output file: {exc} (--follow-output-link writes through it)")
        except OSError as exc:
            _fail(f"{output_file}: cannot write the output file: {exc.strerror or exc}")
        return
    if text and not out.silent:
        sys.stdout.write(text)


def _add_noqa(files, settings, jobs, out, checked) -> None:
    """--add-noqa: a `# noqa: CODE` comment on the line of every diagnostic (ruff's way to
    adopt a linter on a large codebase), merged into an existing `# noqa: ...`. Files are
    written as `--fix` writes them: inside the checked paths, and only while still the file
    that was checked."""
    from jaxfuse_lint.run import runner
    from jaxfuse_lint.core.writer import NotWritten
    from jaxfuse_lint.discover.source_bytes import read_identified_source
    from jaxfuse_lint.engine.noqa import add_noqa, add_noqa_to_notebook
    from jaxfuse_lint.parse.notebook import NotebookError, decode_text, is_notebook

    run = runner.check_files(files, settings, jobs=jobs or None, use_cache=False)
    for err in run.errors:
        out.error(err)
    # {file: {row: codes}}; a notebook's rows are (cell, row in cell), as its diagnostics give them.
    by_file: dict[str, dict] = {}
    for d in run.diagnostics:
        if d.code in ("JF000", "JF901") or d.noqa_row is None:  # JF000 cannot be suppressed; JF901 is the noqa itself
            continue
        row = (d.cell, d.noqa_row) if is_notebook(d.filename) else d.noqa_row
        by_file.setdefault(d.filename, {}).setdefault(row, set()).add(d.code)
    added = 0
    for filename, rows in by_file.items():
        from jaxfuse_lint.engine.pipeline import decode

        try:
            data, identity = read_identified_source(filename, settings.size_limit(filename))
            if identity != run.identities.get(filename):
                out.warn(f"{filename}: no `# noqa` added: changed since it was checked (run again)")
                continue
            if is_notebook(filename):
                encoding = "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8"
                text = decode_text(data)
                new_text, n, skipped_rows = add_noqa_to_notebook(text, rows)
            else:
                text, encoding = decode(data)
                new_text, n, skipped_rows = add_noqa(text, rows)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
            out.error(f"{filename}: cannot read file: {exc}")
            continue
        except NotebookError as exc:
            out.error(f"{filename}: no `# noqa` added: {exc}")
            continue
        for row in skipped_rows:
            where = f"cell {row[0]}:{row[1]}" if isinstance(row, tuple) else row
            out.warn(f"{filename}:{where}: no `# noqa` added: the line ends inside a string or a continuation")
        if n and new_text != text:
            try:
                checked.write(filename, new_text.encode(encoding), identity)
            except NotWritten as exc:
                out.warn(f"{filename}: no `# noqa` added: {exc}")
                continue
            except OSError as exc:
                out.error(f"{filename}: cannot write file: {exc.strerror or exc}")
                continue
            added += n
    out.summary(f"Added {added} noqa directive{'s' if added != 1 else ''}.")
    sys.exit(EXIT_CLEAN)


def _unified_diff(original: str, fixed: str, name: str) -> str:
    """What `--diff` prints for one file; a notebook's is one diff per changed cell (ruff's)."""
    import difflib

    from jaxfuse_lint.parse.notebook import is_notebook
    from jaxfuse_lint.report.notebooks import unified_diff

    name = printable(name)  # a header per file: on one line, valid UTF-8
    if is_notebook(name):
        return unified_diff(original, fixed, name)
    return "".join(difflib.unified_diff(
        original.splitlines(keepends=True), fixed.splitlines(keepends=True), f"a/{name}", f"b/{name}"))


def _check_stdin(settings, filename, output_format, fix, unsafe, diff, exit_zero) -> None:
    from jaxfuse_lint.engine.pipeline import check_source, fix_source

    data = sys.stdin.buffer.read()
    if fix:
        outcome = fix_source(data, filename, settings, unsafe=unsafe)
        if outcome.undecodable is not None:  # not text: left alone, and said why
            for d in outcome.remaining:
                click.echo(f"jaxfuse-lint: {d.filename}:{d.location.row}:{d.location.column}: {d.code} {d.message}",
                           err=True)
            if not diff:
                sys.stdout.flush()
                sys.stdout.buffer.write(data)  # editors replace the buffer with what --fix prints
            sys.exit(EXIT_FINDINGS if not exit_zero else EXIT_CLEAN)
        if diff:
            sys.stdout.write(_unified_diff(outcome.original, outcome.source, filename))
            sys.exit(EXIT_FINDINGS if outcome.changed and not exit_zero else EXIT_CLEAN)
        # Editors replace the buffer with what --fix prints: the input's own bytes when nothing
        # changed, else the fixed text in the input's encoding (its coding cookie, its BOM).
        sys.stdout.flush()
        sys.stdout.buffer.write(outcome.source.encode(outcome.encoding) if outcome.changed else data)
        sys.stdout.buffer.flush()
        for err in outcome.errors + outcome.dropped:
            click.echo(f"jaxfuse-lint: {err}", err=True)
        sys.exit(EXIT_FINDINGS if outcome.remaining and not exit_zero else EXIT_CLEAN)
    result = check_source(data, filename, settings)
    for err in result.errors:
        click.echo(f"jaxfuse-lint: {err}", err=True)
    context = ReportContext(sources={filename: result.source or ""}, unsafe_fixes=unsafe, severity=settings.severity)
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

    def as_json(r) -> dict:
        return {"code": r.code, "name": r.name, "summary": r.summary, "fix": r.fixable, "preview": r.preview,
                "explanation": r.documentation()}

    if show_all or not code:
        rules = all_rules()
        if output_format == "json":
            click.echo(json.dumps([as_json(r) for r in rules], indent=2))
            return
        for r in rules:
            fix = {"always": "fix", "sometimes": "fix*", "never": ""}[r.fixable]
            tier = "preview" if r.preview else ""
            click.echo(f"{r.code}  {r.name:<40} {fix:<5} {tier:<8}{r.summary}")
        click.echo("\nfix: always fixable; fix*: sometimes. preview: runs only with `--preview` or `preview = true`.")
        return
    rule = get_rule(code)
    if rule is None:
        _fail(f"unknown rule `{code}`; `jaxfuse-lint rule --all` lists them")
    if output_format == "json":
        click.echo(json.dumps(as_json(rule), indent=2))
    else:
        click.echo(rule.documentation())


def main() -> None:
    from jaxfuse_lint.cli.working_directory import cwd_exists

    if not cwd_exists():
        sys.exit(EXIT_ERROR)
    cli(prog_name="jaxfuse-lint")


if __name__ == "__main__":
    main()
