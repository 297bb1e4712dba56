"""The progress bar: only on a terminal, only for human-readable output, erased when done."""
from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from jaxfuse_lint.run import progress
from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.run.progress import Progress


def runner() -> CliRunner:
    """stdout and stderr apart (click < 8.2 needs asking; later versions always do it)."""
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:
        return CliRunner()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_not_on_a_pipe():
    stream = io.StringIO()
    assert not progress.wanted(stream)
    bar = Progress(10, stream=stream, enabled=progress.wanted(stream), delay=0)
    for i in range(1, 11):
        bar.update(i)
    bar.close()
    assert stream.getvalue() == ""


def test_draws_and_erases_itself_on_a_terminal():
    stream = FakeTerminal()
    assert progress.wanted(stream)
    with Progress(4, stream=stream, delay=0, label="Checking") as bar:
        bar.update(4)
        drawn = stream.getvalue()
    assert drawn.startswith("\r") and "Checking [" in drawn and "4/4 files" in drawn
    erased = stream.getvalue()[len(drawn):]
    assert erased.startswith("\r") and erased.endswith("\r") and erased.strip() == ""


def test_short_runs_never_show_it():
    stream = FakeTerminal()
    with Progress(3, stream=stream, delay=60) as bar:
        for i in range(1, 4):
            bar.update(i)
    assert stream.getvalue() == ""


@pytest.fixture
def project(tmp_path):
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text("import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n"
                                           "    return x + np.eye(64)\n")
    return tmp_path


@pytest.fixture
def terminal(monkeypatch):
    """Pretend stderr is a terminal, and draw at once."""
    monkeypatch.setattr(progress, "wanted", lambda stream=None: True)
    real_init = Progress.__init__

    def init(self, *args, **kwargs):
        kwargs["delay"] = 0
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Progress, "__init__", init)


def test_cli_shows_it_for_people(project, terminal):
    result = runner().invoke(cli, ["check", "--no-cache", str(project)])
    assert result.exit_code == 1
    assert "\r" in result.stderr and "3/3 files" in result.stderr
    assert "\r" not in result.stdout


@pytest.mark.parametrize("fmt", ["json", "sarif", "json-lines"])
def test_cli_never_shows_it_for_machines(project, terminal, fmt):
    result = runner().invoke(cli, ["check", "--no-cache", "--output-format", fmt, str(project)])
    assert result.exit_code == 1
    assert "\r" not in result.stderr and "\r" not in result.stdout
    if fmt != "json-lines":
        json.loads(result.stdout)


def test_cli_not_when_piped(project):
    result = runner().invoke(cli, ["check", "--no-cache", str(project)])
    assert "\r" not in result.stderr
