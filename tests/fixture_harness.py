"""Shared helpers for the per-rule fixture folders (fixtures/<CODE>/).

Layout of a rule's folder:
  <case>.py            the input: positives and negatives
  <case>.expected      one line per diagnostic of that rule: `row:col-endrow:endcol CODE`
                       (empty file: the case must produce nothing)
  <case>.fixed.py      optional: the exact result of `--fix --select CODE`
  <case>.unsafe.py     optional: the exact result of `--fix --unsafe-fixes --select CODE`, where it
                       differs from <case>.fixed.py
  <case>.toml          optional: settings for this case, as keys of [tool.jaxfuse-lint] at top level
                       (e.g. `target = "cpu"` for a backend's policy); `select` is always CODE
  <case>.profile.json  optional: a runtime profile recorded from running <case>.py
                       (`jaxfuse-lint record -o <case>.profile.json -- python <case>.py`), used as
                       `check --profile` does; the measured rules (JF5xx) need one

The rules whose findings follow a calibration table (jaxfuse_lint/calibrate: JF1xx/JF2xx) report
their raw pattern in the fixture cases (how the calibration harness sees them: detection, sizes
and fixes are what those cases test), except in cases named `calibrated*.py`, which run with the
table's decisions as users get them (with `preview = true` in their .toml for the preview tier). A
rule in the preview tier as a whole runs all its cases with `preview = true`.

Set JAXFUSE_UPDATE_FIXTURES=1 to rewrite .expected / .fixed.py / .unsafe.py from the
current output (then read the diff before committing it).
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from jaxfuse_lint.calibrate.variants import GENERATORS
from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings, load_settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
UPDATE = os.environ.get("JAXFUSE_UPDATE_FIXTURES") == "1"


def rule_settings(code: str, path: Path | None = None) -> Settings:
    settings = Settings()
    config = path.with_suffix(".toml") if path is not None else None
    if config is not None and config.exists():
        settings = load_settings(config)
    calibrated = code in GENERATORS or code.startswith("JF9")  # JF9xx: noqa against the raw findings
    if calibrated and (path is None or not path.name.startswith("calibrated")):
        settings = replace(settings, extra=settings.extra + (RAW,))
    from jaxfuse_lint.rules import all_rules

    if any(r.code == code and r.preview for r in all_rules()):
        settings = replace(settings, preview=True)  # a preview rule's cases are its preview-tier findings
    if code.startswith("JF9"):
        # The rules about suppression comments judge the other rules' findings: all of them run.
        return replace(settings, select=("JF", code), extend_select=(), ignore=())
    return replace(settings, select=(code,), extend_select=(), ignore=())


def input_files() -> list[Path]:
    out = []
    for folder in sorted(FIXTURES.iterdir()) if FIXTURES.is_dir() else []:
        if not folder.is_dir() or not folder.name.startswith("JF"):
            continue
        for f in sorted(folder.glob("*.py")):
            if f.name.endswith((".fixed.py", ".unsafe.py")):
                continue
            out.append(f)
    return out


def case_settings(path: Path, code: str) -> Settings:
    settings = rule_settings(code, path)
    profile = path.with_name(path.stem + ".profile.json")
    if profile.exists():
        from jaxfuse_lint.runtime.use import with_profile

        settings, recorded = with_profile(settings, str(profile))
        assert recorded.for_text(path.read_text()) is not None, (
            f"{profile.name} was recorded from another text of {path.name}: record it again with "
            f"`jaxfuse-lint record -o {profile} -- python {path}`")
    return settings


def diagnostics_text(path: Path, code: str) -> str:
    result = check_source(path.read_bytes(), str(path), case_settings(path, code))
    assert not result.errors, result.errors
    lines = [
        f"{d.location.row}:{d.location.column}-{d.end_location.row}:{d.end_location.column} {d.code}"
        for d in result.diagnostics
        if d.code == code
    ]
    return "".join(line + "\n" for line in lines)


def fixed_text(path: Path, code: str, unsafe: bool) -> str:
    outcome = fix_source(path.read_bytes(), str(path), case_settings(path, code), unsafe=unsafe)
    assert not outcome.dropped, outcome.dropped
    assert not outcome.errors, outcome.errors
    return outcome.source
