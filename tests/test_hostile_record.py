"""`record` and a process that outlives it (issue 37, item 2): the folder on the recorded
command's PYTHONPATH is removed when `record` ends, and must then stay removed for every other
user, or a process still running with that PYTHONPATH would import a `sitecustomize.py` they
put there. Checked without sleeping: what the command was given, and who may create names in
the folder above it once `record` is over."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def record(tmp_path: Path, *command: str) -> subprocess.CompletedProcess:
    """`record` with a shared, world-writable temporary folder, as /tmp is."""
    shared = tmp_path / "tmp"
    shared.mkdir(exist_ok=True)
    os.chmod(shared, 0o1777)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(shared), "JAXFUSE_LINT_DAEMON": "0"}
    env.pop("XDG_RUNTIME_DIR", None)
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", "record", "--", *command], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_boot_folder_cannot_be_made_again_by_another_user_once_record_ends(tmp_path):
    seen = tmp_path / "pythonpath"
    result = record(tmp_path, sys.executable, "-c",
                    f"import os; open({str(seen)!r}, 'w').write(os.environ['PYTHONPATH'])")
    assert result.returncode == 0, result.stderr
    boot = Path(seen.read_text().split(os.pathsep)[0])
    assert (boot / "sitecustomize.py").name == "sitecustomize.py" and not boot.exists()  # removed when it ended
    above = next(p for p in boot.parents if p.exists())
    st = os.lstat(above)
    # Only this user may create a name in the first folder above it that is left.
    assert stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022, (above, oct(st.st_mode))
    assert above != tmp_path / "tmp"
    assert list(above.iterdir()) == []  # and nothing of this run is left in it


@pytest.mark.parametrize("spoil", ["open-to-others", "a-link"])
def test_a_private_folder_that_is_not_private_stops_record_before_the_command_runs(tmp_path, spoil):
    shared = tmp_path / "tmp"
    shared.mkdir()
    private = shared / f"jaxfuse-lint-{os.getuid()}"
    if spoil == "open-to-others":
        private.mkdir()
        os.chmod(private, 0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        private.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    ran = tmp_path / "ran"
    result = record(tmp_path, sys.executable, "-c", f"open({str(ran)!r}, 'w').close()")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "not a folder private to this user" in result.stderr
    assert not ran.exists()


def test_a_recording_process_that_outlived_record_writes_no_part(tmp_path):
    from jaxfuse_lint.runtime.recorder import Recorder

    parts = tmp_path / "work" / "parts"  # removed by `record` when it ended
    rec = Recorder(str(parts), str(tmp_path))
    rec.functions[("m.py", "f", 1)] = {}
    rec.write()
    assert not (tmp_path / "work").exists()
