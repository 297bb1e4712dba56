"""No process of the tool outlives the command that started it, whatever signal ends it.

`kill -9` of `jaxfuse-lint check --fix` used to leave its pool workers alive, re-parented to PID 1
and blocked on a read: a forked worker held the other workers' ends of their pipes (and with them
its own parent's), so none of them saw its parent go. Workers now die with their parent (Linux:
PR_SET_PDEATHSIG) and, anywhere, stop at the end of their pipe.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (ROOT / "fixtures" / "JF201" / "fix_numpy.py").read_text()

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (its children, theirs, ...), read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":  # a zombie has ended; its parent (PID 1 by now) reaps it
            out.add(pid)
    return out


def kill_during_run(tmp_path: Path, start_method: str | None) -> set[int]:
    """Start `check --fix -j 2` on a tree, SIGKILL it once its workers run, and return the tool's
    processes that are still alive a few seconds later (killed then, so that none is left)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(200):
        (tree / f"m{i}.py").write_text(SOURCE)
    code = "import sys\nfrom jaxfuse_lint.cli.main import main\n"
    if start_method:
        code = f"import jaxfuse_lint.run.pool as pool\npool.start_method = lambda: {start_method!r}\n" + code
    code += "sys.argv = ['jaxfuse-lint', 'check', '--no-cache', '--fix', '-j', '2', sys.argv[1]]\nmain()\n"
    proc = subprocess.Popen([sys.executable, "-c", code, str(tree)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                            "JAXFUSE_LINT_DAEMON": "0"})
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        workers = descendants(proc.pid)
        if len(workers) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None and len(workers) >= 2, "the run ended before its workers could be seen"
    time.sleep(0.3)  # the workers have their tasks
    workers |= descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 5
    while alive(workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = alive(workers)
    for pid in left:  # leave nothing behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    return left


def test_kill_9_of_a_fix_run_leaves_no_worker(tmp_path):
    assert kill_during_run(tmp_path, None) == set()


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_kill_9_leaves_no_worker_whatever_starts_them(tmp_path, method):
    """forkserver and spawn start workers where fork is unsafe (threads, jax imported)."""
    assert kill_during_run(tmp_path, method) == set()


PORTABLE_PATH = """
import multiprocessing
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.run import pool, worker

worker._die_with_parent = lambda: None  # no PR_SET_PDEATHSIG: the pipe's end alone
pool.start_method = lambda: "fork"
workers = pool.Pool(2, Settings(), 60.0)
first = pool._Worker(workers.ctx, Settings(), workers.held())
workers.idle.append(first)
second = pool._Worker(workers.ctx, Settings(), workers.held())
workers.idle.append(second)
for w in (first, second):
    assert w.conn.recv() == worker.READY
first.conn.close()  # as the coordinator's death would
first.proc.join(10)
print(first.proc.exitcode, second.proc.is_alive())
second.stop()
"""


def test_workers_stop_at_the_end_of_their_pipe_without_a_death_signal():
    """The portable path (no PR_SET_PDEATHSIG): a worker whose coordinator's end of the pipe is
    closed stops, even with another worker forked after it (which must not hold that end open).
    In a fresh interpreter: forking a process that has loaded jax is not safe."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork here")
    proc = subprocess.run([sys.executable, "-c", PORTABLE_PATH], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "True"]
