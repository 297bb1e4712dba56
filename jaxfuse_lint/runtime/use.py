"""Choosing the profile a command uses: `--profile FILE`, `--no-profile`, or the default
`.jaxfuse_lint/profile.json` of the project (its root, else the current directory).

The choice travels in `Settings.extra` as the profile's path and content digest, so
worker processes read the same profile and the cache keys on its content."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from jaxfuse_lint.core.config import ConfigError, Settings

if TYPE_CHECKING:
    from jaxfuse_lint.core.profile import Profile

# Where `record` writes, and where `check`, `verify` and `explain` look, by default.
DEFAULT_PATH = os.path.join(".jaxfuse_lint", "profile.json")


def find_default(start: Iterable[str | os.PathLike | None]) -> str | None:
    """`.jaxfuse_lint/profile.json` in the first of these directories that has one."""
    for d in start:
        if d is None:
            continue
        candidate = Path(d) / DEFAULT_PATH
        if candidate.is_file():
            return str(candidate)
    return None


def choose_profile(settings: Settings, path: str | None, disabled: bool) -> str | None:
    if disabled:
        return None
    if path:
        return path
    return find_default([settings.project_root, os.getcwd()])


def with_profile(settings: Settings, path: str | None, disabled: bool = False) -> tuple[Settings, Profile | None]:
    """Settings that make the engine use the chosen profile (and the profile), or unchanged."""
    chosen = choose_profile(settings, path, disabled)
    if chosen is None:
        return settings, None  # the common case, and a warm `check`: the profile format is not loaded
    from jaxfuse_lint.core.profile import PROFILE_DIGEST_KEY, PROFILE_KEY, ProfileError, load_profile, profile_digest

    try:
        profile = load_profile(chosen)
        digest = profile_digest(chosen)
    except ProfileError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"{chosen}: cannot read the profile: {exc.strerror}") from None
    extra = tuple(kv for kv in settings.extra if kv[0] not in (PROFILE_KEY, PROFILE_DIGEST_KEY))
    extra += ((PROFILE_KEY, os.path.abspath(chosen)), (PROFILE_DIGEST_KEY, digest))
    return replace(settings, extra=extra), profile


def stale_note(profile: Profile) -> str | None:
    """One line naming the recorded files that changed since the run (the facts of their changed
    functions are ignored: core/profile.py keys them by each function's own source)."""
    path = Path(profile.path).resolve()
    # Paths in a profile are relative to where `record` ran: the folder holding .jaxfuse_lint/.
    root = path.parent.parent if path.parent.name == ".jaxfuse_lint" else Path.cwd()
    stale = profile.stale_files(root)
    if not stale:
        return None
    shown_path = os.path.relpath(path)
    shown_path = str(path) if shown_path.startswith("..") else shown_path
    shown = ", ".join(stale[:3]) + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
    return (f"note: {len(stale)} file{'s' if len(stale) != 1 else ''} changed since {shown_path} was recorded "
            f"({shown}): the facts of the functions that changed are ignored (and of the programs that "
            f"called them); "
            f"`jaxfuse-lint record` again to refresh them")


# The measured rules: what only a recorded run gives (rules/measured.py).
MEASURED_CODES = ("JF501", "JF502", "JF503")


def withheld_note(profile: Profile, settings: Settings, files: Iterable[str | os.PathLike]) -> str | None:
    """One line counting the measured findings the run's facts give in files where
    `per-file-ignores` turns the measured rules off (test code, by default):
    `note: 7 measured findings in tests/ not reported: per-file-ignores ...`. The measured
    rules are run on those files alone, with their facts; nothing else is."""
    import tokenize

    from jaxfuse_lint.engine import check_source

    selected = [code for code in MEASURED_CODES if settings.is_enabled(code)]
    count = 0
    folders: dict[str, None] = {}
    for f in files:
        name = str(f)
        if not name.endswith(".py"):
            continue
        off = [code for code in selected if not settings.is_enabled(code, name)]
        if not off:
            continue
        try:
            with tokenize.open(name) as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError):
            continue
        facts = profile.for_text(text)
        if facts is None or not (facts.entries or facts.lines or facts.constants):
            continue
        found = check_source(text, name, replace(settings, select=tuple(off), extend_select=(), ignore=(),
                                                 per_file_ignores=())).diagnostics
        measured = [d for d in found if d.code in off]
        if measured:
            count += len(measured)
            rel = os.path.relpath(name)
            folders.setdefault(rel.split(os.sep)[0] + "/" if os.sep in rel else rel)
    if not count:
        return None
    where = ", ".join(list(folders)[:3]) + (" and more" if len(folders) > 3 else "")
    return (f"note: {count} measured finding{'s' if count != 1 else ''} in {where} not reported: "
            f"per-file-ignores (test code runs on inputs the test chose: see docs/record.md; "
            f"set `per-file-ignores` to report {'them' if count != 1 else 'it'})")
