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
    """One line naming the recorded files that changed since the run (their facts are ignored)."""
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
            f"({shown}): {'their' if len(stale) != 1 else 'its'} run-time facts are ignored; "
            f"`jaxfuse-lint record` again to refresh them")
