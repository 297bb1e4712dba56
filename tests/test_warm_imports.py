"""A warm run (every file from the cache) loads neither libcst nor the model, the rules or the
codemods: what it costs is reading, hashing and reporting. Only a file that misses the cache
pays for the parser."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs the real command line in a fresh interpreter, then lists the tool modules it loaded.
PROBE = textwrap.dedent("""
    import json, runpy, sys
    sys.argv = ["jaxfuse-lint", *sys.argv[1:]]
    code = 0
    try:
        runpy.run_module("jaxfuse_lint", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    heavy = sorted(m for m in sys.modules if m == "libcst" or m.startswith(("libcst.", "jaxfuse_lint.model",
                   "jaxfuse_lint.rules", "jaxfuse_lint.codemods.plan", "jaxfuse_lint.parse.locate", "jaxfuse_lint.codemods", "jax.", "jaxlib"))
                   or m == "jax")
    with open(OUT, "w") as fh:
        json.dump({"code": code, "heavy": heavy}, fh)
""")

BAD = """\
import jax
import numpy as np

from . import helpers


@jax.jit
def f(x):
    return helpers.g(x) + np.eye(64)
"""

HELPERS = """\
from . import bad


def g(x):
    for i in range(3):
        print(x)
    return x
"""


def run_probe(project: Path, out: Path, *args: str, command: str = "check") -> tuple[dict, str]:
    script = f"OUT = {str(out)!r}\n" + PROBE
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-c", script, command, *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    return json.loads(out.read_text()), proc.stdout


def make_project(tmp_path: Path) -> Path:
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text(BAD)  # an import cycle with helpers.py, and findings
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "plain.py").write_text("x = 1\n")
    return tmp_path / "proj"


def test_a_warm_run_imports_no_parser_model_rules_or_codemods(tmp_path):
    project = make_project(tmp_path)
    args = ("--output-format", "full", "--cache-dir", str(tmp_path / "cache"), "-j1", ".")
    cold, cold_out = run_probe(project, tmp_path / "cold.json", *args)
    assert cold["code"] == 1
    assert "JF201" in cold_out

    warm, warm_out = run_probe(project, tmp_path / "warm.json", *args)
    assert warm["code"] == 1
    assert warm_out == cold_out
    assert warm["heavy"] == []

    # One file edited: that file pays for the parser, and the output follows the edit.
    (project / "pkg" / "plain.py").write_text("import jax\n\n\n@jax.jit\ndef h(x):\n    print(x)\n    return x\n")
    touched, touched_out = run_probe(project, tmp_path / "touched.json", *args)
    assert "JF401" in touched_out
    assert touched["code"] == 1
    again, again_out = run_probe(project, tmp_path / "again.json", *args)
    assert again_out == touched_out
    assert again["heavy"] == []


def test_a_warm_run_with_a_selection_in_the_configuration_imports_no_rules(tmp_path):
    project = make_project(tmp_path)
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF2", "JF4"]\nignore = ["JF401"]\n')
    args = ("--cache-dir", str(tmp_path / "cache"), "-j1", "--extend-select", "JF3", ".")
    cold, cold_out = run_probe(project, tmp_path / "cold.json", *args)
    warm, warm_out = run_probe(project, tmp_path / "warm.json", *args)
    assert warm_out == cold_out and "JF201" in warm_out and "JF401" not in warm_out
    assert warm["heavy"] == []


def test_the_probe_sees_what_a_command_imports(tmp_path):
    loaded, out = run_probe(tmp_path, tmp_path / "rule.json", "JF201", command="rule")
    assert "JF201" in out
    assert "libcst" in loaded["heavy"] and "jaxfuse_lint.rules" in loaded["heavy"]


def test_rule_codes_from_module_names_are_the_registry():
    from jaxfuse_lint.core.rule_codes import rule_codes
    from jaxfuse_lint.rules import all_codes

    assert rule_codes() == all_codes()
