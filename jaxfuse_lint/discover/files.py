"""Paths -> the source files to check (Python files and Jupyter notebooks), and an account of
what was left out and why.

Rules (ruff's):
- A path the user names is always checked, file or folder, even inside an excluded,
  gitignored, virtual-environment or build directory; `--force-exclude` applies the
  `exclude`/`extend-exclude` patterns and `.gitignore` to named paths too (pre-commit
  passes every staged file by name).
- Folders are walked to any depth (without recursion). Below a named folder, entries are skipped when they
  match `exclude`/`extend-exclude` (matched against the path relative to the project
  root and against the bare name), are `.gitignore`d (git's own matching rules, nested
  .gitignore files included; matched in linear time whatever the pattern, core/gitignore.py),
  or are virtual environments. Symlink loops are not
  followed, nor links to folders outside the named folder (ruff's walk stays in the tree).
- Which files are sources is decided in one place, `is_source` (the `include` patterns).
  A named file that is not a source (`notes.txt`) is reported and skipped.
- Only regular files are sources: a FIFO, a device, a socket or a link to one named like a
  source is reported and skipped (reading one hangs or never ends; source_bytes.py reads).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Protocol

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.json_types import str_tuple, typed
from jaxfuse_lint.core import stat_signature
from jaxfuse_lint.core.stat_signature import file_signature
from jaxfuse_lint.discover.source_bytes import kind

if TYPE_CHECKING:
    import pathspec


class WalkMemo(Protocol):
    """Where remembered folder walks are kept (`_walk_remembered`): the run's cache
    (run/cache.py) is one; discovery needs only these two methods of it."""

    def load_walk(self, key: str) -> dict[str, Any] | None: ...

    def store_walk(self, key: str, walk: dict[str, Any]) -> None: ...


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
    # Only for patterns that set lookups cannot decide, and .gitignore files: matched in linear
    # time whatever the pattern (a cloned repository's .gitignore is anyone's text).
    from jaxfuse_lint.core.gitignore import spec

    return spec(patterns)


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
    try:
        return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()
    except OSError:  # a folder we may not look into: the walk reports it
        return False


class _Ignore:
    """Stacked .gitignore specs: each applies to paths below its directory."""

    def __init__(self) -> None:
        self.specs: list[tuple[Path, pathspec.PathSpec]] = []

    def load(self, directory: Path, observed: _Observations | None = None) -> None:
        gi = directory / ".gitignore"
        if observed is not None:
            observed.ignore_file(gi)
        if os.path.isfile(gi):
            try:
                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                return
            self.specs.append((directory, _spec(lines)))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False


def _git_root(start: Path, observed: _Observations | None = None) -> Path | None:
    for d in (start, *start.parents):
        found = (d / ".git").exists()
        if observed is not None:
            observed.existence(d / ".git", found)
        if found:
            return d
    return None


class _Observations:
    """What a walk's result depends on besides the settings, as stat can re-check it: the
    modification time of every folder it listed or looked into (adding, removing or renaming an
    entry changes it), the signature of every .gitignore it read (one edited in place does not
    change its folder's time), and which `.git` markers exist above it."""

    def __init__(self) -> None:
        self.items: list[list] = []

    def folder(self, path: Path) -> None:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            mtime = None
        self.items.append(["d", str(path), mtime])

    def ignore_file(self, path: Path) -> None:
        self.items.append(["f", str(path), file_signature(path)])

    def existence(self, path: Path, exists: bool) -> None:
        self.items.append(["e", str(path), exists])

    def settled_before(self, time_ns: int) -> bool:
        """No folder or .gitignore changed so close to `time_ns` that a later change could keep
        its time (stat_signature.RACY_NS)."""
        for kind, _, value in self.items:
            changed = value if kind == "d" else max(value[1], value[2]) if kind == "f" and value else None
            if changed is not None and changed >= time_ns - stat_signature.RACY_NS:
                return False
        return True

    @staticmethod
    def still_hold(items: list) -> bool:
        for kind, path, value in items:
            if kind == "d":
                try:
                    now = os.stat(path).st_mtime_ns
                except OSError:
                    now = None
            elif kind == "f":
                now = file_signature(path)
            else:
                now = os.path.exists(path)
            if now != value:
                return False
        return True


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


def discover_files(paths: list[str], settings: Settings, *, force_exclude: bool = False,
                   cache: WalkMemo | None = None) -> Discovery:
    """Every source file under `paths` (see the module docstring for the rules). With a
    `cache`, a folder's walk is replayed from the last one when stat says that nothing it
    depended on changed (`_Observations`)."""
    root = Path(settings.project_root) if settings.project_root else Path.cwd()
    excluder = _Excluder(settings, root)
    found = Discovery()
    seen: set[str] = set()  # real paths: a file named twice, or through a link, is checked once
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
            resolved = str(p.resolve() if p.exists() else p)
            if resolved not in seen:
                seen.add(resolved)
                found.files.append(p)  # named explicitly: always checked (a missing one is reported by the caller)
            continue
        if not p.is_dir():  # a socket, a fifo...: said once, what it is (the walk's words)
            try:
                what = kind(p.stat().st_mode)
            except OSError:
                what = None
            found.skipped.append((raw, f"not a regular file: {what}" if what else "not a regular file"))
            continue
        walked = _walk_remembered(p, settings, root, excluder, cache) if cache is not None else \
            _walk(p, settings, root, excluder)
        for f, resolved in walked.files:
            if resolved not in seen:
                seen.add(resolved)
                found.files.append(f)
        found.skipped.extend(walked.skipped)
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


@dataclass
class _Walked:
    files: list[tuple[Path, str]] = field(default_factory=list)  # (as found, real path)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _walk_remembered(p: Path, settings: Settings, root: Path, excluder: _Excluder, cache: WalkMemo) -> _Walked:
    """`_walk`, or its last result when stat says it still holds. A warm run of an unchanged
    project spends its time here otherwise (listing and matching every entry, and importing
    pathspec for .gitignore files): on flax, 35 ms of 140 ms, against ~3 ms to re-check."""
    key = hashlib.sha256(repr((
        str(p), str(p.resolve()), str(root.resolve()), settings.include, settings.exclude, settings.extend_exclude,
        settings.respect_gitignore,
    )).encode()).hexdigest()
    memo = cache.load_walk(key)
    if memo is not None:
        try:
            observed, walked = _memo_from_json(memo, p)
            if _Observations.still_hold(observed):
                return walked
        except (KeyError, TypeError, ValueError):
            pass  # a damaged memo is a miss
    started = time.time_ns()
    observed = _Observations()
    walked = _walk(p, settings, root, excluder, observed)
    if observed.settled_before(started):
        cache.store_walk(key, {"observed": observed.items,
                               "files": [[str(f), r] for f, r in walked.files],
                               "skipped": walked.skipped})
    return walked


def _memo_from_json(memo: dict[str, Any], p: Path) -> tuple[list, _Walked]:
    """A remembered walk of P as the cache gives it back: ValueError if any value has the wrong
    type, or a file is not below P (a damaged or planted memo is a miss)."""
    base = os.path.normpath(p)
    observed = typed(memo["observed"], list, "observed")
    for item in observed:
        if type(item) is not list or len(item) != 3 or item[0] not in ("d", "f", "e") or type(item[1]) is not str:
            raise ValueError("observed: [kind, path, value] expected")
    files = [str_tuple(f, 2, "files") for f in typed(memo["files"], list, "files")]
    if not all(_below(os.path.normpath(f), base) for f, _ in files):
        raise ValueError("files: a file outside the walked folder")
    skipped = [str_tuple(s, 2, "skipped") for s in typed(memo["skipped"], list, "skipped")]
    return observed, _Walked([(Path(f), r) for f, r in files], skipped)


def _below(path: str, folder: str) -> bool:
    """Whether the normalized PATH names something in the normalized FOLDER (as a walk of it does)."""
    if folder == ".":
        return not os.path.isabs(path) and path != ".." and not path.startswith(".." + os.sep)
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _walk(p: Path, settings: Settings, root: Path, excluder: _Excluder,
          observed: _Observations | None = None) -> _Walked:
    walked = _Walked()
    # A named folder inside an excluded one (`build/pkg`) is checked: the patterns then
    # apply to what is below it only, not to the part of the path the user typed.
    base = p if p.resolve() != root.resolve() and excluder.matches(p, True) else None
    ignore = _Ignore()
    if settings.respect_gitignore:
        top = p.resolve()
        git_root = _git_root(top, observed)
        if git_root is not None:
            # .gitignore files between the repository root and the starting directory apply too,
            # unless they ignore the named folder itself (the user asked for it by name).
            stack = _Ignore()
            for d in reversed([top, *top.parents]):
                if d == git_root or git_root in d.parents:
                    stack.load(d, observed)
            if not stack.ignored(top, True):
                ignore = stack
            else:
                ignore.load(top, observed)
        else:
            ignore.load(top, observed)
    visited_dirs: set[tuple[int, int]] = set()
    start = p.resolve()
    inside = str(start).rstrip(os.sep) + os.sep
    # Each kept folder's real path, from its parent's (resolving every folder's path again cost
    # time growing with the square of the depth: a stat per component).
    resolved_of: dict[str, Path] = {}
    def unreadable(exc: OSError) -> None:
        walked.skipped.append((str(exc.filename), f"cannot read the folder: {exc.strerror or exc}"))

    for dirpath, dirnames, entries in _tree(p, unreadable):
        d = Path(dirpath)
        if observed is not None:
            observed.folder(d)
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
        d_resolved = resolved_of.pop(dirpath, None) or d.resolve()
        if settings.respect_gitignore and d_resolved != start:
            ignore.load(d_resolved, observed)
        keep = []
        for name in sorted(dirnames):
            sub = d / name
            sub_resolved = _entry_resolved(d_resolved, sub, name)
            if sub_resolved != start and not str(sub_resolved).startswith(inside):
                walked.skipped.append((str(sub), f"a symbolic link to {sub_resolved}, outside {p}"))
                continue
            if excluder.matches(sub, True, base, sub_resolved):
                walked.skipped.append((str(sub), "excluded"))
                continue
            if observed is not None:
                observed.folder(sub)  # whether it is a virtual environment depends on what is in it
            if _is_virtualenv(sub):
                walked.skipped.append((str(sub), "a virtual environment"))
                continue
            if settings.respect_gitignore and ignore.ignored(sub_resolved, True):
                walked.skipped.append((str(sub), "gitignored"))
                continue
            keep.append(name)
            resolved_of[os.path.join(dirpath, name)] = sub_resolved
        dirnames[:] = keep
        for entry in sorted(entries, key=lambda e: e.name):
            name = entry.name
            f = d / name
            resolved = _entry_resolved(d_resolved, f, name)
            if not is_source(f, settings, root, resolved=resolved):
                continue
            if excluder.matches(f, False, base, resolved):
                walked.skipped.append((str(f), "excluded"))
                continue
            if settings.respect_gitignore and ignore.ignored(resolved, False):
                walked.skipped.append((str(f), "gitignored"))
                continue
            what = _not_regular(entry)
            if what is not None:
                walked.skipped.append((str(f), f"not a regular file: {what}"))
                continue
            walked.files.append((f, str(resolved)))
    return walked


def _tree(top: Path, onerror) -> Iterator[tuple[str, list[str], list[os.DirEntry]]]:
    """`os.walk(top, followlinks=True, onerror=onerror)`, top-down, without recursion (a tree
    deeper than Python's recursion limit is walked too): (folder, its sub-folder names, which the
    caller may prune as os.walk's, the DirEntry of every other entry). Loops are the caller's to
    stop (it remembers the folders it has seen)."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                listed = list(it)
        except OSError as exc:
            onerror(exc)
            continue
        dirnames, others = [], []
        for entry in listed:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else others).append(entry.name if is_dir else entry)
        yield folder, dirnames, others
        stack.extend(os.path.join(folder, name) for name in reversed(dirnames))


def _not_regular(entry: os.DirEntry) -> str | None:
    """What a walked entry is when it is not a regular file, following links ("a FIFO"); None
    for a regular file, and for an entry stat cannot see (a dangling link: reading it reports why)."""
    try:
        if entry.is_file():
            return None
        return kind(entry.stat().st_mode)
    except OSError:
        return None


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
