"""The commands that run the user's code say so (issue 37, item 12): the top-level help names
every one of them, and `verify` and `explain` say on stderr, just before it runs, that importing
the file runs its top-level code (they did so silently; `verify --profile` and
`check --fix --verify` already said so)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli

MODULE = """import jax.numpy as jnp

print("TOP LEVEL RAN")


def f(x):
    return jnp.sum(x * 2)
"""


def test_the_top_level_help_names_every_command_that_runs_your_code():
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "Only `verify` runs user code" not in text
    assert ("`verify` and `explain` import and run your code, and so do `check --fix --verify` and "
            "`review --verify`: each says so on stderr before it runs any. `record` runs the command you give it.") in text


@pytest.fixture
def module(tmp_path) -> Path:
    path = tmp_path / "m.py"
    path.write_text(MODULE)
    return path


def _notice(command: str, path: Path) -> str:
    return f"jaxfuse-lint {command}: this runs your code (importing {path} runs top-level code)"


def test_verify_says_it_runs_your_code(module):
    pytest.importorskip("jax")
    result = CliRunner().invoke(cli, ["verify", f"{module}::f", "--against", f"{module}::f", "--arg", "f32[4]",
                                      "--target", "cpu"])
    assert _notice("verify", module) in result.stderr, result.output
    assert "TOP LEVEL RAN" in result.stdout  # what the notice warned of


def test_explain_says_it_runs_your_code_and_reading_a_profile_does_not(module, tmp_path):
    pytest.importorskip("jax")
    result = CliRunner().invoke(cli, ["explain", f"{module}::f", "--arg", "f32[4]", "--target", "cpu"])
    assert result.exit_code == 0, result.output
    assert _notice("explain", module) in result.stderr
    profile = tmp_path / "profile.json"
    profile.write_text('{"version": 1, "entries": []}')
    result = CliRunner().invoke(cli, ["explain", str(module), "--profile", str(profile)])
    assert "this runs your code" not in result.stderr
