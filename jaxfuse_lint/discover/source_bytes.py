"""A source file's bytes, read safely: regular files only, never more than a limit + 1 bytes.

A name that looks like a source may be a FIFO (reading it waits for a writer forever), a link
to `/dev/zero` or `/dev/urandom` (endless), a socket or another device; a regular file may be
replaced by one of them between discovery and reading, or grow while it is read. So the path
is stat'ed first (a device is never even opened: opening some has effects), then opened
without blocking (a FIFO opens at once) and checked again on the open file, and at most
`limit + 1` bytes are read: the caller tells a file over the limit by the length alone.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxfuse_lint.core.file_identity import FileIdentity

_CHUNK = 1 << 20


def kind(mode: int) -> str | None:
    """What a file is when it is not a regular file ("a FIFO"), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a file"


def not_regular(path: str | os.PathLike, mode: int) -> OSError | None:
    what = kind(mode)
    if what is None:
        return None
    return OSError(errno.EINVAL, f"not a regular file: {what}", os.fspath(path))


def read_source(path: str | os.PathLike, limit: int) -> bytes:
    """The file's bytes, or its first `limit + 1` when it is longer. OSError for a file that
    cannot be read or is not a regular file (its message says what it is)."""
    return _read(path, limit)[0]


def read_identified_source(path: str | os.PathLike, limit: int) -> "tuple[bytes, FileIdentity]":
    """`read_source`, with the identity of what was read (core/file_identity.py): the stat of the
    open file, taken before the read, so a change made while it is read shows at write time."""
    from jaxfuse_lint.core.file_identity import identified

    data, st = _read(path, limit)
    return data, identified(st, data)


def _read(path: str | os.PathLike, limit: int) -> "tuple[bytes, os.stat_result]":
    refused = not_regular(path, os.stat(path).st_mode)
    if refused is not None:
        raise refused
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        refused = not_regular(path, st.st_mode)  # replaced since the stat
        if refused is not None:
            raise refused
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)
