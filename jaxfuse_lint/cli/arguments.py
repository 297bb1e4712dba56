"""How the command line is read before click parses it, and what a mistyped word gets back.

- `jaxfuse-lint PATHS` means `jaxfuse-lint check PATHS`, where the first word is a path that exists
  (or `-`, or reads as a path: `src/`, `m.py`); a word that is neither a command nor such a path is
  a usage error (exit 2) with the closest command (`unknown command 'chek' (did you mean 'check'?)`),
  never a path that "could not be read".
- Options before the subcommand are the subcommand's (`jaxfuse-lint --preview check f.py` is
  `jaxfuse-lint check --preview f.py`), as ruff's global options are.
- An unknown option suggests the options it is close to, by name (ruff's way: `--previw` -> `--preview`;
  `--bogus` gets no suggestion), not by the `--` every option shares.
"""
from __future__ import annotations

import difflib
import os

import click

DEFAULT_COMMAND = "check"
# A first word that reads as a path (it is one, though it does not exist): checked, and reported
# as a path that cannot be read (JF000), as `check` does.
_PATH_SUFFIXES = (".py", ".pyi", ".ipynb")


def with_command(group: click.Group, ctx: click.Context, args: list[str]) -> list[str]:
    """ARGS with the subcommand first: the command named (global options moved after it), else
    `check` where the first word is a path. click.UsageError for a word that is neither."""
    if not args:
        return [DEFAULT_COMMAND]
    if args[0] in ("--help", "-h", "--version"):
        return args
    commands = group.list_commands(ctx)
    default = group.get_command(ctx, DEFAULT_COMMAND)
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        i += 1 + takes_value(default, args[i])
    if i >= len(args) or args[i] == "--":
        return [DEFAULT_COMMAND, *args]
    first = args[i]
    if first in commands:
        return [first, *args[:i], *args[i + 1:]]
    if first == "-" or os.path.lexists(first) or _reads_as_path(first):
        return [DEFAULT_COMMAND, *args]
    close = difflib.get_close_matches(first, commands, n=1, cutoff=0.6)
    hint = f" (did you mean '{close[0]}'?)" if close else \
        f" (commands: {', '.join(commands)}; to check a path, name one that exists)"
    raise click.UsageError(f"unknown command '{first}'{hint}", ctx)


def _reads_as_path(word: str) -> bool:
    return "/" in word or os.sep in word or word.startswith(".") or word.lower().endswith(_PATH_SUFFIXES)


def takes_value(command: click.Command | None, token: str) -> int:
    """1 when TOKEN is an option of COMMAND that takes the next word as its value, else 0."""
    if command is None or "=" in token or (not token.startswith("--") and len(token) > 2):
        return 0
    for param in command.params:
        if isinstance(param, click.Option) and token in (*param.opts, *param.secondary_opts):
            return 0 if param.is_flag or param.count else 1
    return 0


def close_options(typed: str, command: click.Command | None) -> list[str]:
    """The options of COMMAND a mistyped `--option` is close to: those it begins (`--unsafe` ->
    `--unsafe-fixes`), else those within a typo of it, compared without their dashes."""
    if command is None or not typed.startswith("--"):
        return []
    longs = sorted({o for p in command.params if isinstance(p, click.Option)
                    for o in (*p.opts, *p.secondary_opts) if o.startswith("--")} | {"--help"})
    bare = typed[2:].split("=", 1)[0]
    begun = [o for o in longs if len(bare) >= 3 and o[2:].startswith(bare)]
    if begun:
        return begun[:3]
    return ["--" + name for name in difflib.get_close_matches(bare, [o[2:] for o in longs], n=3, cutoff=0.8)]
