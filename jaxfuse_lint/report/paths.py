"""How file names are shown: relative to the working directory when they are below it."""
from __future__ import annotations

import os


def display_path(filename: str, root: str | None = None) -> str:
    if filename in ("-", "<stdin>"):
        return filename
    base = root or os.getcwd()
    try:
        rel = os.path.relpath(os.path.abspath(filename), base)
    except ValueError:
        return filename
    return filename if rel.startswith("..") else rel
