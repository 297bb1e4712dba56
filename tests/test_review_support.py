"""Helpers shared by the review, report and server tests (no tests here).

`install_jf101_fixer` plugs a small, real codemod for JF101 into the engine's
codemod registry, so fixes go through the real pipeline (FixPlan ->
libcst -> whole-line edits) whatever codemods the tree ships at the time.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import libcst as cst

from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods.plan import FixPlan, ImportSpec

FIX_MESSAGE = "Write the 2-wide reduction as explicit terms"


def jf101_build_fix(add_import: str | None = None):
    """A JF101 fixer for `jnp.sum(E, axis=..)` over an axis of size 2 (what the tests use)."""

    def build_fix(violation, model, settings):
        call = violation.node
        if not isinstance(call, cst.Call) or not call.args:
            return None
        operand = model.module.code_for_node(call.args[0].value)
        keep = any(a.keyword is not None and a.keyword.value == "keepdims" for a in call.args)
        template = "({0})[..., 0:1] + ({0})[..., 1:2]" if keep else "({0})[..., 0] + ({0})[..., 1]"
        new = cst.parse_expression(template.format(operand))
        imports = (ImportSpec(add_import),) if add_import else ()
        return FixPlan(Applicability.SAFE, FIX_MESSAGE, {call: new}, imports)

    return build_fix


def install_jf101_fixer(monkeypatch, add_import: str | None = None) -> None:
    import jaxfuse_lint.codemods as codemods

    table = dict(codemods.fixers())
    table["JF101"] = jf101_build_fix(add_import)
    monkeypatch.setattr(codemods, "fixers", lambda: table)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    commit(path, files, "base")
    return path


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for name, text in files.items():
        target = repo / name
        if text is None:
            git(repo, "rm", "-q", name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def install_jf101_fixer_globally(add_import: str | None = None) -> None:
    """For a subprocess (the language server under test): no monkeypatch fixture there."""
    import jaxfuse_lint.codemods as codemods

    table = dict(codemods.fixers())
    table["JF101"] = jf101_build_fix(add_import)
    codemods.fixers = lambda: table
