"""The `jaxfuse-lint verify` command."""
from __future__ import annotations

import sys
from typing import Any

import click

from jaxfuse_lint.verify.errors import VerifyError

HELP = """Prove a rewrite helps: compile both versions of a function and compare them.

PATH::FUNC names the function (or Class.staticmethod). Without --against,
jaxfuse-lint's fixes are applied to PATH in memory and FUNC is compared before
and after them; with --against OTHER_PATH::OTHER_FUNC, two hand-written
versions are compared.

Each version is lowered and compiled with jax.jit for the argument shapes
(--arg, else [tool.jaxfuse-lint.verify] in pyproject.toml, else jaxtyping
annotations with --dim), and the report sets side by side: kernels launched
(from the optimized HLO), temporary bytes, folded-constant bytes, bytes
accessed, compile time and, with --call, compilations per call. Both versions
run on the same seeded random inputs and their results are compared.

What is compiled for is the project's `target` (--target; default gpu). With
no GPU here, the GPU model configured by `gpu` (--gpu; default h100) is
compiled for with XLA:GPU itself, without a device, when jax's CUDA plugin is
installed (the `gpu` extra: python3 -m pip install -e '.[gpu]' in the
repository); results are then compared on the
CPU. Without the plugin, XLA:CPU stands in, and the report says so.

With --time both versions are also run on the current backend (warm-up, then
--repeat runs each, alternating, each ended with block_until_ready) and the
median wall-clock is compared; a difference within the runs' spread is noise.

Verdict and exit code: proved (0) when results agree, no metric got worse and
one improved; unchanged (0); regressed (slower beyond the noise included) or
changed results (1); error (2).

WARNING: verify imports and runs the code under test (the module's top
level, FUNC, and with --call FUNC as a plain Python driver), and says so on
stderr before it runs any. `check` never does. Run it on code you trust.
"""


def compile_options(command):
    """--target / --gpu: what verify, explain and the proof table compile for (verify/backend.py)."""
    command = click.option("--gpu", default=None, metavar="MODEL|FILE",
                           help="GPU model to compile for when no GPU is present: h100, a100, a6000, or an XLA "
                                "target config file (default: the config's `gpu`, else h100).")(command)
    return click.option("--target", "compile_for", type=click.Choice(["gpu", "cpu", "tpu"], case_sensitive=False), default=None,
                        help="Backend to compile for (default: the config's `target`, else gpu).")(command)


def argument_options(command):
    """--arg / --static / --dim: the arguments a function is compiled with (verify, explain)."""
    command = click.option("--dim", "dims", multiple=True, metavar="NAME=SIZE",
                           help="Size of a named dimension in specs or jaxtyping annotations: --dim n=1024.")(command)
    command = click.option("--static", "statics", multiple=True, metavar="NAME=VALUE",
                           help="A static argument, passed by keyword (value is a Python literal): --static n=5.")(command)
    return click.option("--arg", "arg_specs", multiple=True, metavar="SPEC",
                        help="Shape of one array argument, in order: f32[131072,2], c64[8], i32[], bf16[n,4], "
                             "bool[3].")(command)


@click.command("verify", help=HELP,
               short_help="Compile before/after versions of a function and compare them (runs your code).")
@click.argument("targets", nargs=-1, metavar="PATH::FUNC | --profile FILE [PATHS]")
@click.option("--against", metavar="PATH::FUNC",
              help="Compare with this version instead of with the fixed file.")
@argument_options
@compile_options
@click.option("--call", "call", is_flag=True,
              help="Also call FUNC eagerly as a driver, twice, and count the compilations of the second call "
                   "(for recompilation costs such as jax.jit inside a loop).")
@click.option("--time", "time_it", is_flag=True,
              help="Also time both versions on the current backend (median and spread of --repeat runs); "
                   "slower beyond the noise is a regression.")
@click.option("--repeat", type=click.IntRange(min=1), default=None, metavar="N",
              help="Timed runs of each version with --time (default 30).")
@click.option("--graph", "graph_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Write the before/after kernel graphs to DIR (DOT, and SVG when Graphviz's dot is installed).")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--backend", default=None, metavar="NAME",
              help="JAX backend to compile for and run on (cpu, gpu, tpu), whatever the target.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random inputs.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes marked unsafe before verifying.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="pyproject.toml or jaxfuse-lint.toml to read (default: found upward from PATH).")
@click.option("--constants-warn-bytes", type=int, default=None, metavar="BYTES",
              help="Threshold for JAX's captured-constants warning while lowering (default 4096).")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False), default=None,
              help="Verify every fixed function in PATHS against every signature this profile (from "
                   "`jaxfuse-lint record`) recorded, instead of one PATH::FUNC with --arg.")
def verify_command(
    targets: tuple[str, ...],
    against: str | None,
    arg_specs: tuple[str, ...],
    statics: tuple[str, ...],
    dims: tuple[str, ...],
    compile_for: str | None,
    gpu: str | None,
    call: bool,
    time_it: bool,
    repeat: int | None,
    graph_dir: str | None,
    output_format: str,
    backend: str | None,
    seed: int,
    unsafe_fixes: bool,
    config_path: str | None,
    constants_warn_bytes: int | None,
    profile_path: str | None,
) -> None:
    from jaxfuse_lint.verify.timing import DEFAULT_REPEAT

    if repeat is not None and not time_it:
        click.echo("jaxfuse-lint verify: error: --repeat needs --time", err=True)
        sys.exit(2)
    if profile_path is not None:
        from jaxfuse_lint.runtime.verify_profile import verify_command_with_profile  # (it says it runs your code)

        verify_command_with_profile(profile_path, targets, config_path, unsafe_fixes, backend, seed,
                                    target=compile_for, gpu=gpu)
        return
    if len(targets) != 1:
        raise click.UsageError("give one PATH::FUNC (or --profile FILE [PATHS])")
    from jaxfuse_lint.cli.output import announcing_user_code

    with announcing_user_code("verify"):
        result = run_verify(
            targets[0], against=against, arg_specs=arg_specs, statics=statics, dims=dims, call=call,
            time_runs=(repeat or DEFAULT_REPEAT) if time_it else 0, graph_dir=graph_dir, backend=backend, seed=seed,
            unsafe_fixes=unsafe_fixes, config_path=config_path, constants_warn_bytes=constants_warn_bytes,
            compile_for=compile_for, gpu=gpu,
        )
    from jaxfuse_lint.verify.report import render_json, render_text

    if output_format == "json":
        click.echo(render_json(result))
    elif result.verdict == "error":
        # Nothing could be compared: the error is the whole report, on one line.
        click.echo(f"jaxfuse-lint verify: error: {result.error}", err=True)
    else:
        click.echo(render_text(result), nl=False)
    sys.exit(result.exit_code)


def run_verify(
    target: str,
    *,
    against: str | None = None,
    arg_specs: tuple[str, ...] = (),
    statics: tuple[str, ...] = (),
    dims: tuple[str, ...] = (),
    call: bool = False,
    time_runs: int = 0,
    graph_dir: str | None = None,
    backend: str | None = None,
    seed: int = 0,
    unsafe_fixes: bool = False,
    config_path: str | None = None,
    constants_warn_bytes: int | None = None,
    compile_for: str | None = None,
    gpu: str | None = None,
) -> Any:
    """What the command does, as a function returning the VerifyResult. `compile_for` and `gpu`
    override the config's `target` and `gpu` (--target, --gpu)."""
    from jaxfuse_lint.runtime.verify_fixed import verify_fixed_file
    from jaxfuse_lint.verify.api import (
        Version,
        VerifyResult,
        resolve_arg_specs,
        verify_versions,
    )
    from jaxfuse_lint.verify.loader import parse_target, read_source
    from jaxfuse_lint.verify.measure import DEFAULT_CONSTANTS_WARN_BYTES
    from jaxfuse_lint.verify.shapes import parse_dims, parse_static

    func_for_errors = target.rpartition("::")[2] or target
    try:
        before_target = parse_target(target)
        after_target = parse_target(against) if against else None
        source = read_source(before_target.path)
        other_source = read_source(after_target.path) if after_target else None
        settings = _load_settings(config_path, before_target.path, compile_for, gpu)
        dim_sizes = parse_dims(dims)
        static = dict(parse_static(item) for item in statics)
        resolved = resolve_arg_specs(
            source, before_target.func, filename=before_target.path, settings=settings,
            cli_args=arg_specs, cli_static=static, dims=dim_sizes,
        )
    except VerifyError as exc:
        return VerifyResult(verdict="error", func=func_for_errors, error=str(exc))

    options = dict(
        dims=dim_sizes, call=call, backend=backend, seed=seed, graph_dir=graph_dir, time_runs=time_runs,
        target=settings.target, gpu=settings.gpu, constants_warn_bytes=DEFAULT_CONSTANTS_WARN_BYTES if constants_warn_bytes is None else constants_warn_bytes,
    )
    if after_target is not None:
        result = verify_versions(
            Version(source, before_target.path, before_target.func, "before", str(before_target)),
            Version(other_source, after_target.path, after_target.func, "after", str(after_target)),
            resolved.args, resolved.static, **options,
        )
    else:
        result = verify_fixed_file(
            source, before_target.path, before_target.func, resolved.args, resolved.static,
            settings=settings, unsafe=unsafe_fixes, **options,
        )
    if resolved.origin not in ("--arg", "no array arguments"):
        result.notes.insert(0, f"argument shapes from {resolved.origin}")
    return result


def _load_settings(config_path: str | None, start: str, target: str | None = None, gpu: str | None = None) -> Any:
    """The settings for `start`, with --target / --gpu over the config's."""
    from jaxfuse_lint.core.config import ConfigError, load_settings, with_cli_overrides

    try:
        return with_cli_overrides(load_settings(config_path, start=start), target=target, gpu=gpu)
    except ConfigError as exc:
        raise VerifyError(str(exc)) from None
