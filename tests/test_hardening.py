"""What an adversarial user found (issue 27): writes outside the tree, data loss, crashes.
Each test reproduces one finding; the crashes run in a subprocess."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"


def run_cli(*args: str, input: bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=input)


def run_process(*args: str, input: bytes | None = None, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], input=input, capture_output=True,
                          cwd=cwd, env=env, timeout=timeout)


# -- 1: symbolic links ------------------------------------------------------------------------------

def test_fix_writes_a_linked_file_through_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / "tree").mkdir()
    real = tmp_path / "tree" / "real.py"
    real.write_text(BAD)
    link = tmp_path / "tree" / "link.py"
    link.symlink_to("real.py")
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(link))
    assert link.is_symlink() and os.readlink(link) == "real.py"
    assert "jnp.eye(64)" in real.read_text()


def test_fix_leaves_a_link_out_of_the_tree_and_says_so(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "elsewhere").mkdir()
    real = tmp_path / "elsewhere" / "real.py"
    real.write_text(BAD)
    (tmp_path / "tree" / "link.py").symlink_to(real)
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(tmp_path / "tree"))
    assert (tmp_path / "tree" / "link.py").is_symlink()
    assert real.read_text() == BAD
    assert "not fixed: a symbolic link" in result.output


def test_add_noqa_leaves_a_link_out_of_the_tree_and_says_so(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "elsewhere").mkdir()
    real = tmp_path / "elsewhere" / "real.py"
    real.write_text(BAD)
    (tmp_path / "tree" / "link.py").symlink_to(real)
    inside = tmp_path / "tree" / "inside.py"
    inside.write_text(BAD)
    result = run_cli("check", "--no-cache", "--add-noqa", str(tmp_path / "tree"))
    assert (tmp_path / "tree" / "link.py").is_symlink()
    assert real.read_text() == BAD
    assert "no `# noqa` added: a symbolic link" in result.output
    assert "# noqa: JF201" in inside.read_text()
    # Named, the link is the user's to change: written through to its target.
    run_cli("check", "--no-cache", "--add-noqa", str(tmp_path / "tree" / "link.py"))
    assert (tmp_path / "tree" / "link.py").is_symlink() and "# noqa: JF201" in real.read_text()


def test_folder_links_out_of_the_tree_are_not_followed(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "elsewhere").mkdir()
    outside = tmp_path / "elsewhere" / "m.py"
    outside.write_text(BAD)
    (tmp_path / "tree" / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(tmp_path / "tree"))
    assert outside.read_text() == BAD, result.output



# -- 3 and 16: what a write leaves and keeps --------------------------------------------------------

def test_fix_removes_its_own_leftover_temporary_files_of_an_interrupted_run(tmp_path):
    import fcntl

    path = tmp_path / "m.py"
    path.write_text(BAD)
    old = tmp_path / ".m.py.ab12cd_9.jaxfuse-tmp"  # what a kill -9 during a write leaves
    old.write_text("half")
    young = tmp_path / ".m.py.zz12cd_9.jaxfuse-tmp"  # killed a second ago: no write holds it (issue 37)
    young.write_text("half")
    in_flight = tmp_path / ".m.py.yy12cd_9.jaxfuse-tmp"  # another run's write in flight holds its lock
    in_flight.write_text("in flight")
    other = tmp_path / ".other.py.ab12cd_9.jaxfuse-tmp"  # not beside a file being written
    other.write_text("x")
    lookalike = tmp_path / ".m.py.notours.jaxfuse-tmp"
    lookalike.write_text("x")
    past = time.time() - 3600
    for p in (old, other, lookalike):
        os.utime(p, (past, past))
    with open(in_flight, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert "jnp.eye(64)" in path.read_text()
    assert not old.exists() and not young.exists()
    assert in_flight.exists() and other.exists() and lookalike.exists()
    assert "left by an interrupted earlier run" in result.output


def test_fix_replaces_a_hard_linked_file_whole_and_says_the_link_is_broken(tmp_path):
    """Issue 37: writing in place to keep the link left half a file when the write failed; the
    file is replaced whole now, and its other names keep the old text (a package cache or a
    backup snapshot sharing it must not change with it)."""
    path = tmp_path / "m.py"
    path.write_text(BAD)
    twin = tmp_path / "twin.py"
    os.link(path, twin)
    result = run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "--select", "JF201", str(path))
    assert "jnp.eye(64)" in path.read_text()
    assert twin.read_text() == BAD and os.stat(path).st_ino != os.stat(twin).st_ino
    assert "other hard link" in result.output and "the link is broken" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py", "twin.py"]


def test_fix_keeps_extended_attributes(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    try:
        os.setxattr(path, "user.origin", b"kept")
    except (AttributeError, OSError):
        pytest.skip("no user extended attributes here")
    run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert "jnp.eye(64)" in path.read_text()
    assert os.getxattr(path, "user.origin") == b"kept"


# -- 2: a cache-dir naming someone else's folder ---------------------------------------------------

def test_cache_dir_never_deletes_or_marks_a_folder_the_tool_did_not_create(tmp_path):
    from dataclasses import replace

    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.run.runner import check_files

    home = tmp_path / "home"  # a user's folder that a pyproject names as `cache-dir`
    precious = home / ("0123456789abcdef")
    precious.mkdir(parents=True)
    (precious / "thesis.tex").write_text("years of work")
    past = time.time() - 10 * 24 * 3600
    os.utime(precious, (past, past))
    src = tmp_path / "m.py"
    src.write_text(BAD)
    run = check_files([src], replace(Settings(), cache_dir=str(home)), jobs=1, use_cache=True)
    assert run.diagnostics
    assert (precious / "thesis.tex").read_text() == "years of work"
    assert not (home / ".gitignore").exists() and not (home / "CACHEDIR.TAG").exists()


# -- 4 and 5: the stdin path -------------------------------------------------------------------------

DEEP = {
    # (what, source, the message JF000 must give)
    "parentheses": b"import jax\nx = " + b"(" * 2000 + b"1" + b")" * 2000 + b"\n",
    "parentheses_rejected_by_cpython": b"import jax\nx = " + b"(" * 700 + b"1" + b")" * 700 + b"\n",
    "brackets_on_lines": b"import jax\nx = " + b"[\n" * 2000 + b"]\n" * 2000,
    "not_on_lines": b"import jax\nx = (\n" + b"not\n" * 20000 + b"y)\n",
    "minus_on_lines": b"import jax\nx = (\n" + b"-\n" * 20000 + b"1)\n",
    "minus": b"import jax\nx = " + b"-" * 20000 + b"1\n",
    "lambdas": b"import jax\nx = (\n" + b"lambda:\n" * 5000 + b"2)\n",
    "elifs": b"import jax\nif a: pass\n" + b"elif a: pass\n" * 5000,
    "backslashes": b"import jax\nx = \\\n" + b"-\\\n" * 20000 + b"1\n",
}


_STDIN_RUNS = """
import json, sys
from click.testing import CliRunner
from jaxfuse_lint.cli.main import cli
from tests.test_hardening import DEEP
out = {}
for what, data in sorted(DEEP.items()):
    for mode in ("check", "--fix", "--diff"):
        args = ["check", "--no-cache", "--stdin-filename", "f.py", "-"] + ([mode] if mode != "check" else [])
        r = CliRunner().invoke(cli, args, input=data)
        out[what + " " + mode] = [r.exit_code, None if r.exception is None or isinstance(r.exception, SystemExit) else repr(r.exception),
                                  r.stdout if mode == "check" else ""]
print(json.dumps(out))
"""


def test_stdin_reports_deep_nesting_as_jf000_and_never_crashes():
    """In a subprocess: libcst's native parser overflowed its stack (a segfault) or ran for
    minutes on these; CPython's parser now looks first, as in a folder run."""
    import json

    proc = subprocess.run([sys.executable, "-c", _STDIN_RUNS], capture_output=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-1000:])
    runs = json.loads(proc.stdout)
    for key, (code, exception, stdout) in runs.items():
        assert exception is None, (key, exception)
        # --diff: nothing to change (exit 0); check and --fix: the JF000 that remains (exit 1)
        assert code == (0 if key.endswith("--diff") else 1), (key, code)
        if key.endswith(" check"):
            assert "JF000" in stdout and "MemoryError" not in stdout, (key, stdout)
            assert "too deeply nested" in stdout or "too many nested parentheses" in stdout, (key, stdout)


@pytest.mark.parametrize("data", [b"\xff\xfe\x00\x01binary", b"import jax\nx = '\xff'\n"])
@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_stdin_fix_and_diff_on_bytes_that_are_not_text(data, mode):
    result = run_cli("check", "--no-cache", mode, "--stdin-filename", "f.py", "-", input=data)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1
    assert "JF000" in result.output
    if mode == "--fix":
        assert result.stdout_bytes == data  # the buffer is given back as it was


# -- 6, 7, 16: configuration and discovery errors are one line ---------------------------------------

def test_an_unreadable_folder_is_reported_and_the_rest_checked(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "hidden.py").write_text(BAD)
    (tmp_path / "m.py").write_text(BAD)
    locked = str(tmp_path / "locked")
    if os.geteuid() != 0:
        os.chmod(locked, 0)
    else:  # root reads everything: fail the calls that a user without the permission would see fail
        real_stat, real_scandir = os.stat, os.scandir

        def deny(path):
            if str(path).startswith(locked + os.sep) or str(path) == locked:
                raise PermissionError(13, "Permission denied", str(path))

        def fake_stat(path, *a, **kw):
            if str(path).startswith(locked + os.sep):
                deny(path)
            return real_stat(path, *a, **kw)

        def fake_scandir(path="."):
            deny(path)
            return real_scandir(path)

        monkeypatch.setattr(os, "stat", fake_stat)
        monkeypatch.setattr(os, "scandir", fake_scandir)
    try:
        result = run_cli("check", "--no-cache", str(tmp_path))
    finally:
        os.chmod(locked, 0o755)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    assert "m.py:7:" in result.output
    assert "locked:1:1: JF000 Could not read folder: Permission denied" in result.output


def test_a_pyproject_that_is_not_utf8_on_the_upward_search_is_a_configuration_error(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.jaxfuse-lint]\nselect = ["JF"]\n# \xff\xfe\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(BAD)
    result = run_cli("check", "--no-cache", str(tmp_path / "pkg"))
    assert result.exit_code == 2, repr(result.exception)
    assert "pyproject.toml: invalid TOML: not valid UTF-8 (byte 0xff at line 3, column 3)" in result.output


@pytest.mark.parametrize("key", ["include", "exclude", "extend-exclude"])
def test_an_invalid_glob_is_a_configuration_error(tmp_path, key):
    (tmp_path / "pyproject.toml").write_text(f'[tool.jaxfuse-lint]\n{key} = ["*.py", "[a-"]\n')
    (tmp_path / "m.py").write_text(BAD)
    result = run_cli("check", "--no-cache", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert f"`{key}`: invalid glob '[a-'" in result.output


def test_valid_globs_with_brackets_are_accepted():
    from jaxfuse_lint.core.config import check_globs

    patterns = ("*.py", "[]a]*.py", "[!x]y", r"\[literal", "a[-]b")
    assert check_globs(patterns, "x") == patterns


# -- 8: a deleted working directory ------------------------------------------------------------------

def test_a_deleted_working_directory_is_one_line(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    for mode in ("0", ""):  # local, and through the daemon client (no daemon: runs locally)
        proc = subprocess.run(
            ["sh", "-c", f"mkdir gone && cd gone && rmdir ../gone && exec '{sys.executable}' -m jaxfuse_lint "
                         f"check --no-cache '{tmp_path / 'm.py'}'"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": mode})
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == ("jaxfuse-lint: error: the current directory no longer exists (deleted?); "
                                       "change to an existing one")


# -- 13: python -m does not import from the working directory --------------------------------------

def test_python_m_does_not_import_modules_of_the_linted_tree(tmp_path):
    for name in ("click", "libcst", "pathspec"):
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'a').write('{name}')\n"
                                              "raise SystemExit(99)\n")
    (tmp_path / "m.py").write_text(BAD)
    proc = run_process("check", "--no-cache", ".", cwd=tmp_path)
    assert not (tmp_path / "imported").exists(), proc.stderr
    assert proc.returncode == 1 and b"m.py:7:" in proc.stdout


# -- 15: a file too large to analyse -----------------------------------------------------------------

def test_a_file_over_max_file_size_is_reported_and_the_rest_checked(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nmax-file-size = 2000\n")
    (tmp_path / "m.py").write_text(BAD)
    big = tmp_path / "big.py"
    big.write_text(BAD + "\n".join(f"y{i} = np.ones({i})" for i in range(400)) + "\n")
    for args in ((), ("--fix", "--unsafe-fixes")):
        before = big.read_text()
        result = run_cli("check", "--no-cache", *args, str(tmp_path))
        assert f"big.py:1:1: JF000 File not checked: {len(before):,} bytes is over `max-file-size` (2,000 bytes)" \
            in result.output, result.output
        assert big.read_text() == before
    assert "jnp.eye(64)" in (tmp_path / "m.py").read_text()
    data = big.read_bytes()
    for args in ((), ("--fix",)):
        result = run_cli("check", "--no-cache", "--config", str(tmp_path / "pyproject.toml"), *args,
                         "--stdin-filename", "big.py", "-", input=data)
        assert result.exit_code == 1 and "max-file-size" in result.output


# -- 12: record, terminated ----------------------------------------------------------------------------

def test_record_passes_sigterm_on_and_removes_its_boot_folder(tmp_path):
    import signal

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    started, child_pid = tmp_path / "started", tmp_path / "pid"
    script = (f"import os, time; open({str(child_pid)!r}, 'w').write(str(os.getpid())); "
              f"open({str(started)!r}, 'w').close(); time.sleep(60)")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    env.pop("XDG_RUNTIME_DIR", None)
    private = tmp / f"jaxfuse-lint-{os.getuid()}"  # the boot folder is made in it (issue 37)
    proc = subprocess.Popen([sys.executable, "-m", "jaxfuse_lint", "record", "--", sys.executable, "-c", script],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.05)
        assert list(private.iterdir())  # the boot folder, while it runs
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    pid = int(child_pid.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the recorded command was left running")
    assert list(private.iterdir()) == []
    assert proc.returncode == 128 + signal.SIGTERM
