"""Dotted module names: which module a file is (`ModuleNamer`), what a relative import names, and
how the model spells an imported name. Text and paths only, no parse."""
from __future__ import annotations

import os
from pathlib import Path


def import_spellings(qualified: str, package: str) -> list[str]:
    """How the model spells an imported name (`scopes.Binding.qualified_name`, then attributes):
    `physics.mesh.kvec_mesh` absolutely, or relative to `package`: `.mesh.kvec_mesh` for
    `from .mesh import kvec_mesh`, `..mesh` for `from . import mesh`."""
    out = [qualified]
    parts = package.split(".") if package else []
    for level in range(1, len(parts) + 1):
        base = ".".join(parts[: len(parts) - (level - 1)])
        if qualified.startswith(base + "."):
            rest = qualified[len(base) + 1:]
            out.append("." * level + rest)
            if "." not in rest:
                out.append("." * (level + 1) + rest)  # `from . import rest`
    return out


class ModuleNamer:
    """Dotted module names from paths: packages are directories with an `__init__.py`."""

    def __init__(self) -> None:
        self._is_package_dir: dict[Path, bool] = {}
        self._prefixes: dict[str, tuple[str, ...]] = {}

    def _package_dir(self, d: Path) -> bool:
        found = self._is_package_dir.get(d)
        if found is None:
            found = (d / "__init__.py").is_file()
            self._is_package_dir[d] = found
        return found

    def name(self, path: str | os.PathLike) -> tuple[str, bool] | None:
        """(dotted name, is a package `__init__`), or None for a file that is no module."""
        directory, _, filename = os.path.abspath(path).rpartition(os.sep)
        stem, dot, suffix = filename.rpartition(".")
        if not dot or suffix != "py" or not stem.isidentifier():
            return None
        is_package = stem == "__init__"
        if is_package:  # a package's `__init__.py` is named by its folder
            head, _, folder = directory.rpartition(os.sep)
            parts = [*self._prefix(head or os.sep), folder]
        else:
            parts = [*self._prefix(directory), stem]
        if not parts or not all(x.isidentifier() for x in parts):
            return None
        return ".".join(parts), is_package

    def _prefix(self, directory: str) -> tuple[str, ...]:
        """The dotted package path of a folder (its name and its parents' while each holds an
        `__init__.py` and is an identifier); () when it is no package. Cached per folder."""
        found = self._prefixes.get(directory)
        if found is None:
            d = Path(directory)
            if d.parent != d and d.name.isidentifier() and self._package_dir(d):
                found = (*self._prefix(str(d.parent)), d.name)
            else:
                found = ()
            self._prefixes[directory] = found
        return found


def package_of(module: str, is_package: bool) -> str:
    return module if is_package else module.rpartition(".")[0]


def absolute(level: int, module: str, package: str) -> str | None:
    """`from ..x import y` seen from `package` -> the absolute module `x` names."""
    if level == 0:
        return module or None
    if not package:  # a relative import outside a package fails at run time
        return None
    parts = package.split(".")
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base) or None
