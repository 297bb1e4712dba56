"""Ignore patterns from a cloned repository (issue 42, item 1): a `.gitignore` line of many
`*` hung `check` (pathspec's regular expressions backtrack: 18 stars then a letter took over
30 s for one path). Patterns are matched in time linear in the pattern and the path
(core/gitignore.py), with git's meaning: checked against `git check-ignore` on a table, and
against pathspec's own translation wherever the two agree with git."""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from jaxfuse_lint.core.gitignore import spec, translate

ROOT = Path(__file__).resolve().parent.parent
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"
STARS = "*" * 30 + "q"
LONG = "a" * 80  # every way of sharing a long name among 30 stars: the old matching never ended


def run_process(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def _tree(tmp_path: Path) -> Path:
    """A project whose two files have long names: one the pattern ignores (a folder ending in `q`),
    one it does not."""
    proj = tmp_path / "proj"
    (proj / f"{LONG}q").mkdir(parents=True)
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\n")
    (proj / f"{LONG}.py").write_text(BAD)
    (proj / f"{LONG}q" / f"{LONG}.py").write_text(BAD)
    return proj


# A hang guard, not a measurement: before the fix this run never ended (its 30 stars against an
# 80-letter name are C(110, 30) ways to try); the acceptance asks for 10 s on a warm machine.
HANG = 120


def test_a_gitignore_line_of_many_stars_does_not_hang_check(tmp_path):
    proj = _tree(tmp_path)
    (proj / ".git").mkdir()  # a repository's root: its .gitignore applies
    (proj / ".gitignore").write_text(STARS + "\n")
    result = run_process("check", "--no-cache", "-j1", ".", cwd=proj, timeout=HANG)
    assert result.returncode == 1, result.stderr
    reported = {line.split(":")[0] for line in result.stdout.splitlines() if "JF201" in line}
    assert reported == {f"{LONG}.py"}


def test_an_extend_exclude_of_many_stars_does_not_hang_check(tmp_path):
    proj = _tree(tmp_path)
    result = run_process("check", "--no-cache", "-j1", "--extend-exclude", STARS, ".", cwd=proj, timeout=HANG)
    assert result.returncode == 1, result.stderr
    reported = {line.split(":")[0] for line in result.stdout.splitlines() if "JF201" in line}
    assert reported == {f"{LONG}.py"}


def test_a_configured_exclude_of_many_stars_does_not_hang_check(tmp_path):
    proj = _tree(tmp_path)
    (proj / "pyproject.toml").write_text(f"[tool.jaxfuse-lint]\nextend-exclude = [{STARS!r}]\n"
                                         f"per-file-ignores = {{{('*a' * 25 + 'b')!r} = ['JF2']}}\n")
    result = run_process("check", "--no-cache", "-j1", ".", cwd=proj, timeout=HANG)
    assert result.returncode == 1, result.stderr
    assert f"{LONG}.py:" in result.stdout and f"{LONG}q" not in result.stdout


@pytest.mark.parametrize("pattern", [
    STARS,
    "*a" * 40 + "b",  # a star per chunk: each chunk tried at every place before
    "**/a/" * 30 + "b",  # `**` between blocks of segments
    "a*" * 20 + "/" + "*b" * 20,
    "?*" * 40 + "q",
    "*[a-z]" * 30 + "!",
])
def test_pathological_patterns_match_like_their_plain_meaning(pattern):
    """Matched quickly (the call returns at all) and rightly: what each pattern means, spelled out."""
    s = spec([pattern])
    long_name = "a" * 2000
    segments = "/".join(["a"] * 500)
    assert not s.match_file(long_name + "x")
    assert not s.match_file(segments + "/x")
    if pattern == STARS:
        assert s.match_file(long_name + "q") and s.match_file(segments + "/q") and not s.match_file(long_name)
    if pattern.startswith("*a"):
        assert s.match_file("a" * 40 + "b") and not s.match_file("a" * 39 + "b")
    if pattern.startswith("**/a/"):
        assert s.match_file(segments + "/b") and not s.match_file("/".join(["a"] * 29) + "/b")


# -- the meaning: git's ----------------------------------------------------------------------------

PATTERNS = [
    "*.py", "/build", "build/", "doc/*.txt", "doc/**/*.txt", "**/foo", "foo/**", "a/**/b", "a/**/b/**/c",
    "*.log\n!important.log", "*.py\n!a.*\na.py", "\\#hash", "\\!bang", "#comment", "a?c", "[abc].py",
    "[a-c]x", "[!a]x", "a[!x]b", "**/", "*/", "*", "**", "***", "a/***/b", "***/b", "a/**b",
    "trailing   ", "escaped\\ ", "x/**/y/**/z", STARS, "*a*a*b", "/*/b", "*/b", "b/", "!", "a\\", "[", "x[",
    "*.PY", "dir/sub/", "/dir/*", "**/dir/*.py", "?", "??", "a*", "*a", "a*b*c", "a/*/c/", "\\*",
]
PATHS = [
    "a.py", "b.log", "important.log", "build", "build/x.py", "sub/build/x.py", "doc/a.txt", "doc/x/a.txt",
    "doc/x/y/a.txt", "foo", "x/foo", "foo/bar", "a/b", "a/x/b", "a/x/y/b", "a/b/c", "a/x/b/y/c", "logs/a.log",
    "logs/keep.log", "#hash", "!bang", "abc", "a.c", "a/c", "b.py", "ax", "bx", "cx", "dx", "a/b/x",
    "axb", "trailing", "escaped ", "x/y/z", "x/1/y/2/z", "aq", "qq", LONG + "q", "aab", "ab", "z/b", "x/z/b",
    "dir/sub/f.py", "dir/f.py", "dir/x/f.py", "r/dir/f.py", "aacb", "abcx", "a/z/c/f", "*", "a.PY",
    "xa", "xab", "q/x/b",
]


@pytest.fixture(scope="module")
def git() -> str:
    found = shutil.which("git")
    if found is None:
        pytest.skip("git is not installed")
    return found


def _git_ignored(git: str, folder: Path, lines: str, paths: list[str]) -> tuple[set[str], list[str]]:
    """(what `git check-ignore` ignores, the PATHS it was asked about): each path created as a
    file, its folders as folders."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir()
    subprocess.run([git, "init", "-q", str(folder)], check=True)
    (folder / ".gitignore").write_text(lines + "\n")
    made = []
    for p in paths:
        target = folder / p
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.write_text("")
            made.append(p)
        except OSError:  # a file of the table that is another's folder (`a/b` and `a/b/c`): the folder wins
            continue
    result = subprocess.run([git, "-c", "core.ignorecase=false", "check-ignore", "--no-index", "--", *made],
                            cwd=folder, capture_output=True, text=True)
    assert result.returncode in (0, 1), result.stderr
    return set(result.stdout.splitlines()), made


@pytest.mark.parametrize("lines", PATTERNS)
def test_the_meaning_is_gits(git, tmp_path, lines):
    """Each pattern's meaning. (How lines combine is pathspec's GitIgnoreSpec, unchanged: it lets
    `!dir/file` re-include a file of an ignored folder, where git does not; discovery never asks,
    since it does not walk into an ignored folder. And `a**/b` is left out: the documentation says
    such stars are plain ones, as pathspec and this module read them; git 2.39 lets them cross
    folders.)"""
    ignored, made = _git_ignored(git, tmp_path / "repo", lines, PATHS)
    s = spec(lines.split("\n"))
    wrong = [p for p in made if s.match_file(p) != (p in ignored)]
    assert wrong == [], f"{lines!r}: differs from git on {wrong}"


def _random_pattern(rng: random.Random) -> str:
    return "".join(rng.choice("ab*/?x!") for _ in range(rng.randint(1, 8)))


def _random_path(rng: random.Random) -> str:
    segments = ["".join(rng.choice("abx") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 4))]
    return "/".join(segments) + rng.choice(["", "/"])


def test_the_meaning_is_pathspecs_where_pathspec_is_gits():
    """pathspec's translation (backtracking) and this one agree on random patterns and paths,
    folders included (a path ending in `/`), negation and the order of lines included. Left out:
    the two places where pathspec differs from git (brackets, which it lets match `/`; a segment
    of three or more stars, which it reads as `*`)."""
    import pathspec

    rng = random.Random(42)
    compared = 0
    while compared < 20000:
        lines = [_random_pattern(rng) for _ in range(rng.randint(1, 3))]
        if any(re.search(r"(^|/)\*\*\*+(/|$)", line) for line in lines):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                reference = pathspec.GitIgnoreSpec.from_lines(lines)
        except ValueError:  # pathspec raises on a line git ignores (a lone `!`)
            continue
        ours = spec(lines)
        for _ in range(5):
            path = _random_path(rng)
            assert ours.match_file(path) == reference.match_file(path), (lines, path)
            compared += 1


@pytest.mark.parametrize("line", ["", "   ", "#x", "/", "!", "a\\", "[", "a[b", "!["])
def test_lines_git_ignores_match_nothing(line):
    assert translate(line) == (None, None)
    assert not spec([line]).match_file("a") and not spec([line, "b"]).match_file("a")


def test_a_bracket_never_matches_a_slash_and_stars_alone_are_a_double_star():
    assert not spec(["a[!x]b"]).match_file("a/b") and spec(["a[!x]b"]).match_file("ayb")
    assert not spec(["a[/]b"]).match_file("a/b")
    assert spec(["a/***/b"]).match_file("a/x/y/b") and spec(["a/***/b"]).match_file("a/b")


def test_a_gitignore_line_git_ignores_does_not_stop_check(tmp_path):
    """`foo\\` (a trailing backslash) made pathspec raise: a traceback, nothing checked."""
    proj = _tree(tmp_path)
    (proj / ".git").mkdir()
    (proj / ".gitignore").write_text("foo\\\n!\n" + LONG + "q/\n")
    result = run_process("check", "--no-cache", "-j1", ".", cwd=proj, timeout=HANG)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    reported = {line.split(":")[0] for line in result.stdout.splitlines() if "JF201" in line}
    assert reported == {f"{LONG}.py"}


def test_a_configured_pattern_with_a_trailing_backslash_is_a_configuration_error(tmp_path):
    proj = _tree(tmp_path)
    (proj / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nextend-exclude = ['foo\\']\n")
    result = run_process("check", "--no-cache", "-j1", ".", cwd=proj, timeout=HANG)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"jaxfuse-lint: error: {proj / 'pyproject.toml'}: `extend-exclude`: invalid glob 'foo\\\\': it ends with a "
        "lone backslash"]
