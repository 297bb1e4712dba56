"""Paths -> the source files to check (Python files and Jupyter notebooks), and an account of
what was left out and why.

Rules (ruff's):
- A path the user names is always checked, file or folder, even inside an excluded,
  gitignored, virtual-environment or build directory; `--force-exclude` applies the
  `exclude`/`extend-exclude` patterns and `.gitignore` to named paths too (pre-commit
  passes every staged file by name).
- Folders are walked recursively. Below a named folder, entries are skipped when they
  match `exclude`/`extend-exclude` (matched against the path relative to the project
  root and against the bare name), are `.gitignore`d (pathspec, git's own matching rules,
  nested .gitignore files included), or are virtual environments. Symlink loops are not
  followed.
- Which files are sources is decided in one place, `is_source` (the `include` patterns).
  A named file that is not a source (`notes.txt`) is reported and skipped.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pathspec

from jaxfuse_lint.config import Settings


@dataclass
class Discovery:
    """The files to check, in a stable order, and what was left out (for -v and warnings)."""

    files: list[Path] = field(default_factory=list)
    # (path, why): named paths that were not checked, and directories and files the walk skipped
    skipped: list[tuple[str, str]] = field(default_factory=list)
    # named paths that are not sources (`notes.txt`): worth a warning even without -v
    not_sources: list[str] = field(default_factory=list)
    # named paths left out by --force-exclude
    force_excluded: list[str] = field(default_factory=list)


def _spec(patterns) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines(list(patterns))


def is_source(path: Path, settings: Settings, root: Path | None = None, *, resolved: Path | None = None) -> bool:
    """Whether `path` is a file this tool reads: it matches an `include` pattern (by its
    path relative to the project root, or by its name). The one place that decides it."""
    spec = _include_matcher(settings.include)
    if isinstance(spec, tuple):  # only `*.py`-like patterns: a name's suffix decides
        return path.name.endswith(spec)
    if spec.match_file(path.name):
        return True
    return root is not None and spec.match_file(_rel(path, root, resolved))


@functools.cache
def _include_matcher(include: tuple[str, ...]) -> tuple[str, ...] | pathspec.PathSpec:
    return _suffixes(include) or _spec(include)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.+-]+/?")
_SUFFIX_GLOB = re.compile(r"\*(\.[A-Za-z0-9_+-]+)+")


def _suffixes(patterns) -> tuple[str, ...] | None:
    """`("*.py", "*.ipynb")` -> `(".py", ".ipynb")`: patterns that a suffix test matches exactly
    as gitignore matching would (no slash: the name at any depth); None for any other pattern."""
    if patterns and all(_SUFFIX_GLOB.fullmatch(p) for p in patterns):
        return tuple(p[1:] for p in patterns)
    return None


def _plain_names(patterns) -> tuple[frozenset[str], frozenset[str]] | None:
    """(names, folder-only names) when every pattern is a bare name (`build`, `.venv/`): such a
    gitignore pattern matches any path with a component of that name (a folder for `name/`), so
    set lookups decide it; None when any pattern needs pathspec (globs, slashes, negation)."""
    if not all(_PLAIN_NAME.fullmatch(p) and p not in (".", "..", "./", "../") for p in patterns):
        return None
    return (frozenset(p for p in patterns if not p.endswith("/")),
            frozenset(p[:-1] for p in patterns if p.endswith("/")))


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


class _Excluder:
    """`exclude` + `extend-exclude`, matched against the path relative to the project root
    and against the entry's own name (ruff matches the full path and the basename)."""

    def __init__(self, settings: Settings, root: Path) -> None:
        self.patterns = list(settings.exclude) + list(settings.extend_exclude)
        # The default patterns are bare names: matched with set lookups (pathspec per entry, and
        # compiling its patterns, was a large part of a warm run).
        self.plain = _plain_names(self.patterns)
        self.root = root

    @functools.cached_property
    def spec(self) -> pathspec.PathSpec:
        return _spec(self.patterns)

    def matches(self, path: Path, is_dir: bool, base: Path | None = None, resolved: Path | None = None) -> bool:
        """`base`: match relative to this folder instead of the project root (used below a
        named folder that is itself excluded: only what is below it counts)."""
        suffix = "/" if is_dir else ""
        rel = _rel(path, base if base is not None else self.root, resolved)
        if self.plain is not None:
            names, folders = self.plain
            parts = rel.split("/")
            folder_parts = parts if is_dir else parts[:-1]
            return (not names.isdisjoint(parts) or not folders.isdisjoint(folder_parts)
                    or path.name in names or (is_dir and path.name in folders))
        return self.spec.match_file(rel + suffix) or self.spec.match_file(path.name + suffix)

    def named_path_excluded(self, path: Path) -> bool:
        """--force-exclude: the path, or a folder it is in, is excluded."""
        resolved = path.resolve()
        if self.matches(resolved, resolved.is_dir()):
            return True
        try:
            parts = resolved.relative_to(self.root.resolve()).parts[:-1]
        except ValueError:
            parts = resolved.parts[1:-1]
        return any(self.spec.match_file(part + "/") for part in parts)


def discover_files(paths: list[str], settings: Settings, *, force_exclude: bool = False) -> Discovery:
    """Every source file under `paths` (see the module docstring for the rules)."""
    root = Path(settings.project_root) if settings.project_root else Path.cwd()
    excluder = _Excluder(settings, root)
    found = Discovery()
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if force_exclude and p.exists() and (excluder.named_path_excluded(p) or (
                settings.respect_gitignore and _gitignored(p))):
            found.force_excluded.append(raw)
            found.skipped.append((raw, "excluded (--force-exclude)"))
            continue
        if p.is_file() or not p.exists():
            if p.exists() and not is_source(p, settings, root):
                found.not_sources.append(raw)
                found.skipped.append((raw, f"not a source file (include: {', '.join(settings.include)})"))
                continue
            resolved = p.resolve() if p.exists() else p
            if resolved not in seen:
                seen.add(resolved)
                found.files.append(p)  # named explicitly: always checked (a missing one is reported by the caller)
            continue
        if not p.is_dir():  # a socket, a fifo...
            found.not_sources.append(raw)
            found.skipped.append((raw, "not a regular file"))
            continue
        _walk(p, settings, root, excluder, found, seen)
    return found


def _gitignored(path: Path) -> bool:
    """--force-exclude: the named path is ignored by a .gitignore between it and the repository root."""
    resolved = path.resolve()
    git_root = _git_root(resolved if resolved.is_dir() else resolved.parent)
    if git_root is None:
        return False
    stack = _Ignore()
    for d in reversed(list(resolved.parents)):
        if d == git_root or git_root in d.parents:
            stack.load(d)
    return stack.ignored(resolved, resolved.is_dir())


def discover(paths: list[str], settings: Settings, *, force_exclude: bool = False) -> Iterator[Path]:
    """The files only (see discover_files)."""
    yield from discover_files(paths, settings, force_exclude=force_exclude).files


def _walk(p: Path, settings: Settings, root: Path, excluder: _Excluder, found: Discovery, seen: set[Path]) -> None:
    # A named folder inside an excluded one (`build/pkg`) is checked: the patterns then
    # apply to what is below it only, not to the part of the path the user typed.
    base = p if p.resolve() != root.resolve() and excluder.matches(p, True) else None
    ignore = _Ignore()
    if settings.respect_gitignore:
        top = p.resolve()
        git_root = _git_root(top)
        if git_root is not None:
            # .gitignore files between the repository root and the starting directory apply too,
            # unless they ignore the named folder itself (the user asked for it by name).
            stack = _Ignore()
            for d in reversed([top, *top.parents]):
                if d == git_root or git_root in d.parents:
                    stack.load(d)
            if not stack.ignored(top, True):
                ignore = stack
            else:
                ignore.load(top)
        else:
            ignore.load(top)
    visited_dirs: set[tuple[int, int]] = set()
    start = p.resolve()
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
        d_resolved = d.resolve()
        if settings.respect_gitignore and d_resolved != start:
            ignore.load(d_resolved)
        keep = []
        for name in sorted(dirnames):
            sub = d / name
            sub_resolved = _entry_resolved(d_resolved, sub, name)
            if excluder.matches(sub, True, base, sub_resolved):
                found.skipped.append((str(sub), "excluded"))
                continue
            if _is_virtualenv(sub):
                found.skipped.append((str(sub), "a virtual environment"))
                continue
            if settings.respect_gitignore and ignore.ignored(sub_resolved, True):
                found.skipped.append((str(sub), "gitignored"))
                continue
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            f = d / name
            resolved = _entry_resolved(d_resolved, f, name)
            if not is_source(f, settings, root, resolved=resolved):
                continue
            if excluder.matches(f, False, base, resolved):
                found.skipped.append((str(f), "excluded"))
                continue
            if settings.respect_gitignore and ignore.ignored(resolved, False):
                found.skipped.append((str(f), "gitignored"))
                continue
            if resolved in seen:
                continue
            seen.add(resolved)
            found.files.append(f)


def _rel(path: Path, root: Path, resolved: Path | None = None) -> str:
    try:
        return (resolved or path.resolve()).relative_to(_resolved_root(root)).as_posix()
    except ValueError:
        return path.as_posix()


@functools.cache
def _resolved_root(root: Path) -> Path:
    return root.resolve()


def _entry_resolved(directory_resolved: Path, entry: Path, name: str) -> Path:
    """An entry's real path: its directory's plus its name, unless the entry is itself a link
    (resolving every file separately was most of a warm run's time)."""
    return entry.resolve() if os.path.islink(entry) else directory_resolved / name
