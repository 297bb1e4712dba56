"""What `--fix` writes when someone works against it, or beside it (issue 37): a folder swapped
for a link while a privileged run works, files edited, deleted or renamed during the run, a
write that fails half-way, read-only files, and the bytes `--fix` on stdin gives back.

The races are made deterministic: the swap or the edit happens at a fixed point of the run (a
hook between reading and writing), never by timing."""
from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
# One JF201 finding with a safe fix, in a form the default calibration table reports.
BAD = "import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    return x + np.eye(64)\n"
FIXED_MARK = "jnp.eye(64)"


def run_cli(*args: str, input: bytes | None = None):
    return CliRunner().invoke(cli, list(args), input=input)


def fix(*paths) -> object:
    return run_cli("check", "--no-cache", "--fix", "--unsafe-fixes", "-j1", *map(str, paths))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".jaxfuse-tmp"))


# -- 1: a folder of the tree swapped for a link while a privileged --fix runs ------------------------------

def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """proj/sub with two files to fix, and a folder outside the tree that only the privileged
    user may write, holding a file of the same name."""
    sub = tmp_path / "proj" / "sub"
    sub.mkdir(parents=True)
    (sub / "existing.py").write_text(BAD)
    (sub / "payload.py").write_text(BAD)
    outside = tmp_path / "rootonly"
    outside.mkdir()
    (outside / "existing.py").write_text(BAD)
    return tmp_path / "proj", outside


def _swap(proj: Path, outside: Path) -> None:
    (proj / "sub").rename(proj / "sub.away")
    (proj / "sub").symlink_to(outside, target_is_directory=True)


def test_a_folder_swapped_for_a_link_after_the_files_were_read_is_not_written_through(tmp_path, monkeypatch):
    from jaxfuse_lint.run import runner

    proj, outside = _tree(tmp_path)
    real = runner.fix_files

    def fix_then_swap(*args, **kwargs):
        run = real(*args, **kwargs)
        _swap(proj, outside)
        return run

    monkeypatch.setattr(runner, "fix_files", fix_then_swap)
    result = fix(proj)
    assert (outside / "existing.py").read_text() == BAD
    assert sorted(p.name for p in outside.iterdir()) == ["existing.py"]  # no payload.py created there
    assert result.output.count("not fixed") == 2, result.output
    assert "Fixed 0 diagnostics" in result.output


def test_a_folder_swapped_for_a_link_before_the_files_are_read_is_not_written_through(tmp_path, monkeypatch):
    import jaxfuse_lint.discover.files as discovery

    proj, outside = _tree(tmp_path)
    real = discovery.discover_files

    def discover_then_swap(*args, **kwargs):
        found = real(*args, **kwargs)
        _swap(proj, outside)
        return found

    monkeypatch.setattr(discovery, "discover_files", discover_then_swap)
    result = fix(proj)
    assert (outside / "existing.py").read_text() == BAD
    assert sorted(p.name for p in outside.iterdir()) == ["existing.py"]
    assert "existing.py: not fixed: its real path" in result.output and "outside the checked paths" in result.output


def test_a_folder_swapped_while_the_write_finds_its_folder_is_refused(tmp_path, monkeypatch):
    """The swap right after the file's real path was looked up: the walk down from the named
    path opens each folder without following links, and refuses the link."""
    from jaxfuse_lint.core.checked_paths import CheckedPaths

    proj, outside = _tree(tmp_path)
    real = CheckedPaths._root_of

    def look_up_then_swap(self, path):
        found = real(self, path)
        if not (proj / "sub").is_symlink():
            _swap(proj, outside)
        return found

    monkeypatch.setattr(CheckedPaths, "_root_of", look_up_then_swap)
    result = fix(proj)
    assert (outside / "existing.py").read_text() == BAD
    assert sorted(p.name for p in outside.iterdir()) == ["existing.py"]
    assert (proj / "sub.away" / "existing.py").read_text() == BAD
    assert "existing.py: not fixed: its folder sub became a symbolic link" in result.output, result.output
    assert "payload.py: not fixed: its real path" in result.output  # the link was there before its look-up
    # The folder the user named, replaced: nothing is written through the new one either.
    (proj / "sub").unlink()
    (proj / "sub.away").rename(proj / "sub")
    named = proj / "sub" / "existing.py"

    def replace_the_named_folder(self, path):
        found = real(self, path)
        (proj / "sub").rename(proj / "sub.away")
        (proj / "sub").mkdir()
        (proj / "sub" / "existing.py").write_text(BAD)
        return found

    monkeypatch.setattr(CheckedPaths, "_root_of", replace_the_named_folder)
    result = fix(named)
    assert named.read_text() == BAD and (proj / "sub.away" / "existing.py").read_text() == BAD
    assert "was replaced while the run worked" in result.output, result.output


# -- 3: edits made while --fix runs ------------------------------------------------------------------------

def _after_the_run(monkeypatch, change) -> None:
    from jaxfuse_lint.run import runner

    real = runner.fix_files

    def fix_then_change(*args, **kwargs):
        run = real(*args, **kwargs)
        change()
        return run

    monkeypatch.setattr(runner, "fix_files", fix_then_change)


def test_a_line_added_while_fix_runs_is_kept(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    other = tmp_path / "n.py"
    other.write_text(BAD)

    def edit():
        with open(path, "a") as fh:
            fh.write("# the user's new line\n")

    _after_the_run(monkeypatch, edit)
    result = fix(tmp_path)
    assert path.read_text() == BAD + "# the user's new line\n"
    assert "m.py: not fixed: changed since it was read" in result.output
    assert FIXED_MARK in other.read_text()  # the others are fixed as usual
    assert leftovers(tmp_path) == []


def test_a_file_touched_while_fix_runs_is_not_written(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    _after_the_run(monkeypatch, lambda: os.utime(path, ns=(0, 10**18)))
    result = fix(path)
    assert path.read_text() == BAD
    assert "changed since it was read" in result.output


def test_a_file_deleted_while_fix_runs_is_not_recreated(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    _after_the_run(monkeypatch, path.unlink)
    result = fix(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    assert "m.py: not fixed: deleted or renamed since it was read; not re-created" in result.output


def test_a_file_renamed_while_fix_runs_is_not_recreated(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    _after_the_run(monkeypatch, lambda: path.rename(tmp_path / "renamed.py"))
    fix(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["renamed.py"]
    assert (tmp_path / "renamed.py").read_text() == BAD


def test_a_file_replaced_by_another_while_fix_runs_is_not_written(tmp_path, monkeypatch):
    """An editor's save (a new file renamed over the old one), with the very same text."""
    path = tmp_path / "m.py"
    path.write_text(BAD)

    def save():
        (tmp_path / "new").write_text(BAD)
        os.replace(tmp_path / "new", path)

    _after_the_run(monkeypatch, save)
    result = fix(path)
    assert path.read_text() == BAD and "changed since it was read" in result.output


def test_each_file_is_read_once_and_fixed_as_read(tmp_path, monkeypatch):
    """The text fixed is the text read and hashed first: a change between the steps of the run
    is not picked up half-way (and the write then refuses the changed file)."""
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.run import runner

    path = tmp_path / "m.py"
    path.write_text(BAD)
    real = runner._Run.prepare

    def prepare_then_edit(self):
        real(self)
        path.write_text(BAD + "y = np.zeros(2)\n")

    monkeypatch.setattr(runner._Run, "prepare", prepare_then_edit)
    run = runner.fix_files([path], Settings(), unsafe=True, jobs=1)
    (outcome,) = run.fixes
    assert outcome.original == BAD and "np.zeros" not in outcome.source
    assert run.identities[str(path)].size == len(BAD)


# -- 4: a write that fails half-way never leaves half a file -----------------------------------------------

ORIGINAL = BAD + "".join(f"# line {i} of a long comment to make the file larger than the limit\n" for i in range(80))


def _limited_fix(path: Path) -> subprocess.CompletedProcess:
    """--fix in a process that may not write files past 4 KiB (`ulimit -f 4`): the fixed text
    is larger, so its write fails half-way (EFBIG)."""
    assert len(ORIGINAL) > 4096
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "--fix", "--unsafe-fixes",
                           "-j1", str(path)], capture_output=True, text=True, env=env, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)))


def _hard_link(path: Path) -> list[Path]:
    os.link(path, path.with_name("twin.py"))
    return [path.with_name("twin.py")]


def _xattr(path: Path) -> list[Path]:
    try:
        os.setxattr(path, "user.origin", b"kept")
    except (AttributeError, OSError):
        pytest.skip("no user extended attributes here")
    return []


def _other_owner(path: Path) -> list[Path]:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(path, 65534, 65534)
    return []


@pytest.mark.parametrize("kind", [_hard_link, _xattr, _other_owner], ids=["hard-link", "xattr", "other-owner"])
def test_a_failed_write_leaves_the_file_whole(tmp_path, kind):
    path = tmp_path / "m.py"
    path.write_text(ORIGINAL)
    others = kind(path)
    proc = _limited_fix(path)
    assert path.read_text() == ORIGINAL, proc.stderr
    assert all(p.read_text() == ORIGINAL for p in others)
    assert "m.py: cannot write file: File too large" in proc.stderr
    assert leftovers(tmp_path) == []


def test_a_file_of_another_user_keeps_its_owner_group_and_mode(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    path = tmp_path / "m.py"
    path.write_text(BAD)
    os.chown(path, 65534, 65534)
    os.chmod(path, 0o664)
    fix(path)
    st = os.stat(path)
    assert FIXED_MARK in path.read_text()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o664)


def test_an_owner_that_cannot_be_kept_is_a_warning_and_the_file_is_left_alone(tmp_path, monkeypatch):
    """What a user other than root gets for a file of someone else it may write: replacing it
    would make it the user's own, so it is not written."""
    path = tmp_path / "m.py"
    path.write_text(BAD)
    real_fstat = os.fstat

    def fstat(fd):  # the file as if another user owned it
        st = real_fstat(fd)
        if os.path.samestat(st, os.stat(path)):
            return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid + 1, st.st_gid,
                                   st.st_size, st.st_atime, st.st_mtime, st.st_ctime))
        return st

    def fchown(fd, uid, gid):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "fstat", fstat)
    monkeypatch.setattr(os, "fchown", fchown)
    result = fix(path)
    monkeypatch.undo()
    assert path.read_text() == BAD
    assert "m.py: not fixed: owned by user" in result.output
    assert leftovers(tmp_path) == []


# -- 12: read-only files -----------------------------------------------------------------------------------

def test_a_read_only_file_is_not_written(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    os.chmod(path, 0o444)
    other = tmp_path / "n.py"
    other.write_text(BAD)
    result = fix(tmp_path)
    assert path.read_text() == BAD and stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert "m.py: not fixed: read-only (mode 0444)" in result.output
    assert FIXED_MARK in other.read_text()
    # What is left is what the file still has: its finding, not "0 remaining".
    assert "Fixed 1 diagnostic, 1 remaining." in result.output and f"{path}:7:" in result.output
    assert result.exit_code == 1


# -- 6: --fix on stdin gives back the input's encoding ------------------------------------------------------

LATIN1 = ("# -*- coding: latin-1 -*-\n# café\n" + BAD).encode("latin-1")


@pytest.mark.parametrize("data", [LATIN1, b"\xef\xbb\xbf" + BAD.encode(), b"\xef\xbb\xbfx = 1\n",
                                  ("# -*- coding: latin-1 -*-\nx = 'é'\n").encode("latin-1")],
                         ids=["latin1-fixed", "bom-fixed", "bom-unchanged", "latin1-unchanged"])
def test_stdin_fix_keeps_the_encoding_and_the_bom(data):
    result = run_cli("check", "--fix", "--unsafe-fixes", "--stdin-filename", "m.py", "-", input=data)
    out = result.stdout_bytes
    if b"np.eye" in data:
        assert FIXED_MARK.encode() in out
        assert out.startswith(b"\xef\xbb\xbf") == data.startswith(b"\xef\xbb\xbf")
        if data.startswith(b"#"):
            assert "café".encode("latin-1") in out and "café".encode() not in out
    else:
        assert out == data  # nothing fixed: byte for byte
