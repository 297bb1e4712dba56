"""The `jaxfuse-lint review` command."""
from __future__ import annotations

import json
import sys

import click

HELP = """Lint only the lines a pull request changed and write a GitHub review payload.

The changed lines come from `git diff BASE...HEAD`; the head versions of the
changed Python files and notebooks under PATHS (default: the whole repository) are linted
and only findings that touch an added line are kept. Writes:

\b
  --output   JSON for POST /repos/{owner}/{repo}/pulls/{n}/reviews: one comment
             per finding, with the fix as a ```suggestion block when its lines
             are in the diff (stdout by default);
  --summary  the Markdown summary (also the review's body): counts per rule and
             what --fix would change.

Nothing is sent anywhere: post the payload with `gh api` (see
examples/github-review.yml). Exit codes as `check`: 0 nothing found, 1
findings (0 with --exit-zero), 2 usage error.

--verify compiles and runs each fixed function that has a
[tool.jaxfuse-lint.verify] spec, before and after its fix, and adds the
measured evidence to the comment. That imports and runs your code.
"""


@click.command("review", help=HELP, short_help="Lint a pull request's changed lines; write a GitHub review payload.")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--base", required=True, metavar="REF", help="The pull request's base (branch, tag or commit).")
@click.option("--head", default="HEAD", show_default=True, metavar="REF", help="The pull request's head commit.")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Where to write the review payload (JSON).")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False, allow_dash=True), default=None,
              help="Also write the Markdown summary here (e.g. \"$GITHUB_STEP_SUMMARY\"; appended to, not replaced).")
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the configured set).")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--config", type=click.Path(dir_okay=False), default=None, help="A pyproject.toml (or jaxfuse-lint.toml) to use.")
@click.option("--verify", "verify", is_flag=True,
              help="Measure each fix whose function has a verify spec and quote the evidence (runs your code).")
@click.option("--target", "compile_for", type=click.Choice(["gpu", "cpu", "tpu"], case_sensitive=False),
              default=None, help="Backend the code runs on: rules, fixes and --verify decide for it (default: the "
                                 "config's `target`, else gpu).")
@click.option("--gpu", default=None, metavar="MODEL|FILE",
              help="With --verify: the GPU model to compile for when no GPU is present (default: the config's "
                   "`gpu`, else h100).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--follow-output-link", is_flag=True,
              help="Let --output and --summary write through a symbolic link (by default one is refused: a pull "
                   "request could commit `review.json` as a link to a file outside the checkout).")
def review_command(paths, base, head, output, summary_path, select, extend_select, ignore, config, verify,
                   compile_for, gpu, exit_zero, follow_output_link) -> None:
    from jaxfuse_lint.core.config import ConfigError, load_settings, with_cli_overrides
    from jaxfuse_lint.review.core import review_payload, run_review
    from jaxfuse_lint.review.diff import ReviewError
    from jaxfuse_lint.review.summary import render_summary

    if summary_path == "-" and output == "-":
        _fail("--summary - and --output - would both write to stdout; send one of them to a file")
    from jaxfuse_lint.core.writer import LinkRefused, append_output, check_output_path, write_output

    def refuse(path: str, exc: OSError) -> None:
        if isinstance(exc, LinkRefused):
            _fail(f"{path}: cannot write the output file: {exc} (--follow-output-link writes through it)")
        _fail(f"{path}: cannot write the output file: {exc.strerror or exc}")

    for path in (output, summary_path):  # a link there is refused before the review, not after it
        if path and path != "-":
            try:
                check_output_path(path, follow_links=follow_output_link)
            except LinkRefused as exc:
                refuse(path, exc)
            except OSError:
                pass  # said when it is written
    try:
        start = paths[0] if paths else "."
        settings = load_settings(config, start=start)
        settings = with_cli_overrides(settings, select=select, extend_select=extend_select, ignore=ignore,
                                      target=compile_for, gpu=gpu)
        from jaxfuse_lint.runtime.use import with_profile

        # The project's runtime profile (`jaxfuse-lint record`), when present: facts for check, signatures for --verify.
        settings, profile = with_profile(settings, None)
        from jaxfuse_lint.cli.output import announcing_user_code

        with announcing_user_code("review --verify"):
            review = run_review(base, tuple(paths), settings, head=head, verify=verify,
                                echo=lambda m: click.echo(f"jaxfuse-lint: {m}", err=True), profile=profile)
    except (ConfigError, ReviewError) as exc:
        _fail(str(exc))
        return
    for err in review.errors + review.notes:
        click.echo(f"jaxfuse-lint: {err}", err=True)
    payload = json.dumps(review_payload(review), indent=2, ensure_ascii=False) + "\n"
    if output == "-":
        sys.stdout.write(payload)
    else:  # whole, atomically, never through a link (core/writer.py)
        try:
            write_output(output, payload, "utf-8", follow_links=follow_output_link)
        except OSError as exc:
            refuse(output, exc)
    if summary_path:
        text = render_summary(review)
        if summary_path == "-":
            sys.stdout.write(text)
        else:  # appended to ("$GITHUB_STEP_SUMMARY"), never through a link
            try:
                append_output(summary_path, text, "utf-8", follow_links=follow_output_link)
            except OSError as exc:
                refuse(summary_path, exc)
    n = len(review.comments)
    click.echo(f"jaxfuse-lint: {n} finding{'s' if n != 1 else ''} on changed lines "
               f"({sum(1 for c in review.comments if c.suggested)} with a suggestion).", err=True)
    sys.exit(1 if n and not exit_zero else 0)


def _fail(message: str) -> None:
    click.echo(f"jaxfuse-lint: error: {message}", err=True)
    sys.exit(2)
