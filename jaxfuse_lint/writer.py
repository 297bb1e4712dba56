"""Atomic file writes that keep encoding, newline style and file mode."""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Write to a temporary file in the same directory, then rename over the original.

    The text already carries the file's own newlines (libcst round-trips them), so
    it is written with newline translation off. A reader never sees half a file,
    and an interrupted run leaves the original untouched.
    """
    target = Path(path)
    data = text.encode(encoding)
    mode = None
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".jaxfuse-tmp", dir=target.parent)
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
