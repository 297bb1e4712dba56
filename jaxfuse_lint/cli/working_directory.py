"""Whether the working directory still exists: the launcher and the CLI ask before anything else.

Standard library only: `launch.py` imports it before it looks for a daemon.
"""
from __future__ import annotations

import sys


def cwd_exists() -> bool:
    """Whether the working directory still exists; says so on one line when it does not."""
    import os

    try:
        os.getcwd()
        return True
    except OSError:
        print("jaxfuse-lint: error: the current directory no longer exists (deleted?); "
              "change to an existing one", file=sys.stderr)
        return False
