"""Issue 17, run as a user runs it: `jaxfuse-lint ...` in a temp project with a real pyproject.toml.

Every case that used to print "All checks passed!" having checked nothing, and the
ruff flags and keys people reach for.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BAD = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    @jax.jit
    def f(x, y, z):
        v = jnp.stack([x, y, z], axis=-1)
        return v * jnp.sum(v * v, axis=-1, keepdims=True)
    """
)  # one JF101 finding: a form the default (h100) calibration table reports
REDUCTION = "return v * jnp.sum(v * v, axis=-1, keepdims=True)"
# One safe fix (JF301 on a plain module function) and one unsafe-only (JF302 of a lambda).
FIXABLE = textwrap.dedent(
    """\
    import jax


    def step(v):
        return v + 1


    def loop(x, n):
        for _ in range(n):
            x = jax.jit(step)(x)
        return x


    def once(x):
        return jax.jit(lambda v: v * 2)(x)
    """
)


def _command() -> list[str]:
    """The installed console script when there is one (what users type), else `python -m`."""
    script = Path(sys.executable).with_name("jaxfuse-lint")
    if script.exists():
        return [str(script)]
    found = shutil.which("jaxfuse-lint")
    return [found] if found else [sys.executable, "-m", "jaxfuse_lint"]


def run(*args, cwd, env=None, stdin=None):
    environment = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    environment.update(env or {})
    return subprocess.run([*_command(), *args], capture_output=True, text=True, cwd=cwd, env=environment,
                          input=stdin)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.jaxfuse-lint]\n')
    return tmp_path


def codes(r) -> list[str]:
    return sorted(d["code"] for d in json.loads(r.stdout))


# -- named paths are always checked -------------------------------------------------------------

@pytest.mark.parametrize("folder", ["build/pkg", ".venv/lib/python3.11/site-packages/jax", "dist", "generated"])
def test_a_named_folder_is_checked_even_if_excluded(project, folder):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("generated/\n")
    (project / ".venv").mkdir()
    (project / ".venv" / "pyvenv.cfg").write_text("")
    (project / folder).mkdir(parents=True)
    (project / folder / "m.py").write_text(BAD)
    walked = run("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert codes(walked) == [], "the folder is excluded from a walk of the project"
    named = run("check", "--no-cache", "--output-format", "json", folder, cwd=project)
    assert named.returncode == 1 and codes(named) == ["JF101"], named.stderr
    forced = run("check", "--no-cache", "--force-exclude", folder, cwd=project)
    assert forced.returncode == 0
    assert "No Python files found" in forced.stderr and "All checks passed" not in forced.stderr


def test_force_exclude_applies_to_named_files_for_pre_commit(project):
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nextend-exclude = ["legacy/"]\n')
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(BAD)
    (project / "new.py").write_text(BAD)
    r = run("check", "--no-cache", "--force-exclude", "--output-format", "json", "legacy/old.py", "new.py",
            cwd=project)
    assert [Path(d["filename"]).name for d in json.loads(r.stdout)] == ["new.py"]
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert hooks.count("--force-exclude") == 2


def test_excludes_still_apply_below_a_named_folder(project):
    (project / "pkg" / "build").mkdir(parents=True)
    (project / "pkg" / "m.py").write_text(BAD)
    (project / "pkg" / "build" / "gen.py").write_text(BAD)
    r = run("check", "--no-cache", "--output-format", "json", "pkg", cwd=project)
    assert [Path(d["filename"]).name for d in json.loads(r.stdout)] == ["m.py"]


# -- nothing found is not a pass ------------------------------------------------------------------

def test_an_empty_folder_warns_instead_of_passing(project):
    (project / "empty").mkdir()
    r = run("check", "empty", cwd=project)
    assert r.returncode == 0  # ruff's exit code: a warning, not an error (pre-commit with excluded files)
    assert "warning: No Python files found under the given path(s)" in r.stderr
    assert "All checks passed" not in r.stderr and r.stdout == ""


def test_a_named_text_file_is_not_checked_and_says_so(project):
    (project / "notes.txt").write_text("def f(:\n")
    r = run("check", "notes.txt", cwd=project)
    assert r.returncode == 0
    assert "notes.txt: not a Python source file" in r.stderr
    assert "No Python files found" in r.stderr and "All checks passed" not in r.stderr


def test_nothing_found_in_json_is_still_valid_json(project):
    (project / "empty").mkdir()
    r = run("check", "--output-format", "json", "empty", cwd=project)
    assert json.loads(r.stdout) == [] and "No Python files found" in r.stderr


def test_include_decides_what_a_walk_selects(project):
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\ninclude = ["*.py", "scripts/run"]\n')
    (project / "scripts").mkdir()
    (project / "scripts" / "run").write_text(BAD)
    (project / "scripts" / "other").write_text(BAD)
    r = run("check", "--show-files", ".", cwd=project)
    assert r.stdout.split() == [str(Path("scripts") / "run")] or r.stdout.split() == ["./scripts/run"]


# -- the parse check runs on every file -----------------------------------------------------------

@pytest.mark.parametrize("text,row,col", [
    ("def f(:\n    pass\n", 1, 7),
    ("x = (1,\n", 1, 5),
    ("def f():\nreturn 1\n", 2, 1),
    ("x = 1\n  y = 2\n", 2, 2),  # where CPython puts it
])
def test_syntax_errors_are_reported_without_jax(project, text, row, col):
    (project / "plain.py").write_text(text)
    r = run("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert r.returncode == 1, r.stderr
    [d] = json.loads(r.stdout)
    assert d["code"] == "JF000" and (d["location"]["row"], d["location"]["column"]) == (row, col)
    assert d["message"].startswith("Could not parse file: ")
    # The cache does not turn it into a pass on the second run.
    again = run("check", "--output-format", "json", ".", cwd=project)
    assert codes(again) == ["JF000"]
    # --fix leaves it alone and still reports it.
    fixed = run("check", "--fix", "plain.py", cwd=project)
    assert fixed.returncode == 1 and "JF000" in fixed.stdout
    assert (project / "plain.py").read_text() == text


def test_an_undecodable_byte_is_reported_at_its_line_and_column(project):
    (project / "enc.py").write_bytes(b"x = 1\ny = '\xff'\n")
    r = run("check", "--no-cache", "--output-format", "json", "enc.py", cwd=project)
    [d] = json.loads(r.stdout)
    assert d["code"] == "JF000" and (d["location"]["row"], d["location"]["column"]) == (2, 6)
    assert d["message"] == "Could not parse file: invalid utf-8 byte 0xff; the file must be valid utf-8"


def test_jf000_has_a_rule_page_and_its_url_exists(project):
    (project / "plain.py").write_text("def f(:\n")
    r = run("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    url = json.loads(r.stdout)[0]["url"]
    assert url.endswith("/docs/rules/syntax-error.md")
    assert (ROOT / "docs" / "rules" / "syntax-error.md").is_file()
    page = run("rule", "JF000", cwd=project)
    assert page.returncode == 0 and page.stdout.startswith("# syntax-error (JF000)")


def test_stdin_syntax_error_without_jax(project):
    r = run("check", "--stdin-filename", "x.py", "-", cwd=project, stdin="def f(:\n")
    assert r.returncode == 1 and r.stdout.startswith("x.py:1:7: JF000 ")
    fixed = run("check", "--fix", "--stdin-filename", "x.py", "-", cwd=project, stdin="def f(:\n")
    assert fixed.returncode == 1 and fixed.stdout == "def f(:\n"


# -- --statistics ---------------------------------------------------------------------------------

def test_statistics_json_is_a_list_like_ruffs(project):
    (project / "m.py").write_text(FIXABLE)
    r = run("check", "--no-cache", "--statistics", "--output-format", "json", ".", cwd=project)
    assert r.returncode == 1
    rows = json.loads(r.stdout)
    assert rows == [
        {"code": "JF301", "name": "jit-in-loop", "count": 1, "fixable": True, "fixable_count": 1},
        {"code": "JF302", "name": "jit-of-fresh-callable", "count": 1, "fixable": False, "fixable_count": 0},
    ]
    unsafe = json.loads(run("check", "--no-cache", "--statistics", "--output-format", "json", "--unsafe-fixes", ".",
                            cwd=project).stdout)
    assert [r["fixable"] for r in unsafe] == [True, True]


def test_statistics_text_has_markers_and_a_total(project):
    (project / "m.py").write_text(FIXABLE)
    r = run("check", "--no-cache", "--statistics", ".", cwd=project)
    lines = r.stdout.splitlines()
    assert lines[0] == "1\tJF301\t[*] jit-in-loop"
    assert lines[1] == "1\tJF302\t[ ] jit-of-fresh-callable"  # unsafe-only: not applied by --fix (ruff)
    assert "Found 2 diagnostics." in lines
    assert any("1 more fixable with `--fix --unsafe-fixes`" in line for line in lines)


def test_statistics_rejects_formats_it_cannot_honour(project):
    (project / "m.py").write_text(FIXABLE)
    r = run("check", "--statistics", "--output-format", "sarif", ".", cwd=project)
    assert r.returncode == 2 and "--statistics supports" in r.stderr


# -- verbosity, settings, files -------------------------------------------------------------------

def test_show_files_and_show_settings(project):
    (project / "a.py").write_text("x = 1\n")
    (project / "build").mkdir()
    (project / "build" / "b.py").write_text("x = 1\n")
    r = run("check", "--show-files", ".", cwd=project)
    assert r.returncode == 0 and [Path(p).name for p in r.stdout.split()] == ["a.py"]
    s = run("check", "--show-settings", "--extend-select", "JF901", cwd=project)
    assert s.returncode == 0
    assert f"# config: {project / 'pyproject.toml'}" in s.stdout
    assert 'extend-select = ["JF901"]' in s.stdout and 'include = ["*.py", "*.pyi", "*.ipynb"]' in s.stdout


def test_verbose_quiet_and_silent(project):
    (project / "m.py").write_text(BAD)
    (project / "build").mkdir()
    v = run("check", "--no-cache", "-v", ".", cwd=project)
    assert "skipped" in v.stderr and "build" in v.stderr and "checking 1 file" in v.stderr
    q = run("check", "--no-cache", "-q", ".", cwd=project)
    assert q.returncode == 1 and "JF101" in q.stdout and q.stderr == ""
    s = run("check", "--no-cache", "-s", ".", cwd=project)
    assert s.returncode == 1 and s.stdout == "" and s.stderr == ""


# -- ruff's everyday flags ------------------------------------------------------------------------

def test_output_file(project):
    (project / "m.py").write_text(BAD)
    r = run("check", "--no-cache", "--output-format", "json", "-o", "reports/lint.json", ".", cwd=project)
    assert r.returncode == 1 and r.stdout == ""
    assert [d["code"] for d in json.loads((project / "reports" / "lint.json").read_text())] == ["JF101"]


def test_exclude_on_the_command_line(project):
    (project / "a.py").write_text(BAD)
    (project / "b.py").write_text(BAD)
    r = run("check", "--no-cache", "--output-format", "json", "--extend-exclude", "b.py", ".", cwd=project)
    assert [Path(d["filename"]).name for d in json.loads(r.stdout)] == ["a.py"]
    r = run("check", "--no-cache", "--show-files", "--exclude", "a.py,b.py", ".", cwd=project)
    assert r.stdout == "" and "No Python files found" in r.stderr


def test_fix_only_no_fix_and_exit_non_zero_on_fix(project):
    (project / "m.py").write_text(FIXABLE)
    no_fix = run("check", "--fix", "--no-fix", ".", cwd=project)
    assert no_fix.returncode == 1 and (project / "m.py").read_text() == FIXABLE
    only = run("check", "--fix-only", ".", cwd=project)
    # The JF302 (unsafe) finding is left, but --fix-only neither reports it nor fails on it.
    assert only.returncode == 0 and only.stdout.startswith("Fixed 1 diagnostic.\n") and only.stderr == ""
    assert "step_jit = jax.jit(step)" in (project / "m.py").read_text()
    (project / "m.py").write_text(FIXABLE.replace("def once(x):\n    return jax.jit(lambda v: v * 2)(x)\n", ""))
    strict = run("check", "--fix", "--exit-non-zero-on-fix", ".", cwd=project)
    assert strict.returncode == 1 and "Fixed 1 diagnostic, 0 remaining." in strict.stdout
    clean = run("check", "--fix", "--exit-non-zero-on-fix", ".", cwd=project)
    assert clean.returncode == 0


def test_add_noqa_then_check_passes(project):
    text = BAD + "\n\ndef g(x):\n    y = (  # already here\n        1)\n    return x\n"
    (project / "m.py").write_text(text.replace(REDUCTION, f"{REDUCTION}  # noqa: E501"))
    r = run("check", "--add-noqa", ".", cwd=project)
    assert r.returncode == 0 and "Added 1 noqa directive." in r.stderr
    assert f"{REDUCTION}  # noqa: E501, JF101" in (project / "m.py").read_text()
    assert run("check", "--no-cache", ".", cwd=project).returncode == 0


def test_add_noqa_in_a_notebook_goes_into_its_cells(project):
    """The directives go into the code cells (the JSON stays a notebook, in its own layout); magics stay."""
    cells = [
        {"cell_type": "code", "execution_count": None, "id": "a", "metadata": {}, "outputs": [],
         "source": ["%matplotlib inline\n", "import jax\n", "import numpy as np"]},
        {"cell_type": "markdown", "id": "b", "metadata": {}, "source": ["# notes"]},
        {"cell_type": "code", "execution_count": None, "id": "c", "metadata": {}, "outputs": [],
         "source": ["@jax.jit\n", "def f(x):\n", "    return x + np.eye(64)  # noqa: E501"]},
    ]
    raw = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"
    (project / "n.ipynb").write_text(raw)
    r = run("check", "--add-noqa", "n.ipynb", cwd=project)
    assert r.returncode == 0 and "Added 1 noqa directive." in r.stderr, r.stderr
    written = (project / "n.ipynb").read_text()
    assert written == raw.replace("np.eye(64)  # noqa: E501", "np.eye(64)  # noqa: E501, JF201")
    assert run("check", "--no-cache", "n.ipynb", cwd=project).returncode == 0


def test_config_output_format_fixable_unfixable(project):
    (project / "m.py").write_text(FIXABLE)
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\noutput-format = "json"\nunfixable = ["JF301"]\n')
    r = run("check", "--no-cache", ".", cwd=project)
    data = json.loads(r.stdout)
    assert all(d["fix"] is None for d in data if d["code"] == "JF301")
    run("check", "--fix", ".", cwd=project)
    assert (project / "m.py").read_text() == FIXABLE
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nfixable = ["JF302"]\n')
    run("check", "--fix", "--unsafe-fixes", ".", cwd=project)
    fixed = (project / "m.py").read_text()
    assert "jax.jit(step)(x)" in fixed and "_once_jit" in fixed


def test_extend_inherits_and_extend_per_file_ignores_add(project):
    (project / "base.toml").write_text('[tool.jaxfuse-lint]\nignore = ["JF302"]\nper-file-ignores = {"a.py" = ["JF101"]}\n')
    (project / "pyproject.toml").write_text(
        '[tool.jaxfuse-lint]\nextend = "base.toml"\nextend-per-file-ignores = {"b.py" = ["JF101"]}\n')
    for name in ("a.py", "b.py", "c.py"):
        (project / name).write_text(BAD)
    (project / "d.py").write_text(FIXABLE)
    r = run("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert sorted((Path(d["filename"]).name, d["code"]) for d in json.loads(r.stdout)) == [
        ("c.py", "JF101"), ("d.py", "JF301")]
    (project / "base.toml").write_text('[tool.jaxfuse-lint]\nextend = "pyproject.toml"\n')
    cycle = run("check", ".", cwd=project)
    assert cycle.returncode == 2 and "`extend` cycle" in cycle.stderr


def test_misspelt_key_gets_a_suggestion(project):
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nselct = ["JF1"]\n')
    r = run("check", ".", cwd=project)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("unknown key `selct` in [tool.jaxfuse-lint]; did you mean `select`?")
    assert len(r.stderr.strip().splitlines()) == 1


def test_known_keys_follow_the_settings_dataclass():
    from dataclasses import fields

    from jaxfuse_lint.core.config import Settings, known_keys

    keys = known_keys()
    for f in fields(Settings):
        if f.name not in ("config_path", "project_root", "cache_dir_root", "extra"):
            assert f.name.replace("_", "-") in keys
    assert {"extend", "extend-per-file-ignores", "include", "fixable", "unfixable", "output-format"} <= keys


# -- colour ---------------------------------------------------------------------------------------

def test_no_colour_when_piped_and_force_color_and_no_color(project):
    (project / "m.py").write_text(FIXABLE)
    plain = run("check", "--no-cache", ".", cwd=project)
    assert "\x1b[" not in plain.stdout + plain.stderr
    forced = run("check", "--no-cache", ".", cwd=project, env={"FORCE_COLOR": "1"})
    assert "\x1b[" in forced.stdout
    both = run("check", "--no-cache", ".", cwd=project, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[" not in both.stdout + both.stderr
    to_file = run("check", "--no-cache", "-o", "out.txt", ".", cwd=project, env={"FORCE_COLOR": "1"})
    assert to_file.returncode == 1 and "\x1b[" not in (project / "out.txt").read_text()


# -- JF901, junit, pylint -------------------------------------------------------------------------

def test_unused_noqa_is_opt_in_and_fixable(project):
    (project / "m.py").write_text(BAD.replace(REDUCTION, f"{REDUCTION} + 1  # noqa: JF101")
                                  + "\n\nz = jax.numpy.ones(3)  # noqa: JF201\n")
    assert run("check", "--no-cache", ".", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nextend-select = ["JF901"]\n')
    r = run("check", "--no-cache", "--output-format", "json", ".", cwd=project)
    [d] = json.loads(r.stdout)
    assert d["code"] == "JF901" and d["url"].endswith("/docs/rules/unused-noqa.md")
    assert (ROOT / "docs" / "rules" / "unused-noqa.md").is_file()
    assert run("rule", "JF901", cwd=project).stdout.startswith("# unused-noqa (JF901)")
    fixed = run("check", "--fix", ".", cwd=project)
    assert fixed.returncode == 0 and "Fixed 1 diagnostic, 0 remaining." in fixed.stdout
    assert (project / "m.py").read_text().endswith("z = jax.numpy.ones(3)\n")


def test_junit_and_pylint_formats(project):
    import xml.etree.ElementTree as ET

    (project / "m.py").write_text(BAD)
    (project / "broken.py").write_text("def f(:\n")
    pylint = run("check", "--no-cache", "--output-format", "pylint", ".", cwd=project)
    assert pylint.stdout.splitlines() == [
        "broken.py:1: [JF000] Could not parse file: invalid syntax",
        "m.py:8: [JF101] " + pylint.stdout.splitlines()[1].split("] ", 1)[1],
    ]
    junit = run("check", "--no-cache", "--output-format", "junit", ".", cwd=project)
    suites = ET.fromstring(junit.stdout)
    assert suites.tag == "testsuites" and suites.get("failures") == "2"
    cases = [(s.get("name"), c.get("name"), c.get("line")) for s in suites for c in s]
    assert cases == [("broken.py", "org.jaxfuse_lint.JF000", "1"), ("m.py", "org.jaxfuse_lint.JF101", "8")]
    (project / "m.py").write_text("x = 1\n")
    (project / "broken.py").unlink()
    clean = ET.fromstring(run("check", "--no-cache", "--output-format", "junit", ".", cwd=project).stdout)
    assert clean.get("failures") == "0" and clean[0][0].get("name") == "No errors found"


def test_bare_name_excludes_match_as_pathspec_does():
    """discovery's set-lookup fast path for bare-name patterns agrees with gitignore matching."""
    import random
    from dataclasses import replace

    from jaxfuse_lint.core.config import DEFAULT_EXCLUDE, Settings
    from jaxfuse_lint.discover.files import _Excluder, _plain_names, _suffixes

    settings = replace(Settings(), extend_exclude=("out/", "notes.txt"))
    root = Path("/nonexistent-root")
    fast = _Excluder(settings, root)
    slow = _Excluder(settings, root)
    slow.plain = None  # pathspec, as for any pattern that is not a bare name
    assert fast.plain is not None
    pool = ["a", "build", "out", "x.py", "dist", ".venv", "site-packages", "pkg", "__pycache__", "notes.txt", "out.py"]
    rng = random.Random(0)
    for _ in range(3000):
        path = root.joinpath(*[rng.choice(pool) for _ in range(rng.randint(1, 4))])
        for is_dir in (False, True):
            assert fast.matches(path, is_dir, resolved=path) == slow.matches(path, is_dir, resolved=path), (path, is_dir)
    assert _plain_names(["*.egg-info"]) is None and _plain_names(["docs/build"]) is None and _plain_names(["!keep"]) is None
    assert _plain_names(DEFAULT_EXCLUDE) is not None
    assert _suffixes(("*.py", "*.ipynb")) == (".py", ".ipynb") and _suffixes(("*.py", "scripts/run")) is None
