"""The user's private folder: `$XDG_RUNTIME_DIR/jaxfuse-lint-UID`, else `$TMPDIR` (or `/tmp`)
`/jaxfuse-lint-UID`, mode 0700, owned by the user and never removed by the tool.

What must not be made, or re-made, by another user lives in it: the daemon's sockets, the
folder `record` puts on the recorded command's PYTHONPATH, and the key that binds the cache's
entries to the user who wrote them (`user_key`, kept instead in `key_folder()`, the user's
cache folder, where there is one: it survives a reboot). No one else can create a name in
it, so a folder of it that was removed stays removed for everyone else: a process that
outlives `record` and still has the removed folder on its PYTHONPATH finds nothing there,
where in a world-writable `/tmp` anyone could have re-created it with a `sitecustomize.py`.

Standard library only: the daemon's client (daemon/__init__.py) asks on every run.
"""
from __future__ import annotations

import os
import stat

KEY_BYTES = 32


def user_folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = runtime if runtime and os.path.isdir(runtime) else (os.environ.get("TMPDIR") or "/tmp")
    return os.path.join(base, f"jaxfuse-lint-{os.getuid()}")


def key_folder() -> str | None:
    """Where keys outlive a reboot: `$XDG_CACHE_HOME/jaxfuse-lint` (else `~/.cache/jaxfuse-lint`), a
    folder of the user's own home, mode 0700 (a run folder under `/tmp` or `$XDG_RUNTIME_DIR` is
    emptied at boot or logout: the cache's entries would all be misses once a key is remade). None
    without a home."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base) or base.startswith("~"):
        return None
    return os.path.join(base, "jaxfuse-lint")


def is_private(path: str, create: bool) -> bool:
    """The folder exists (or was made), is the user's own, is not a link, and no one else may
    enter it."""
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def key_folders() -> list[str]:
    """Where `user_key` keeps keys, first choice first."""
    return [f for f in (key_folder(), user_folder()) if f is not None]


def user_key(name: str) -> bytes | None:
    """A secret of the user's own, KEY_BYTES random bytes kept in the private folder as NAME
    (made on first use, mode 0600): no other user can read it or put another there. None when
    there is no private folder, or what is there is not such a key."""
    import secrets  # not at the top: the daemon's client imports this module on every run

    folder = next((f for f in key_folders() if is_private(f, create=True)), None)
    if folder is None:
        return None
    path = os.path.join(folder, name)
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    # Made whole beside it, then linked in: a run that starts meanwhile reads all of it or none.
    tmp = f"{path}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another run made it first: theirs is the key
        return _read_key(path)
    except OSError:
        return None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _read_key(path: str) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == KEY_BYTES else None
