"""Writing the files of a run inside the paths it was given, and nowhere else.

`CheckedPaths(paths)` is taken when a run that writes (`--fix`, `--add-noqa`) starts: for each
path named on the command line, its real path and the device and inode of its folder (the
path itself, or the folder of a named file). A file is written only through that folder: it
is opened again by its real path and must still be the same folder, and the folders below it
down to the file are opened one by one without following links (core/folders.py). So when
someone who can write the checked tree swaps one of its folders for a link while the run
works, to make a privileged run write where they cannot, the write is refused, with the
reason; nothing is written outside the named paths.

A symbolic link to a file is written through to its target when the target lies under a
named path (the link stays); one to a file outside them is left alone, unless it was named
itself. What the user named is followed: those are the paths the user vouches for.
"""
from __future__ import annotations

import os
from typing import NamedTuple, Sequence

from jaxfuse_lint.core.file_identity import FileIdentity
from jaxfuse_lint.core.folders import LinkInPath, open_folder, walk
from jaxfuse_lint.core.writer import NotWritten, Written, replace_in


class OutsideTree(NotWritten):
    """The file's real path is under none of the named paths."""

    def __init__(self, filename: str, real: str) -> None:
        if os.path.islink(filename):
            reason = f"a symbolic link to {real}, outside the checked paths (name the file to change it)"
        else:
            reason = f"its real path {real} is outside the checked paths (a folder of its path is a link out)"
        super().__init__(reason)
        self.real = real


class _Root(NamedTuple):
    named: str
    real: str  # the named path's real path when the run started
    folder: str  # `real`, or for a named file the folder it is in
    is_file: bool
    device: int  # of `folder`, when the run started
    inode: int


class CheckedPaths:
    def __init__(self, paths: Sequence[str]) -> None:
        self.roots: list[_Root] = []
        for named in paths:
            real = os.path.realpath(named)
            is_file = not os.path.isdir(real)
            folder = os.path.dirname(real) if is_file else real
            try:
                st = os.stat(folder)
            except OSError:
                continue  # gone already: nothing under it will be written
            self.roots.append(_Root(named, real, folder, is_file, st.st_dev, st.st_ino))

    def _root_of(self, real: str) -> _Root | None:
        best = None
        for root in self.roots:
            inside = real == root.real if root.is_file else real.startswith(root.folder.rstrip(os.sep) + os.sep)
            if inside and (best is None or len(root.folder) > len(best.folder)):
                best = root
        return best

    def open_parent(self, filename: str) -> tuple[int, str]:
        """A handle of the real folder that FILENAME's file is in (the caller closes it), and
        the file's name there. NotWritten (OutsideTree among them) when it cannot be reached
        from a named path without following a link."""
        real = os.path.realpath(filename)
        root = self._root_of(real)
        if root is None:
            raise OutsideTree(filename, real)
        try:
            top = open_folder(root.folder)
        except OSError as exc:
            raise NotWritten(f"the checked path {root.named} cannot be opened ({exc.strerror})") from None
        try:
            st = os.fstat(top)
            if (st.st_dev, st.st_ino) != (root.device, root.inode):
                raise NotWritten(f"the checked path {root.named} was replaced while the run worked")
            parts = os.path.relpath(os.path.dirname(real), root.folder).split(os.sep)
            try:
                return walk(top, parts), os.path.basename(real)
            except LinkInPath as exc:
                raise NotWritten(f"its folder {exc.filename} became {exc.strerror} while the run worked; "
                                 "not followed") from None
        finally:
            os.close(top)

    def write(self, filename: str, data: bytes, expected: FileIdentity | None) -> Written:
        """Replace FILENAME's file with DATA (core/writer.py), if it is still EXPECTED. The
        leftovers it removed are given as paths (beside the real file)."""
        folder, name = self.open_parent(filename)
        try:
            written = replace_in(folder, name, data, expected=expected)
        finally:
            os.close(folder)
        beside = os.path.dirname(os.path.realpath(filename))
        written.removed = [os.path.join(beside, leftover) for leftover in written.removed]
        return written
