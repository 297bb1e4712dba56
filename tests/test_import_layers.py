"""The package's architecture holds: import-linter's contracts in pyproject.toml (layers from the
entry points down to the shared types, verify apart from the linting core, rules apart from
codemods, the server apart from the review bot, no import circle at any level). Every import
counts, including those inside functions and under `if TYPE_CHECKING:`. CI also runs `lint-imports`."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LINT = ("import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command.main(['--config', 'pyproject.toml', '--no-cache'], standalone_mode=False))")


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", LINT], cwd=root, capture_output=True, text=True, env=env)


def test_every_contract_is_kept():
    run = _lint_imports(ROOT)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_type_checking_imports_count():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert config.get("exclude_type_checking_imports", False) is False


def test_every_top_level_part_of_the_package_is_in_a_layer():
    """A new top-level module or package must be placed in the layers (else the contract says nothing of it)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    placed = {part.strip() for layer in layers["layers"] for part in layer.split("|")}
    package = ROOT / "jaxfuse_lint"
    parts = {p.stem for p in package.glob("*.py") if p.name != "__init__.py"}
    parts |= {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert parts == placed


def test_a_circle_breaks_the_contract(tmp_path):
    """The check can fail: a copy of the package with one upward import added is refused."""
    import shutil

    shutil.copytree(ROOT / "jaxfuse_lint", tmp_path / "jaxfuse_lint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    lines = tmp_path / "jaxfuse_lint" / "core" / "lines.py"
    lines.write_text(lines.read_text() + "\n\ndef _late():\n    from jaxfuse_lint.cli import main  # noqa\n")
    run = _lint_imports(tmp_path)
    assert run.returncode != 0
    assert "jaxfuse_lint.core.lines -> jaxfuse_lint.cli" in run.stdout.replace("\n", " ").replace("  ", " ") \
        or "core.lines" in run.stdout


def test_the_architecture_page_names_every_module():
    """docs/ARCHITECTURE.md's tree matches the package: every module is named there (a rule's,
    a codemod's and an output format's modules are covered by their folder's one line)."""
    import re

    from jaxfuse_lint.report import FORMATS

    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    tree = doc[doc.index("## The tree"):doc.index("## SemanticModel API")]
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", tree))
    package = ROOT / "jaxfuse_lint"
    unnamed = []
    for path in sorted(package.rglob("*.py")):
        stem = path.stem
        if stem == "__init__" or re.match(r"jf\d{3}_", stem) or (path.parent.name == "report" and stem in FORMATS.values()):
            continue
        if stem not in words:
            unnamed.append(str(path.relative_to(ROOT)))
    folders = [d.name for d in package.iterdir() if (d / "__init__.py").is_file()]
    unnamed += [f"jaxfuse_lint/{name}/" for name in folders if f"{name}/" not in tree]
    assert not unnamed, f"docs/ARCHITECTURE.md does not name: {unnamed}"
