"""The preview tier (ruff's meaning): preview rules, and findings whose chain of evidence has an
assumed link, are reported only with `preview = true` / `--preview`."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jaxfuse_lint.model import premises

from jaxfuse_lint.core.config import ConfigError, Settings, settings_from_table
from jaxfuse_lint.engine import check_source
from jaxfuse_lint.rules import get_rule

ROOT = Path(__file__).resolve().parent.parent

PRINTS = textwrap.dedent(
    """\
    import jax


    @jax.jit
    def f(x):
        print(x)
        return x + 1
    """
)


def codes(source: str, settings: Settings) -> list[str]:
    return [d.code for d in check_source(source, "m.py", settings).diagnostics]


def test_a_preview_rule_runs_only_with_preview_even_when_selected(monkeypatch):
    rule = get_rule("JF401")
    assert codes(PRINTS, Settings()) == ["JF401"]
    monkeypatch.setattr(type(rule), "preview", True)
    assert codes(PRINTS, Settings()) == []
    assert codes(PRINTS, Settings(select=("JF401",))) == []
    assert codes(PRINTS, Settings(preview=True)) == ["JF401"]


def test_a_finding_with_an_assumed_link_is_preview(monkeypatch):
    rule = get_rule("JF401")
    check = type(rule).check

    def assumed(self, model, settings):
        for v in check(self, model, settings):
            yield v.with_premises(premises.assumed("runs-traced", "`f`", "the route into `jax.jit` is assumed"))

    monkeypatch.setattr(type(rule), "check", assumed)
    assert check_source(PRINTS, "m.py", Settings()).diagnostics == []
    (d,) = check_source(PRINTS, "m.py", Settings(preview=True)).diagnostics
    assert d.code == "JF401"
    assert d.message.endswith("(preview: the route into `jax.jit` is assumed)")


def test_the_config_key_and_the_cache_key():
    assert settings_from_table({"preview": True}, "pyproject.toml", ".").preview is True
    with pytest.raises(ConfigError, match="`preview` must be true or false"):
        settings_from_table({"preview": "yes"}, "pyproject.toml", ".")
    assert Settings().fingerprint() != dataclasses.replace(Settings(), preview=True).fingerprint()


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, text=True, cwd=cwd,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_the_command_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\npreview = true\n")
    (tmp_path / "m.py").write_text(PRINTS)
    assert "preview = true" in run("check", "--show-settings", ".", cwd=tmp_path).stdout
    assert "preview = false" in run("check", "--no-preview", "--show-settings", ".", cwd=tmp_path).stdout
    listing = run("rule", "--all", cwd=tmp_path).stdout
    assert "preview: runs only with `--preview`" in listing
    page = json.loads(run("rule", "JF401", "--output-format", "json", cwd=tmp_path).stdout)
    assert page["preview"] is False
