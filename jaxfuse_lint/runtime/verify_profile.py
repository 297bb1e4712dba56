"""Verifying fixes against what a recorded run compiled: no hand-written `--arg`.

`verify --profile FILE [PATHS]`, `check --fix --verify` and `review --verify` use
this. For a fixed file, every recorded jit entry point defined in it whose own
text changed, or under which a changed function was traced, is compiled before
and after the fix for each abstract signature the run recorded (shapes,
dtypes, static argument values), with `jaxfuse_lint.verify.api.verify_pair`.

A signature the verifier cannot rebuild (pytree arguments, a static value whose
repr is not a Python literal, a weak-typed Python scalar) is skipped with a
note, never guessed. This imports and runs the user's code, like `verify`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from jaxfuse_lint.core.profile import Profile, signature_text, spec, text_digest

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class RecordedCase:
    """One recorded signature of one entry point, as `verify_pair` arguments."""

    func: str
    args: list[str]
    static: dict[str, Any]
    label: str  # "v: f32[256,3]" for messages
    where: str = ""


@dataclass
class ProfileVerification:
    filename: str
    func: str
    case: RecordedCase | None
    result: Any = None  # VerifyResult
    note: str = ""  # why it was not verified

    @property
    def verdict(self) -> str:
        return self.result.verdict if self.result is not None else "skipped"

    def line(self) -> str:
        where = f"{self.filename}::{self.func}"
        if self.case is not None:
            where += f" ({self.case.label})"
        if self.result is None:
            return f"{where}: not verified: {self.note}"
        if self.result.verdict == "error":
            return f"{where}: error: {self.result.error}"
        return f"{where}: {self.result.verdict}: {self.result.summary()}"


def case_for(entry: dict[str, Any], sig: dict[str, Any]) -> tuple[RecordedCase | None, str]:
    """The signature as verify arguments, or (None, why not)."""
    from jaxfuse_lint.verify.shapes import parse_static_value

    args = []
    for a in sig.get("args", []):
        name = a.get("name") or ""
        if not _IDENTIFIER.match(name):
            return None, f"argument `{name or '?'}` is part of a pytree: not rebuilt from the profile"
        if not isinstance(a.get("shape"), list) or not all(isinstance(d, int) for d in a["shape"]):
            return None, f"argument `{name}` has no concrete shape"
        if a.get("weak_type"):
            return None, f"argument `{name}` was a Python scalar (weak type): not rebuilt from the profile"
        args.append(spec(a))
    static: dict[str, Any] = {}
    for name, text in sig.get("static", {}).items():
        value = parse_static_value(text)
        if isinstance(value, str) and value == text:
            return None, f"static argument {name}={text} is not a Python literal"
        static[name] = value
    return RecordedCase(entry["qualname"], args, static, signature_text(sig, limit=6), sig.get("where", "")), ""


def entries_to_verify(profile: Profile, original: str, changed: Iterable[str]) -> list[dict[str, Any]]:
    """Recorded entry points of this text whose own code changed or that traced a changed function."""
    changed = set(changed)
    digest = text_digest(original)
    out = []
    for entry in profile.entries:
        if entry.get("sha256") != digest:
            continue
        if entry.get("qualname") in changed:
            out.append(entry)
            continue
        traced = {f.get("qualname") for f in profile.functions if f.get("entry") == entry.get("id")}
        if traced & changed:
            out.append(entry)
    return out


def verify_fixed_text(profile: Profile, original: str, fixed: str, filename: str, changed: Iterable[str],
                      echo: Callable[[str], None] | None = None, **options: Any) -> list[ProfileVerification]:
    """Compile every recorded signature of the affected entry points before and after."""
    from jaxfuse_lint.verify.api import verify_pair

    changed = list(changed)
    out: list[ProfileVerification] = []
    entries = entries_to_verify(profile, original, changed)
    covered = set()
    for entry in entries:
        func = entry["qualname"]
        covered.add(func)
        covered.update(f.get("qualname") for f in profile.functions if f.get("entry") == entry.get("id"))
        if "<" in func:
            out.append(ProfileVerification(filename, func, None, note="not a module-level function"))
            continue
        for sig in entry.get("signatures", []):
            case, why = case_for(entry, sig)
            if case is None:
                out.append(ProfileVerification(filename, func, None, note=why))
                continue
            if echo is not None:
                echo(f"verifying {filename}::{func} ({case.label})...")
            result = verify_pair(original, fixed, func, case.args, case.static, filename=filename, **options)
            out.append(ProfileVerification(filename, func, case, result))
    for func in changed:
        if func not in covered:
            out.append(ProfileVerification(filename, func, None,
                                           note="not traced by the recorded run: record a run that calls it"))
    return out


@dataclass
class ProfileRun:
    checks: list[ProfileVerification] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        verdicts = [c.verdict for c in self.checks]
        if any(c.result is not None and c.result.exit_code == 1 for c in self.checks):
            return 1
        if self.errors or any(v == "error" for v in verdicts):
            return 2
        return 0


def verify_paths(profile: Profile, paths: list[str], settings: Any, *, unsafe: bool = False,
                 echo: Callable[[str], None] | None = None, **options: Any) -> ProfileRun:
    """`verify --profile`: fix each file in memory and verify what changed against the profile."""
    from jaxfuse_lint.discover.files import discover
    from jaxfuse_lint.engine.pipeline import decode, fix_source
    from jaxfuse_lint.runtime.function_diff import changed_functions

    run = ProfileRun()
    for path in discover(paths, settings):
        filename = str(path)
        try:
            with open(path, "rb") as fh:
                original, _ = decode(fh.read())
        except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
            run.errors.append(f"{filename}: cannot read: {exc}")
            continue
        if not entries_to_verify(profile, original, _all_names(profile, original)):
            continue  # nothing recorded for this text
        outcome = fix_source(original, filename, settings, unsafe=unsafe)
        run.errors.extend(outcome.errors)
        if not outcome.changed:
            continue
        changed = changed_functions(original, outcome.source)
        run.checks.extend(verify_fixed_text(profile, original, outcome.source, filename, changed, echo, **options))
    return run


def _all_names(profile: Profile, original: str) -> set[str]:
    digest = text_digest(original)
    return {e.get("qualname") for e in profile.entries if e.get("sha256") == digest}


def verify_command_with_profile(profile_path: str | None, paths: tuple[str, ...], config_path: str | None,
                                unsafe: bool, backend: str | None, seed: int, *, target: str | None = None,
                                gpu: str | None = None) -> None:
    """The `verify --profile` command: one line per verified signature; exit 0/1/2 like `verify`.
    `target`/`gpu` (--target/--gpu) override the config's: the recorded signatures are compiled
    for it, whatever backend the run was recorded on."""
    import sys

    import click

    from jaxfuse_lint.core.config import ConfigError, load_settings, with_cli_overrides
    from jaxfuse_lint.runtime.use import with_profile

    paths_list = list(paths) or ["."]
    try:
        settings = with_cli_overrides(load_settings(config_path, start=paths_list[0]), target=target, gpu=gpu)
        settings, profile = with_profile(settings, profile_path)
    except ConfigError as exc:
        click.echo(f"jaxfuse-lint verify: error: {exc}", err=True)
        sys.exit(2)
    if profile is None:
        click.echo("jaxfuse-lint verify: error: no profile: give --profile FILE or run `jaxfuse-lint record` first",
                   err=True)
        sys.exit(2)
    click.echo("jaxfuse-lint verify: imports and runs the fixed modules for each recorded signature", err=True)
    from jaxfuse_lint.verify.backend import for_settings
    from jaxfuse_lint.verify.errors import VerifyError

    try:
        compiled_for = for_settings(settings, backend).describe()
    except VerifyError as exc:
        click.echo(f"jaxfuse-lint verify: error: {exc}", err=True)
        sys.exit(2)
    if compiled_for:
        click.echo(f"jaxfuse-lint verify: {compiled_for}", err=True)
    run = verify_paths(profile, paths_list, settings, unsafe=unsafe, backend=backend, seed=seed,
                       target=settings.target, gpu=settings.gpu)
    for err in run.errors:
        click.echo(f"jaxfuse-lint: {err}", err=True)
    for check in run.checks:
        click.echo(check.line())
    if not run.checks:
        click.echo("nothing to verify: no fix changes a function the recorded run traced"
                   + ("" if unsafe else " (fixes that rely on recorded shapes need --unsafe-fixes)"), err=True)
    else:
        counts: dict[str, int] = {}
        for c in run.checks:
            counts[c.verdict] = counts.get(c.verdict, 0) + 1
        click.echo(", ".join(f"{n} {v}" for v, n in sorted(counts.items())), err=True)
    sys.exit(run.exit_code)


def evidence_for_fix(profile: Profile, original: str, fixed: str, filename: str, func: str,
                     **options: Any) -> str | None:
    """The measured before/after of one fix for the review comment, or None when the run did not trace it:
    "on CPU: 2 → 1 kernels, 48.0 KiB → 0 B temporaries (verdict: proved) for theta: f32[4096,3]"."""
    checks = [c for c in verify_fixed_text(profile, original, fixed, filename, [func], **options)
              if c.case is not None]
    if not checks:
        return None
    parts = []
    for c in checks:
        if c.result.verdict == "error":
            parts.append(f"verification failed for {c.case.label}: {c.result.error}")
        else:
            where = f", recorded in {c.case.where}" if c.case.where else ""
            parts.append(f"{c.result.summary()} (verdict: {c.result.verdict}) for {c.case.label}{where}")
    return "; ".join(parts)
