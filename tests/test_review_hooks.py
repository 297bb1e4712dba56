"""The pre-commit hooks and the example GitHub workflow run the commands they claim to.

Each hook's `entry` is run as pre-commit runs it (entry, then the staged file
names); the workflow's `jaxfuse-lint review` line is parsed by the real
command, so neither can drift from the CLI.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.test_review_support import install_jf101_fixer

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent

# A form the h100 table reports (a 2-wide stack summed with kept dims and added back); its dtype
# is declared, so the real codemod's fix is safe as well as the test fixer's.
BAD = '''import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    v = jnp.stack([x, 2 * x], axis=-1, dtype=jnp.float32)
    return v + jnp.sum(v * v, axis=-1, keepdims=True)
'''


def hooks() -> dict[str, dict]:
    data = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return {h["id"]: h for h in data}


def test_hook_manifest_has_what_pre_commit_requires():
    found = hooks()
    assert set(found) == {"jaxfuse-lint", "jaxfuse-lint-fix"}
    for hook in found.values():
        assert {"id", "name", "entry", "language"} <= set(hook)
        assert hook["language"] == "python"
        assert set(hook["types_or"]) == {"python", "pyi", "jupyter"}  # notebooks too
        assert shlex.split(hook["entry"])[0] == "jaxfuse-lint"  # the console script pyproject installs
    # The entry names a console script that pyproject installs, and that script resolves to a callable.
    import importlib
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module_name, _, attribute = scripts["jaxfuse-lint"].partition(":")
    assert callable(getattr(importlib.import_module(module_name), attribute))


def _run_hook(hook_id: str, files: list[Path]):
    from jaxfuse_lint.cli.main import cli

    args = shlex.split(hooks()[hook_id]["entry"])[1:] + [str(f) for f in files]
    return CliRunner().invoke(cli, args + ["--no-cache"])


def test_lint_hook_fails_on_findings_and_passes_clean_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF101"]\n')
    bad, clean = tmp_path / "bad.py", tmp_path / "clean.py"
    bad.write_text(BAD)
    clean.write_text("import jax\n\n\ndef f(x):\n    return x\n")
    result = _run_hook("jaxfuse-lint", [bad, clean])
    assert result.exit_code == 1 and "bad.py:8:16: JF101" in result.stdout
    assert bad.read_text() == BAD  # the lint hook never writes
    assert _run_hook("jaxfuse-lint", [clean]).exit_code == 0


def test_fix_hook_rewrites_the_file(tmp_path, monkeypatch):
    install_jf101_fixer(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselect = ["JF101"]\n')
    bad = tmp_path / "bad.py"
    bad.write_text(BAD)
    result = _run_hook("jaxfuse-lint-fix", [bad])
    assert result.exit_code == 0, result.output
    fixed = bad.read_text()
    # Workers may run the real JF101 codemod (spawned) or the installed test fixer (forked).
    # (the real one: `v[..., 0] * v[..., 0] + ...`; the test fixer: `(v * v)[..., 0:1] + ...`).
    assert "jnp.sum" not in fixed and ("[..., 0]" in fixed or "[..., 0:1]" in fixed) and (
        "[..., 1]" in fixed or "[..., 1:2]" in fixed)
    assert _run_hook("jaxfuse-lint", [bad]).exit_code == 0


def test_example_workflow_runs_review_and_posts_with_gh():
    from jaxfuse_lint.cli.review import review_command

    text = (ROOT / "examples" / "github-review.yml").read_text()
    workflow = yaml.safe_load(text)
    on = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in on
    assert workflow["permissions"]["pull-requests"] == "write"
    steps = workflow["jobs"]["review"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0 and "head.sha" in checkout["with"]["ref"]
    run_lines = "\n".join(s.get("run", "") for s in steps)
    (line,) = [l.strip() for l in run_lines.splitlines() if l.strip().startswith("jaxfuse-lint review")]
    args = shlex.split(re.sub(r"\$\{\{[^}]*\}\}", "EXPR", line).replace("$GITHUB_STEP_SUMMARY", "summary.md"))[2:]
    ctx = review_command.make_context("review", args)  # parses with the real options, runs nothing
    assert ctx.params["base"] == "EXPR" and ctx.params["output"] == "review.json" and ctx.params["exit_zero"]
    post = next(s for s in steps if "gh api" in s.get("run", ""))
    assert "--method POST" in post["run"] and "/pulls/" in post["run"] and post["run"].rstrip().endswith(
        "--input review.json")
    assert "GH_TOKEN" in post["env"]
