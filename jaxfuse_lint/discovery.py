"""Paths -> the Python files to check.

Directories are walked recursively, skipping `.gitignore`d paths (pathspec,
git's own matching rules, nested .gitignore files included), `exclude` and
`extend-exclude` patterns, virtual environments and build directories.
Files named explicitly are always checked. Symlink loops are not followed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pathspec

from jaxfuse_lint.config import Settings


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


class _Ignore:
    """Stacked .gitignore specs: each applies to paths below its directory."""

    def __init__(self) -> None:
        self.specs: list[tuple[Path, pathspec.PathSpec]] = []

    def load(self, directory: Path) -> None:
        gi = directory / ".gitignore"
        if gi.is_file():
            try:
                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                return
            self.specs.append((directory, pathspec.GitIgnoreSpec.from_lines(lines)))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False


def _git_root(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def discover(paths: list[str], settings: Settings) -> Iterator[Path]:
    root = Path(settings.project_root) if settings.project_root else Path.cwd()
    exclude = pathspec.GitIgnoreSpec.from_lines(list(settings.exclude) + list(settings.extend_exclude))
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_file() or (not p.exists() and raw.endswith((".py", ".pyi"))):
            resolved = p.resolve() if p.exists() else p
            if resolved not in seen:
                seen.add(resolved)
                yield p  # named explicitly: always checked (a missing one is reported by the caller)
            continue
        if not p.is_dir():
            yield p
            continue
        ignore = _Ignore()
        if settings.respect_gitignore:
            git_root = _git_root(p.resolve())
            if git_root is not None:
                # .gitignore files between the repository root and the starting directory apply too.
                for d in reversed([p.resolve(), *p.resolve().parents]):
                    if d == git_root or git_root in d.parents:
                        ignore.load(d)
            else:
                ignore.load(p.resolve())
        visited_dirs: set[tuple[int, int]] = set()
        start = p.resolve()
        root_resolved = root.resolve()
        for dirpath, dirnames, filenames in os.walk(p, followlinks=True):
            d = Path(dirpath)
            try:
                st = os.stat(d)
                key = (st.st_dev, st.st_ino)
            except OSError:
                dirnames[:] = []
                continue
            if key in visited_dirs:  # a symlink loop
                dirnames[:] = []
                continue
            visited_dirs.add(key)
            # Resolved once per directory: an entry's real path is the directory's plus its
            # name unless the entry is itself a link (realpath per file was most of a warm run).
            d_resolved = d.resolve()
            if settings.respect_gitignore and d_resolved != start:
                ignore.load(d_resolved)
            keep = []
            for name in sorted(dirnames):
                sub = d / name
                sub_resolved = _entry_resolved(d_resolved, sub, name)
                rel = _rel(sub, root_resolved, sub_resolved)
                if exclude.match_file(rel + "/") or exclude.match_file(name + "/"):
                    continue
                if _is_virtualenv(sub):
                    continue
                if settings.respect_gitignore and ignore.ignored(sub_resolved, True):
                    continue
                keep.append(name)
            dirnames[:] = keep
            for name in sorted(filenames):
                if not name.endswith((".py", ".pyi")):
                    continue
                f = d / name
                resolved = _entry_resolved(d_resolved, f, name)
                rel = _rel(f, root_resolved, resolved)
                if exclude.match_file(rel) or exclude.match_file(name):
                    continue
                if settings.respect_gitignore and ignore.ignored(resolved, False):
                    continue
                if resolved in seen:
                    continue
                seen.add(resolved)
                yield f


def _entry_resolved(directory_resolved: Path, entry: Path, name: str) -> Path:
    return entry.resolve() if os.path.islink(entry) else directory_resolved / name


def _rel(path: Path, root_resolved: Path, resolved: Path) -> str:
    try:
        return resolved.relative_to(root_resolved).as_posix()
    except ValueError:
        return path.as_posix()
