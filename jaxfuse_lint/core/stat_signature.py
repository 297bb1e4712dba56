"""Stat signatures of files: what `os.stat` says about a file, and when an unchanged signature
proves the file unchanged (git's "racily clean" problem). Used by the cache's run records
(run/cache.py) and by discovery's remembered folder walks (discover/files.py)."""
from __future__ import annotations

import os

# A file changed less than this before a stat may change again without its times changing:
# filesystems keep times at 1 ns (ext4, tmpfs; set from a coarse clock) to 2 s (FAT) steps.
RACY_NS = 2_000_000_000


def file_signature(path: str | os.PathLike) -> list[int] | None:
    """What stat says about a file (size, mtime, ctime, inode, device); None if it cannot say."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def trusted_signature(recorded: list[int] | None, now: list[int] | None, stat_time_ns: int) -> bool:
    """Whether a file is unchanged since a run that took its signature `recorded` at
    `stat_time_ns`: the same signature, and last changed well before that stat."""
    return (recorded is not None and recorded == now
            and max(recorded[1], recorded[2]) < stat_time_ns - RACY_NS)
