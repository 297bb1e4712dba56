"""kill -9 during `--fix` at a few random moments (seeded): every file is its original or its
fully fixed text, the only leftovers are this tool's own temporary files beside the files it
writes, and the next run removes them, however young (issues 27 and 37)."""
from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (ROOT / "fixtures" / "JF201" / "fix_numpy.py").read_text()
FILES = 3
TMP = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.jaxfuse-tmp")


def _fix(tree: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "--fix", "--unsafe-fixes",
                             "-j", "1", str(tree)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"})


def _tree(root: Path) -> Path:
    root.mkdir()
    for i in range(FILES):
        (root / f"m{i}.py").write_text(SOURCE)
    return root


def test_kill_during_fix_leaves_every_file_original_or_fixed(tmp_path):
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import fix_source

    fixed = fix_source(SOURCE, "m.py", Settings(), unsafe=True).source
    assert fixed != SOURCE
    rng = random.Random(27)
    for attempt in range(2):
        tree = _tree(tmp_path / f"run{attempt}")
        proc = _fix(tree)
        time.sleep(rng.uniform(0.3, 2.0))  # from before the imports are done to the writes
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        for p in tree.iterdir():
            m = TMP.fullmatch(p.name)
            if m:  # a write that was cut short: only ever beside a file being written; the next run
                assert (tree / m.group(1)).is_file(), p.name  # removes it at once (no write holds its lock)
            else:
                assert p.read_text() in (SOURCE, fixed), p.name
        assert _fix(tree).wait(120) == 0
        assert sorted(p.name for p in tree.iterdir()) == [f"m{i}.py" for i in range(FILES)]
        assert all((tree / f"m{i}.py").read_text() == fixed for i in range(FILES))
        shutil.rmtree(tree)
