"""A fingerprint of the tool's own code: its version plus the size and mtime of every source
file of the `jaxfuse_lint` package (its codemods included).

Two things must never outlive the code they came from: cache entries (`cache.py` keys them
by it) and a resident daemon's imported modules (`daemon/` names its socket by it). An
edited checkout or an upgrade changes the fingerprint, so neither is used again. Computing
it stats ~150 files and imports nothing but the standard library, so the daemon's client
can afford it on every run.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache

from jaxfuse_lint.core.version import __version__


def source_roots() -> list[str]:
    # The package's folder (this module is jaxfuse_lint/core/fingerprint.py).
    return [os.path.dirname(os.path.dirname(os.path.realpath(__file__)))]


@lru_cache(maxsize=1)
def source_fingerprint() -> str:
    h = hashlib.sha256(__version__.encode())
    for root in source_roots():
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py"):
                    p = os.path.join(dirpath, name)
                    try:
                        st = os.stat(p)
                    except OSError:
                        continue
                    h.update(f"{os.path.relpath(p, root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]
