"""Every install command in the docs and in the tool's messages works from this repository as written.

jaxfuse-lint is not on a package index: it installs from its repository (`pip install -e .`,
`pip install -e '.[verify,gpu]'`, `pip install ./xla-gpu`). A command that names it, or a folder
that is not there, or an extra it does not declare, is one a user cannot run.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Where install commands are written: the docs, the examples, CI, and every message and --help text.
SOURCES = ["README.md", "docs/**/*.md", "examples/*", ".ci/*", "setup.py", "xla-gpu/*.toml", "xla-gpu/*.py",
           "jaxfuse_lint/**/*.py", "jaxfuse_lint/**/*.md", "benchmarks/*.py", "benchmarks/**/*.md"]
# The example workflow installs jaxfuse-lint from a copy of this repository kept as a submodule there.
CHECKOUTS = {"tools/jaxfuse-lint": ROOT}
# Third-party packages the docs tell users to install for themselves (from a package index).
THIRD_PARTY = {"jax", "pip"}
OUR_DISTRIBUTIONS = {"jaxfuse-lint", "jaxfuse_lint", "jaxfuse-lint-xla-gpu", "jaxfuse_lint_xla_gpu"}
INSTALL = re.compile(r"\bpip3? install\b(?P<rest>[^\n`]*)")
OPTIONS_WITH_VALUES = {"-r", "-c", "-w", "-d", "-t", "--target", "--prefix", "--constraint", "--requirement"}
REQUIREMENT = re.compile(r"(?P<target>[A-Za-z0-9_.$/-]+)(\[(?P<extras>[A-Za-z0-9_,-]+)\])?")


def declared_extras(project: Path) -> set[str]:
    if not (project / "setup.py").exists():
        return set()
    for node in ast.walk(ast.parse((project / "setup.py").read_text())):
        if isinstance(node, ast.keyword) and node.arg == "extras_require" and isinstance(node.value, ast.Dict):
            return {key.value for key in node.value.keys if isinstance(key, ast.Constant)}
    return set()


def requirements(rest: str) -> list[str]:
    """The requirements of one `pip install` command: its first argument that is not an option, and the
    ones after it that are a folder (`./x`) or carry extras (prose may follow the command)."""
    words = [w.strip("'\"") for w in re.findall(r"'[^']*'|\"[^\"]*\"|\S+", rest.split(" #")[0])]
    found: list[str] = []
    skip_value = False
    for word in words:
        if word in {"&&", ";", "|", "||"} or word.startswith(("(", ")")):
            break
        if skip_value:
            skip_value = False
        elif word.startswith("-"):
            skip_value = word in OPTIONS_WITH_VALUES
        else:
            word = word.rstrip(",:;)")
            if found and not (word.startswith(("./", "../", ".[")) or word == "." or "[" in word):
                break
            found.append(word)
    return found


def install_commands() -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for pattern in SOURCES:
        for path in sorted(ROOT.glob(pattern)):
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INSTALL.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                seen.append((f"{path.relative_to(ROOT)}:{line}", match.group("rest")))
    return seen


def problem(requirement: str) -> str | None:
    match = REQUIREMENT.fullmatch(requirement)
    if match is None:
        return "not a requirement pip reads"
    target, extras = match.group("target"), set(filter(None, (match.group("extras") or "").split(",")))
    if target.startswith("$"):
        return None  # a shell variable: .ci/run's own environments
    if target.startswith("."):
        relative = target.lstrip("./") if target not in {".", "./"} else ""
        project = CHECKOUTS.get(relative, ROOT / relative)
        if not (project / "pyproject.toml").is_file():
            return f"{target} is not a project folder of this repository"
        unknown = extras - declared_extras(project)
        return f"{target} declares no extra {sorted(unknown)}" if unknown else None
    name = target.lower()
    if name in OUR_DISTRIBUTIONS:
        return f"{target} is not on a package index: install it from the repository (pip install -e .)"
    if name not in THIRD_PARTY:
        return f"{target}: not a package these docs are known to install"
    return None


def test_install_lines_are_found():
    where = {w.split(":")[0] for w, _ in install_commands()}
    assert {"README.md", "docs/gpu.md", "docs/editors.md", "jaxfuse_lint/verify/backend.py",
            "examples/github-review.yml"} <= where


def test_every_install_line_works_from_this_repository():
    bad = []
    for where, rest in install_commands():
        found = requirements(rest)
        if not found:
            bad.append(f"{where}: `pip install{rest}` installs nothing")
        for requirement in found:
            why = problem(requirement)
            if why:
                bad.append(f"{where}: {why}")
    assert not bad, "\n".join(bad)


def test_the_checker_rejects_what_does_not_install():
    assert problem("jaxfuse-lint") and problem("jaxfuse-lint[gpu]") and problem(".[nope]")
    assert problem("./no-such-folder")
    assert requirements(" jaxfuse-lint   # pygls and lsprotocol come with it") == ["jaxfuse-lint"]
    assert requirements(" -e '.[verify,gpu]' in the repository") == [".[verify,gpu]"]
    assert requirements(" --force-reinstall --no-deps ./xla-gpu in jaxfuse-lint's repository") == ["./xla-gpu"]
    assert problem(".[verify,gpu]") is None and problem("./xla-gpu") is None and problem("jax[cuda12]") is None
