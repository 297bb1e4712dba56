"""The `jaxfuse-lint` executable: hand the command line to a running daemon if there is one
(daemon/__init__; nothing but a `stat` when there is none), else run it here."""
from __future__ import annotations

import sys

from jaxfuse_lint.cli.working_directory import cwd_exists


def main() -> None:
    if not cwd_exists():
        sys.exit(2)
    from jaxfuse_lint.daemon import forward

    code = forward(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from jaxfuse_lint.cli.main import main as run_here

    run_here()


if __name__ == "__main__":
    main()
