"""The user's private folder: `$XDG_RUNTIME_DIR/jaxfuse-lint-UID`, else `$TMPDIR` (or `/tmp`)
`/jaxfuse-lint-UID`, mode 0700, owned by the user and never removed by the tool.

What must not be made, or re-made, by another user lives in it: the daemon's sockets, and the
folder `record` puts on the recorded command's PYTHONPATH. No one else can create a name in
it, so a folder of it that was removed stays removed for everyone else: a process that
outlives `record` and still has the removed folder on its PYTHONPATH finds nothing there,
where in a world-writable `/tmp` anyone could have re-created it with a `sitecustomize.py`.

Standard library only: the daemon's client (daemon/__init__.py) asks on every run.
"""
from __future__ import annotations

import os
import stat


def user_folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = runtime if runtime and os.path.isdir(runtime) else (os.environ.get("TMPDIR") or "/tmp")
    return os.path.join(base, f"jaxfuse-lint-{os.getuid()}")


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
