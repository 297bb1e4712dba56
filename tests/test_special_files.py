"""What a walked folder may hold besides source files (issue 37, items 5 and 12): links to
devices, FIFOs and sockets named like sources, and folders nested deeper than Python's
recursion limit. Discovery keeps regular files only, and a file is never read past the size
limit + 1 bytes, whatever it turned into after it was found. What could hang or exhaust
memory runs in a subprocess with a timeout (a bound, not a timing assertion)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.discover.files import discover_files
from jaxfuse_lint.discover.source_bytes import read_source

ROOT = Path(__file__).resolve().parent.parent
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"  # JF201 by default


def run_process(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def odd_tree(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "a.py").write_text(BAD)
    (tree / "zero.py").symlink_to("/dev/zero")
    (tree / "random.py").symlink_to("/dev/urandom")
    os.mkfifo(tree / "fifo.py")
    (tree / "fifo_link.py").symlink_to("fifo.py")
    sock = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(tree)  # a socket's path is limited to ~100 bytes: bound by its relative name
    try:
        sock.bind("sock.py")
    finally:
        os.chdir(cwd)
    yield tree
    sock.close()


def test_the_walk_keeps_regular_files_only(odd_tree):
    found = discover_files([str(odd_tree)], Settings())
    assert found.files == [odd_tree / "a.py"]
    skipped = dict(found.skipped)
    assert skipped[str(odd_tree / "zero.py")] == "not a regular file: a character device"
    assert skipped[str(odd_tree / "random.py")] == "not a regular file: a character device"
    assert skipped[str(odd_tree / "fifo.py")] == "not a regular file: a FIFO"
    assert skipped[str(odd_tree / "fifo_link.py")] == "not a regular file: a FIFO"
    assert skipped[str(odd_tree / "sock.py")] == "not a regular file: a socket"


def test_a_dangling_link_is_still_reported_as_unreadable(tmp_path):
    (tmp_path / "ghost.py").symlink_to(tmp_path / "nowhere.py")
    assert discover_files([str(tmp_path)], Settings()).files == [tmp_path / "ghost.py"]


def test_check_of_a_folder_with_devices_fifos_and_sockets_checks_the_rest(odd_tree):
    result = run_process("check", "--no-cache", ".", cwd=odd_tree)
    assert result.returncode == 1, result.stderr
    assert "a.py:7:16: JF201" in result.stdout
    assert "Traceback" not in result.stderr
    assert "fifo.py: not a regular file: a FIFO; skipped" in result.stderr  # a warning: it looks like a source


def test_reading_never_goes_past_the_limit(tmp_path):
    big = tmp_path / "big.py"
    big.write_bytes(b"x = 1\n" * 10_000)
    assert read_source(big, 100) == (b"x = 1\n" * 10_000)[:101]
    assert read_source(big, 10**9) == b"x = 1\n" * 10_000
    with pytest.raises(OSError, match="not a regular file: a character device"):
        read_source(Path("/dev/zero"), 100)


def _in_thread(function, *args):
    """(returned, raised) of function(*args) run in a daemon thread that may take 60 s at most;
    the test fails if it is still blocked (a daemon thread does not keep the process alive)."""
    out: dict = {}

    def target():
        try:
            out["value"] = function(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), f"{function.__name__} blocked"
    return out.get("value"), out.get("error")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "f.py")
    _, error = _in_thread(read_source, tmp_path / "f.py", 100)
    assert isinstance(error, OSError) and "not a regular file: a FIFO" in str(error)


def test_a_file_that_became_a_fifo_after_discovery_is_an_error_not_a_hang(tmp_path):
    """Named files go straight to the run (check_files): the read itself refuses it."""
    from jaxfuse_lint.run.runner import check_files

    os.mkfifo(tmp_path / "f.py")
    run, error = _in_thread(lambda: check_files([tmp_path / "f.py"], Settings(), jobs=1))
    assert error is None
    # A path that cannot be read is a JF000 of its own, and the run goes on (ruff's E902).
    assert [(d.code, d.message) for d in run.diagnostics] == [
        ("JF000", "Could not read file: not a regular file: a FIFO")]


@pytest.fixture
def deep_tree(tmp_path):
    """A folder nested deeper than the recursion limit; removed bottom-up afterwards (os.makedirs
    and shutil.rmtree, which would clean tmp_path, recurse)."""
    deep = str(tmp_path / "deep")
    os.mkdir(deep)
    paths = [deep]
    for _ in range(sys.getrecursionlimit() + 500):
        paths.append(paths[-1] + "/d")
        os.mkdir(paths[-1])
    Path(paths[-1], "a.py").write_text(BAD)
    yield deep, paths[-1]
    for name in os.listdir(paths[-1]):
        os.unlink(os.path.join(paths[-1], name))
    for path in reversed(paths):
        os.rmdir(path)


def test_a_tree_deeper_than_the_recursion_limit_is_walked(deep_tree):
    deep, path = deep_tree
    found = discover_files([deep], Settings())
    assert found.files == [Path(path, "a.py")]
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--output-format", "concise", deep])
    assert result.exit_code == 1, result.output
    assert "a.py:7:16: JF201" in result.output
