"""The README's tour is true: every command between `<!-- tour:start -->` and
`<!-- tour:end -->` runs, and prints what the README shows.

Each ```console block holds `$ command` lines, each followed by its output: first what
the command prints on stdout (compared line for line), then its closing lines on stderr
(each must appear, in order; other stderr lines — JAX's own logging — are let through).
Timings are normalised. The compiling commands' figures (kernel names and counts) depend
on the jax/jaxlib release and the compiler: they are compared in full where those are the
README's (jax 0.10.2 with jax's CUDA plugin: XLA:GPU for the default H100 model, deviceless,
as `.ci/run` installs it), else only the function named on their first line.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
README_JAX = "0.10.2"


def tour_commands(section: str = "tour") -> list[tuple[str, list[str]]]:
    tour = README.split(f"<!-- {section}:start -->", 1)[1].split(f"<!-- {section}:end -->", 1)[0]
    out: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```console\n(.*?)```", tour, re.S):
        for chunk in re.split(r"^(?=\$ )", block, flags=re.M):
            if chunk.startswith("$ "):
                command, _, output = chunk[2:].partition("\n")
                out.append((command, output.rstrip("\n").split("\n") if output.strip() else []))
    return out


# The set-up's first command, then the tour's.
SETUP = tour_commands("setup")
COMMANDS = SETUP + tour_commands()


def normalise(line: str) -> str:
    line = re.sub(r"\b\d+\.\d+ s\b", "<time> s", line.rstrip())
    if line.lstrip().startswith("compile time"):
        return "compile time <varies>"
    line = re.sub(r"jax \S+, jaxlib \S+,", "jax <v>, jaxlib <v>,", line)
    # A table's columns are as wide as its widest figure: a compile time printed exactly (rounded, the
    # two were equal) widens them. The figures are compared, not the alignment.
    return " ".join(line.split())


def _has_gpu_compiler() -> bool:
    from jaxfuse_lint.verify.backend import _cuda_plugin_installed

    return _cuda_plugin_installed()


def test_the_tour_has_the_commands_a_newcomer_needs():
    verbs = [shlex.split(c)[1] for c, _ in COMMANDS]
    assert verbs[:3] == ["check", "check", "check"] and "verify" in verbs and "explain" in verbs
    assert len(README.splitlines()) <= 400


def test_the_first_command_shows_a_clean_representative_result():
    """The set-up's command runs on a small example: a few findings, none of them JF000 (a newcomer
    reads a parse error as breakage), and a step to run it on one's own project follows."""
    ((command, output),) = SETUP
    assert command == "jaxfuse-lint check examples/quickstart.py"
    findings = [line for line in output if line.startswith("examples/")]
    assert 1 <= len(findings) <= 5 and not any(" JF000 " in line for line in findings)
    assert output[len(findings)] == f"Found {len(findings)} diagnostics."
    assert "run it on your project" in README.split("<!-- setup:end -->", 1)[1].split("## A two-minute tour")[0]


@pytest.mark.parametrize("command,expected", COMMANDS, ids=[c.split(" ")[1] + str(i) for i, (c, _) in
                                                             enumerate(COMMANDS)])
def test_tour_command_prints_what_the_readme_shows(command, expected):
    argv = shlex.split(command)
    assert argv[0] == "jaxfuse-lint"
    compiles = argv[1] in ("verify", "explain")
    if compiles:
        jax = pytest.importorskip("jax")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1", "JAXFUSE_LINT_DAEMON": "0",
           "JAX_PLATFORMS": "cpu"}
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", *argv[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    stdout = [normalise(line) for line in proc.stdout.rstrip("\n").split("\n")] if proc.stdout.strip() else []
    stderr = [normalise(line) for line in proc.stderr.split("\n")]
    want = [normalise(line) for line in expected]
    if compiles and not (jax.__version__ == README_JAX and _has_gpu_compiler()):
        # Another compiler: the same function is measured, the figures are its own.
        assert stdout[:1] and want[:1] and stdout[0].split(" on ")[0] == want[0].split(" on ")[0] or \
            stdout[:1] == want[:1]
        return
    assert stdout == want[:len(stdout)], "\n".join(stdout)
    rest = iter(stderr)
    missing = [line for line in want[len(stdout):] if not any(line == got for got in rest)]
    assert not missing, f"not on stderr (in order): {missing}\n--- stderr ---\n{proc.stderr[-3000:]}"
