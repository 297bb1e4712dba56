"""What a file was when a run read it: device, inode, size, modification time and the SHA-256 of
its bytes. A run reads each file once (run/reading.py) and keeps its identity; `--fix` and
`--add-noqa` write a file only while it is still that file (core/writer.py), so an edit made,
or a file deleted or renamed, while the run works is never overwritten nor re-created."""
from __future__ import annotations

import hashlib
import os
from typing import NamedTuple


class FileIdentity(NamedTuple):
    device: int
    inode: int
    size: int
    mtime_ns: int
    digest: str  # SHA-256 of the bytes read, hex

    def same_file(self, st: os.stat_result) -> bool:
        """Whether a stat of the file now says what it said when it was read (the bytes aside)."""
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (self.device, self.inode, self.size,
                                                                      self.mtime_ns)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def identified(st: os.stat_result, data: bytes) -> FileIdentity:
    """The identity of bytes read from an open file whose stat, taken before the read, is ST."""
    return FileIdentity(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, digest(data))


def read_identified(path: str | os.PathLike) -> tuple[bytes, FileIdentity]:
    """A file's bytes and its identity: the stat is of the open file, taken before it is read,
    so a change made while it is read shows as a difference at write time."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        data = fh.read()
    return data, identified(st, data)
