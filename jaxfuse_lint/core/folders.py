"""Folders opened without following symbolic links.

A path's folders are opened one at a time, each relative to the handle of the one above it
(`os.open(part, O_DIRECTORY | O_NOFOLLOW, dir_fd=parent)`), so that a folder swapped for a
link while a run works is refused instead of followed: whatever the folders named by a path
are by the time it is used, the handle is of a real folder below the one the walk started
from. The writes of `--fix` and `--add-noqa` (core/tree.py) and the cache (run/cache.py)
go through such handles; only what the user named on the command line is followed.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import Sequence

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


class LinkInPath(OSError):
    """A folder of the path is a symbolic link (or no folder at all) where a folder was expected."""


def open_folder(path: str | os.PathLike, *, follow: bool = True) -> int:
    """A handle of the folder PATH (the caller closes it). `follow=False`: its last part may not be
    a symbolic link (the parts above it are followed: they are the caller's to trust)."""
    try:
        return os.open(path, _DIR | (0 if follow else os.O_NOFOLLOW))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise LinkInPath(exc.errno, _why(path, None), str(path)) from None
        raise


def walk(start: int, parts: Sequence[str], *, create: bool = False, mode: int = 0o777) -> int:
    """A handle of the folder PARTS below the folder handle START, no part followed if it is a
    link (the caller closes it; START stays open). `create`: missing folders are made (with
    `mode`, less the umask). A part that is `..` is refused: the walk never leaves START."""
    fd = os.dup(start)
    try:
        for part in parts:
            if part in ("", "."):
                continue
            if part == ".." or os.sep in part:
                raise ValueError(f"not a folder name: {part!r}")
            if create:
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                except FileExistsError:
                    pass  # there already (a folder or not: opening it tells)
            child = _open_child(fd, part)
            os.close(fd)
            fd = child
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_child(fd: int, part: str) -> int:
    try:
        return os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise LinkInPath(exc.errno, _why(part, fd), part) from None
        raise


def _why(name: str | os.PathLike, fd: int | None) -> str:
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False) if fd is not None else os.lstat(name)
    except OSError:
        return "not a folder"
    return "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
