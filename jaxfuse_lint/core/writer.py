"""Atomic file writes that keep encoding, newline style and file mode."""
from __future__ import annotations

import os
import re
import stat
import tempfile
import time
from pathlib import Path

TMP_SUFFIX = ".jaxfuse-tmp"
# A temporary file left by a write that was killed (kill -9, power loss) older than this is a
# leftover; a younger one may belong to a run writing the same file right now.
LEFTOVER_AGE_S = 60.0


def write_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> list[str]:
    """Write to a temporary file in the same directory, then rename over the original.

    The text already carries the file's own newlines (libcst round-trips them), so
    it is written with newline translation off. A reader never sees half a file,
    and an interrupted run leaves the original untouched.

    A symbolic link is written through: its target gets the text and the link stays. Where
    a rename would lose what the file is (another hard link to it, an owner other than us,
    extended attributes or ACLs), the file is rewritten in place instead.

    Returns the temporary files of earlier, interrupted writes of this file that it removed.
    """
    target = Path(os.path.realpath(path))
    data = text.encode(encoding)
    mode = None
    try:
        st = os.stat(target)
        mode = stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        st = None
    removed = remove_leftovers(target)
    if st is not None and _rename_would_lose(target, st):
        _write_in_place(target, data)
        return removed
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TMP_SUFFIX, dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return removed


def _rename_would_lose(target: Path, st: os.stat_result) -> bool:
    if st.st_nlink > 1 or (hasattr(os, "geteuid") and st.st_uid != os.geteuid()):
        return True
    try:
        # ACLs are the system.posix_acl_* attributes. An SELinux label is on every file of such
        # a system, and a file renamed into the folder gets the folder's default one: not a loss.
        return any(name != "security.selinux" for name in os.listxattr(target))
    except (AttributeError, OSError):
        return False


def _write_in_place(target: Path, data: bytes) -> None:
    with open(target, "r+b") as fh:
        fh.write(data)
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def leftovers(target: Path, min_age_s: float = LEFTOVER_AGE_S) -> list[Path]:
    """This tool's own temporary files beside `target` (`.NAME.XXXXXXXX.jaxfuse-tmp`, as
    `tempfile.mkstemp` names them) that are older than `min_age_s`."""
    pattern = re.compile(re.escape(f".{target.name}.") + r"[a-z0-9_]{8}" + re.escape(TMP_SUFFIX))
    found = []
    now = time.time()
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    for name in names:
        if not pattern.fullmatch(name):
            continue
        p = target.parent / name
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and now - st.st_mtime >= min_age_s:
            found.append(p)
    return sorted(found)


def remove_leftovers(target: Path) -> list[str]:
    removed = []
    for p in leftovers(target):
        try:
            os.unlink(p)
            removed.append(str(p))
        except OSError:
            pass
    return removed
