"""Atomic file writes: a file is replaced whole, or left as it was.

Every write goes to a temporary file beside the target, which gets the target's mode, owner,
group and extended attributes (ACLs included) before its bytes, and is then renamed over the
target. A reader never sees half a file, and a write cut short (a full disk, `ulimit -f`,
kill -9) leaves the original untouched. What could not be kept by a rename is refused, with
the reason (NotWritten), never written in place:

- a read-only file (no write permission bit, or none for this user): ruff cannot write one
  either (its `File::create` fails); a `--fix` run says so and goes on;
- a file owned by another user or group that this user cannot give the new file (only root
  can give a file away);
- an extended attribute that cannot be copied.

A file with other hard links is replaced too: its other names keep the old text, and the
write says so (`Written.notes`). Writing in place to keep the link is what lost data before
(a write cut short left half a file), and a hard link often means a file shared with
something that must not change with it (a package cache, a backup snapshot).

`replace_in` works on a folder handle (core/folders.py: no folder of the path followed if it
became a link), and with `expected` (core/file_identity.py) it writes only while the file is
still the one that was read: an edit made meanwhile is kept and the file is skipped, and a
file deleted or renamed meanwhile is not re-created.

Temporary files are named `.NAME.XXXXXXXX.jaxfuse-tmp` and locked (flock) by the writer from
the moment they exist until they are renamed or removed. One left by a write that was killed
is unlocked, since the kernel drops a dead process's locks: the next write of NAME removes it,
whatever its age, and one that is locked is a write in flight and is left alone.
"""
from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import stat
from dataclasses import dataclass, field

from jaxfuse_lint.core.file_identity import FileIdentity, digest
from jaxfuse_lint.core.folders import LinkInPath, open_folder, walk

TMP_SUFFIX = ".jaxfuse-tmp"
_TMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"
# NAME_MAX: a temporary file's name must fit in one folder entry.
_NAME_MAX = 255
# Attributes a renamed file gets from its folder anyway (the SELinux label of the folder's type).
_NOT_COPIED = ("security.selinux",)


class NotWritten(OSError):
    """The file was left as it is, for the reason given (`strerror`): what a write would
    have lost, or a file that is no longer the one that was read."""

    def __init__(self, reason: str) -> None:
        super().__init__(errno.EPERM, reason)

    def __str__(self) -> str:
        return self.strerror


@dataclass
class Written:
    removed: list[str] = field(default_factory=list)  # leftover temporary files removed (names in the folder)
    notes: list[str] = field(default_factory=list)  # what the replacement changed besides the text


class LinkRefused(OSError):
    """An output file that is, or is reached through, a symbolic link: not written through it."""

    def __init__(self, link: str) -> None:
        super().__init__(errno.ELOOP, f"{link} is a symbolic link; not written through it", link)
        self.link = link

    def __str__(self) -> str:
        return self.strerror


def write_output(path: str | os.PathLike, text: str, encoding: str = "utf-8", *,
                 follow_links: bool = False) -> list[str]:
    """Write a report the user named (`check -o`, `review --output`) whole, atomically, and
    never through a symbolic link: not the file's own name (a committed `review.json` link to
    `../outside/file` would have had that file overwritten), nor a folder of the path inside
    the working directory (the checkout); missing folders are made. Folders outside the working
    directory are the user's to trust. LinkRefused says which link; `follow_links` writes
    through links (write_atomic). Returns what write_atomic returns."""
    if follow_links:
        os.makedirs(os.path.dirname(os.path.realpath(path)), exist_ok=True)
        return write_atomic(path, text, encoding)
    folder, name, shown = _output_folder(path, create=True)
    try:
        written = replace_in(folder, name, text.encode(encoding))
    except NotWritten as exc:
        if "symbolic link" in exc.strerror:  # swapped for a link since it was looked at
            raise LinkRefused(shown) from None
        raise
    finally:
        os.close(folder)
    return [os.path.join(os.path.dirname(shown), n) for n in written.removed]


def append_output(path: str | os.PathLike, text: str, encoding: str = "utf-8", *,
                  follow_links: bool = False) -> None:
    """Append TEXT to a file the user named (`review --summary`, often `$GITHUB_STEP_SUMMARY`),
    creating it if missing, with write_output's rule for links. Only regular files."""
    if follow_links:
        with open(path, "a", encoding=encoding) as fh:
            fh.write(text)
        return
    folder, name, shown = _output_folder(path, create=True)
    try:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         0o666, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LinkRefused(shown) from None
            raise
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotWritten("not a regular file")
        _write_all(fd, text.encode(encoding))
    finally:
        os.close(fd)


def check_output_path(path: str | os.PathLike, *, follow_links: bool = False) -> None:
    """Before a run: LinkRefused if write_output would refuse PATH for a link (it checks again
    when it writes)."""
    if follow_links:
        return
    try:
        folder, _, _ = _output_folder(path, create=False)
    except FileNotFoundError:
        return  # a folder to make: made when the report is written
    os.close(folder)


def _output_folder(path: str | os.PathLike, create: bool) -> tuple[int, str, str]:
    """(a handle of the folder of PATH, its name there, PATH as messages show it), refusing a
    link as write_output says."""
    shown = os.fspath(path)
    absolute = os.path.abspath(shown)
    parent, name = os.path.split(absolute)
    if not name:
        raise IsADirectoryError(errno.EISDIR, "a folder, not a file", shown)
    cwd = os.getcwd()
    rel = os.path.relpath(parent, cwd)
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        if create:
            os.makedirs(parent, exist_ok=True)
        folder = open_folder(parent)
    else:  # inside the working directory: no folder of it followed
        parts = [] if rel == "." else rel.split(os.sep)
        top = open_folder(cwd)
        try:
            folder = walk(top, parts, create=create)
        except LinkInPath as exc:
            if exc.strerror != "a symbolic link":
                raise
            at = parts.index(exc.filename) if exc.filename in parts else len(parts) - 1
            raise LinkRefused(os.path.join(*parts[:at + 1])) from None
        finally:
            os.close(top)
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return folder, name, shown
    except BaseException:
        os.close(folder)
        raise
    if stat.S_ISLNK(st.st_mode):
        os.close(folder)
        raise LinkRefused(shown)
    return folder, name, shown


def write_atomic(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> list[str]:
    """Write TEXT to PATH, a file the user named (a report, a profile): links in the path are
    followed, and a symbolic link is written through (its target gets the text, the link stays).
    Returns the temporary files of earlier, interrupted writes that it removed."""
    target = os.path.realpath(path)
    folder = open_folder(os.path.dirname(target))
    try:
        written = replace_in(folder, os.path.basename(target), text.encode(encoding))
    finally:
        os.close(folder)
    return [os.path.join(os.path.dirname(target), name) for name in written.removed]


def replace_in(folder: int, name: str, data: bytes, *, expected: FileIdentity | None = None,
               durable: bool = True) -> Written:
    """Replace (or create) the file NAME in the folder handle FOLDER with DATA, atomically.

    `expected`: the file must exist and still be what was read (device, inode, size, mtime,
    SHA-256 of its bytes), else NotWritten. `durable`: the bytes reach the disk before the
    rename (fsync). NAME is never followed if it is a symbolic link: it is refused."""
    written = Written(remove_leftovers(folder, name))
    old = _open_existing(folder, name)
    try:
        st = _check_existing(old, name, expected) if old is not None else None
        if st is None and expected is not None:
            raise NotWritten("deleted or renamed since it was read; not re-created")
        if st is not None:
            why = _read_only(folder, name, st)
            if why:
                raise NotWritten(why)
            if st.st_nlink > 1:
                others = st.st_nlink - 1
                written.notes.append(f"it had {others} other hard link{'s' if others > 1 else ''} (another name of "
                                     f"the same file): the link is broken, and {'that name keeps' if others == 1 else 'those names keep'} "
                                     "the old text")
        fd, tmp = _new_temporary(folder, name, 0o600 if st is not None else 0o666)
        try:
            if st is not None:
                _copy_metadata(old, fd, st)
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
            if st is not None:
                _still_the_same(folder, name, st)
            os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=folder)
            except OSError:
                pass
            raise
        finally:
            os.close(fd)  # drops the lock: after the rename or the unlink
    finally:
        if old is not None:
            os.close(old)
    return written


def _open_existing(folder: int, name: str) -> int | None:
    try:
        # O_NONBLOCK: a FIFO put there must not stall the run (it is refused below).
        return os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotWritten("a symbolic link now; not followed") from None
        raise


def _check_existing(fd: int, name: str, expected: FileIdentity | None) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise NotWritten("not a regular file")
    if expected is not None:
        if not expected.same_file(st) or digest(_read_all(fd)) != expected.digest:
            raise NotWritten("changed since it was read (edited, replaced or touched); run again")
    return st


def _read_only(folder: int, name: str, st: os.stat_result) -> str | None:
    if not st.st_mode & 0o222:
        return f"read-only (mode {stat.S_IMODE(st.st_mode):04o})"
    effective = os.access in os.supports_effective_ids
    if not os.access(name, os.W_OK, dir_fd=folder, effective_ids=effective, follow_symlinks=False):
        return "not writable by this user (its permissions, or a read-only file system)"
    return None


def _copy_metadata(old: int, new: int, st: os.stat_result) -> None:
    """The old file's owner, group, mode and extended attributes, onto the new one."""
    now = os.fstat(new)
    if (now.st_uid, now.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(new, st.st_uid if now.st_uid != st.st_uid else -1, st.st_gid)
        except PermissionError:
            whose = f"user {st.st_uid}" if now.st_uid != st.st_uid else f"group {st.st_gid}"
            raise NotWritten(f"owned by {whose}, which the file that replaces it cannot keep when this user "
                             "writes it") from None
    os.fchmod(new, stat.S_IMODE(st.st_mode))  # after chown, which clears set-id bits
    try:
        names = os.listxattr(old)
    except (AttributeError, OSError):  # no extended attributes here (macOS, a file system without them)
        return
    for attr in names:
        if attr in _NOT_COPIED:
            continue
        try:
            os.setxattr(new, attr, os.getxattr(old, attr))
        except OSError as exc:
            raise NotWritten(f"its extended attribute {attr} cannot be kept ({exc.strerror})") from None


def _still_the_same(folder: int, name: str, st: os.stat_result) -> None:
    """Just before the rename: the file is still the one checked (an edit made while the new
    text was written is kept)."""
    try:
        now = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        raise NotWritten("deleted or renamed while it was written; not re-created") from None
    if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
        raise NotWritten("changed while it was written; run again")


def _read_all(fd: int) -> bytes:
    chunks = []
    offset = 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# -- temporary files --------------------------------------------------------------------------------

def _temporary_prefix(name: str) -> str:
    prefix = f".{name}."
    room = _NAME_MAX - 8 - len(TMP_SUFFIX)
    if len(os.fsencode(prefix)) > room:  # a very long name: its start, cut where it fits
        cut = os.fsencode(name)[: room - 2].decode(errors="ignore")
        prefix = f".{cut}."
    return prefix


def _temporary_pattern(name: str) -> re.Pattern[str]:
    return re.compile(re.escape(_temporary_prefix(name)) + r"[a-z0-9_]{8}" + re.escape(TMP_SUFFIX))


def _new_temporary(folder: int, name: str, mode: int) -> tuple[int, str]:
    """A new temporary file beside NAME, locked; (fd, its name)."""
    prefix = _temporary_prefix(name)
    for _ in range(100):
        tmp = prefix + "".join(secrets.choice(_TMP_CHARS) for _ in range(8)) + TMP_SUFFIX
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=folder)
        except FileExistsError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _names(folder, tmp, fd):
                return fd, tmp
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed as a leftover between its creation and the lock: another name
    raise FileExistsError(errno.EEXIST, "no free name for a temporary file", name)


def _names(folder: int, name: str, fd: int) -> bool:
    """Whether NAME in FOLDER is the open file FD."""
    try:
        now = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    st = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def remove_leftovers(folder: int, name: str) -> list[str]:
    """Remove this tool's temporary files for NAME in FOLDER that no write holds any more (a
    write killed before its rename): only names of the pattern, only regular files, and only
    those whose lock could be taken, i.e. no process has them open for a write in flight.
    Returns the names removed."""
    pattern = _temporary_pattern(name)
    try:
        names = [n for n in os.listdir(folder) if pattern.fullmatch(n)]
    except OSError:
        return []
    removed = []
    for leftover in sorted(names):
        try:
            fd = os.open(leftover, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # locked: a write in flight (or a file system without locks: not provably free)
            if _names(folder, leftover, fd):
                os.unlink(leftover, dir_fd=folder)
                removed.append(leftover)
        except OSError:
            continue
        finally:
            os.close(fd)
    return removed
