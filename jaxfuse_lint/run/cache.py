"""The per-file cache: `.jaxfuse_lint_cache/` (or `--cache-dir` / `cache-dir`).

An entry is keyed by what a file's result depends on:
- the file's bytes (SHA-256) and the name it is reported under,
- its module name in the project (relative imports resolve against it),
- the tool: its version and a fingerprint of its own source files (so that an edited
  checkout never serves results of the old code),
- the effective configuration (`Settings.fingerprint()`).
It holds the file's text prescan and project summary (which depend on nothing else), and
the diagnostics of the last check together with the `external_traced` map they were
computed with: a result is reused only when the map is the same again, so a change in
another module that changes what is traced here invalidates it.

Next to the entries, a run of `check` over a list of files leaves a record of it: each
file's key, final result and stat signature (`runs/`, one record per list of file names).
When every file of a run has the key its record says, the project index cannot have changed
either (every input of it is in the keys), so the results are replayed from that one file: a
warm run of an unchanged project reads one small file instead of every file's summary.
A file whose stat signature (size, mtime, ctime, inode, device) is the one recorded is not
read or hashed again: its key is the recorded one. That holds only for files last changed
well before the recorded run looked at them (core/stat_signature.py, `trusted_signature`): a
file written within the clock's granularity of the stat could change again without its times
changing (git's "racily clean" entries), so it is hashed.

Each version of the tool has its own folder (`<root>/<tool fingerprint>/<settings key>/`);
when a new version first writes, the folders of other versions that no run wrote to for a
day are removed: only folders holding the MARKER file this tool writes into each version
folder it creates (`cache-dir` may name any folder; what the tool did not create stays).

A cache folder owned by another user (root included: root does not write into a user's cache,
which that user could then change under root's next run) is not used: the run goes on without
the cache, and says so on one line. So is a run whose user has no private folder for the key.

The cache never follows a link it did not create (it creates none) and never writes outside
its own folder: every folder below the cache folder is opened without following links, relative
to the one above it (core/folders.py), and files are created only where nothing is (a link
planted where the CACHEDIR.TAG or the .gitignore goes is left alone, not followed). The cache
folder itself is reached the same way from the project root (the current directory without a
configuration) when it is the default one or a configuration's `cache-dir` (confined to the
project: core/config.py); only a `--cache-dir` named on the command line is followed as named.

Entries are JSON files written atomically (core/writer.py), behind a line with an HMAC-SHA256
of the JSON under a key of the user's own (core/private_folder.py, `user_key`: in the user's
private folder, which no one else can read or write): an entry someone else wrote or changed (a
planted message, a row of 10^9, a `cell` on a `.py` file: each with valid types) is a miss,
never a result. A missing, unreadable, corrupt (checksum), or malformed entry or record is a miss:
every value is checked for its type where it is decoded (cached_results.entry_is_valid,
`from_json` of diagnostics, summaries and prescans), so an entry whose checksum was recomputed
over ill-typed values replays nothing. (Checked by hand: a JSON Schema validator costs its
import alone, 80 ms for `jsonschema`, most of a warm run.) A cache directory that cannot be
written is reported once and then left alone. The folder walks of discovery are remembered here too (`walks/`, see
discover/files.py, `_walk_remembered`; the cache is discovery's `WalkMemo`). JSON was measured against marshal, msgpack and pickle on the cache of flax (353
files): decoding every full entry took 24, 17, 19 and 24 ms. The format matters less than
not reading the summaries at all, so it stays JSON (stdlib, safe on a damaged file).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.fingerprint import source_fingerprint
from jaxfuse_lint.core.folders import LinkInPath, open_folder, walk

DEFAULT_DIR = ".jaxfuse_lint_cache"
FORMAT = 4  # 3: a SHA-256 line before each entry's JSON; 4: an HMAC-SHA256 under the user's key
KEY_NAME = "cache.key"  # the key's name in the user's private folder
# The cache folders of other versions of the tool are removed when no run wrote to them for
# this long (checked when a new version first writes).
PRUNE_AFTER_S = 24 * 3600
VERSION_DIR = re.compile(r"[0-9a-f]{16}")


class RecordedFile(NamedTuple):
    filename: str
    key: str  # its cache key (Cache.key)
    result: dict  # its final result (cached_results.result_to_json)
    signature: list[int] | None  # stat_signature.file_signature, taken before the file was read
    module: str | None  # the module name it had (part of the key; re-derived, then compared)


class RunRecord(NamedTuple):
    stat_time_ns: int  # when the run started taking signatures (time.time_ns)
    files: list[RecordedFile]


class NotOurs(OSError):
    """The cache folder, or the key that signs its entries, is not this user's."""


@lru_cache(maxsize=1)
def user_key() -> bytes | None:
    """The user's key for the cache's HMACs (None: no private folder to keep one in)."""
    from jaxfuse_lint.core.private_folder import user_key as private_key

    return private_key(KEY_NAME)


def _signature(key: bytes, body: bytes) -> bytes:
    import hmac

    return hmac.new(key, body, hashlib.sha256).hexdigest().encode()


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The tool's source fingerprint (fingerprint.py) and this cache format."""
    return hashlib.sha256(f"{source_fingerprint()}:{FORMAT}".encode()).hexdigest()[:16]


def default_directory(settings: Settings) -> Path:
    """`cache-dir` / `--cache-dir`; else next to the pyproject.toml that configured the run
    (the project root); else in the current directory (as ruff does)."""
    if settings.cache_dir:
        return Path(settings.cache_dir)
    if settings.config_path and settings.project_root:
        return Path(settings.project_root) / DEFAULT_DIR
    return Path(DEFAULT_DIR)


def confinement(settings: Settings) -> str | None:
    """The folder the cache folder is reached from without following a link: the project root
    for a configured `cache-dir` and for the default folder (the current directory without a
    configuration); None for a `--cache-dir` named on the command line, which is followed."""
    if settings.cache_dir:
        return settings.cache_dir_root
    if settings.config_path and settings.project_root:
        return settings.project_root
    return "."


def for_settings(settings: Settings) -> "Cache":
    """The cache a run with these settings uses."""
    return Cache(default_directory(settings), settings, within=confinement(settings))


class Cache:
    def __init__(self, directory: str | os.PathLike, settings: Settings, within: str | None = None) -> None:
        """The cache in DIRECTORY. WITHIN: a folder DIRECTORY is below, from which it is opened
        without following links (None: DIRECTORY is opened as named)."""
        self.root = Path(directory)
        self.within = within
        settings_key = hashlib.sha256(settings.fingerprint().encode()).hexdigest()[:16]
        self._below = (tool_fingerprint(), settings_key)  # this version's and these settings' folder
        self.directory = self.root.joinpath(*self._below)
        self.error: str | None = None  # the first write failure, reported once by the runner
        self._prepared = False

    @staticmethod
    def key(filename: str, digest: str, module: str | None) -> str:
        return hashlib.sha256(f"{filename}\0{digest}\0{module}".encode()).hexdigest()

    @staticmethod
    def _entry(key: str) -> tuple[tuple[str, ...], str]:
        return (key[:2],), f"{key}.json"

    @staticmethod
    def run_key(filenames: list[str]) -> str:
        return hashlib.sha256("\0".join(filenames).encode()).hexdigest()

    def load_run(self, run_key: str) -> RunRecord | None:
        """The record of the last run over these files (None: none, or unreadable)."""
        data = self._read(("runs",), f"{run_key}.json")
        if data is None or not isinstance(data.get("files"), list) or type(data.get("stat_time_ns")) is not int:
            return None
        out = []
        for item in data["files"]:
            if not (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str)
                    and isinstance(item[1], str) and isinstance(item[2], dict)
                    and (item[3] is None or (isinstance(item[3], list) and all(type(n) is int for n in item[3])))
                    and (item[4] is None or isinstance(item[4], str))):
                return None
            out.append(RecordedFile(*item))
        return RunRecord(data["stat_time_ns"], out)

    def store_run(self, run_key: str, record: RunRecord) -> None:
        self._write(("runs",), f"{run_key}.json", {"format": FORMAT, "stat_time_ns": record.stat_time_ns,
                                                   "files": [list(f) for f in record.files]})

    def load_walk(self, key: str) -> dict[str, Any] | None:
        """The last walk of a folder (discover/files.py, `_walk_remembered`), None if there is none."""
        return self._read(("walks",), f"{key}.json")

    def store_walk(self, key: str, walk: dict[str, Any]) -> None:
        self._write(("walks",), f"{key}.json", {"format": FORMAT, **walk})

    def load(self, key: str) -> dict[str, Any] | None:
        return self._read(*self._entry(key))

    def store(self, key: str, entry: dict[str, Any]) -> None:
        self._write(*self._entry(key), {"format": FORMAT, **entry})

    # -- the folders, opened without following links ------------------------------------------------------
    def _open_root(self, create: bool) -> tuple[int, bool]:
        """A handle of the cache folder, and whether this call made it. NotOurs when another user
        owns it."""
        fd, created = self._open_root_as_is(create)
        owner = os.fstat(fd).st_uid
        if owner != os.geteuid():
            os.close(fd)
            raise NotOurs(0, f"owned by another user (uid {owner}), not used")
        return fd, created

    def _open_root_as_is(self, create: bool) -> tuple[int, bool]:
        if self.within is None:
            try:
                return open_folder(self.root), False
            except FileNotFoundError:
                if not create:
                    raise
            os.makedirs(self.root, exist_ok=True)
            return open_folder(self.root), True
        parts = os.path.relpath(self.root, self.within).split(os.sep)
        top = open_folder(self.within)
        try:
            try:
                return walk(top, parts), False
            except FileNotFoundError:
                if not create:
                    raise
            return walk(top, parts, create=True), True
        finally:
            os.close(top)

    def _folder(self, parts: tuple[str, ...], create: bool = False) -> int:
        """A handle of PARTS below this version's and these settings' folder."""
        root, _ = self._open_root(create)
        try:
            return walk(root, (*self._below, *parts), create=create)
        finally:
            os.close(root)

    def _read(self, parts: tuple[str, ...], name: str) -> dict[str, Any] | None:
        """An entry this version wrote (None: missing, unreadable, damaged, or another format).
        Its first line is the HMAC of the rest under the user's key: a flipped byte, or an entry
        another user wrote, is a miss, never a result."""
        key = user_key()
        if key is None:
            return None
        try:
            folder = self._folder(parts)
            try:
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            finally:
                os.close(folder)
            with os.fdopen(fd, "rb") as fh:
                raw = fh.read()
            digest, _, body = raw.partition(b"\n")
            import hmac

            if not hmac.compare_digest(_signature(key, body), digest):
                return None
            data = json.loads(body)
        except (OSError, ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) and data.get("format") == FORMAT else None

    def _write(self, parts: tuple[str, ...], name: str, entry: dict[str, Any]) -> None:
        if self.error is not None:
            return
        from jaxfuse_lint.core.writer import replace_in  # writing is the exception on a warm run

        key = user_key()
        if key is None:
            from jaxfuse_lint.core.private_folder import key_folders

            self.error = (f"{self.root}: cannot use the cache (no private folder for its key: "
                          f"{' or '.join(key_folders())}); continuing without it")
            return
        try:
            # dumps, not dump: dump streams through json's pure-Python encoder (40 ms for the
            # record of flax's run, against 4 ms for the C encoder of dumps).
            body = json.dumps(entry, separators=(",", ":")).encode()
            text = _signature(key, body) + b"\n" + body
            self._prepare()
            folder = self._folder(parts, create=True)
            try:
                replace_in(folder, name, text, durable=False)
            finally:
                os.close(folder)
        except (OSError, TypeError, ValueError) as exc:
            if isinstance(exc, LinkInPath):
                reason = f"{exc.filename} is {exc.strerror}, not followed"
            elif isinstance(exc, NotOurs):
                self.error = f"{self.root}: cannot use the cache ({exc.strerror}); continuing without it"
                return
            else:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error = f"{self.root}: cannot write the cache ({reason}); continuing without it"

    def _prepare(self) -> None:
        if self._prepared:
            return
        root, created = self._open_root(create=True)
        try:
            try:
                version = walk(root, self._below[:1])
                new_version = False
            except FileNotFoundError:
                version = walk(root, self._below[:1], create=True)
                new_version = True
            try:
                if new_version:
                    _create(version, MARKER, _MARKER_TEXT)
                else:
                    os.utime(version)  # "last written by a run": what pruning goes by
            finally:
                os.close(version)
            if new_version:
                _prune_other_versions(root, keep=self._below[0])
            # The tag and the .gitignore go only into a folder this tool made (`cache-dir` may name
            # any folder: a `.gitignore` of `*` there would hide the user's own files from git).
            if created or _read_small(root, "CACHEDIR.TAG") == _TAG_TEXT.encode():
                _create(root, "CACHEDIR.TAG", _TAG_TEXT)
                _create(root, ".gitignore", "# Automatically created by jaxfuse-lint.\n*\n")
        finally:
            os.close(root)
        self._prepared = True


def _prune_other_versions(root: int, keep: str) -> None:
    """A new version of the tool (an upgrade, an edited checkout) starts a new folder: the
    folders of other versions that no run has written to for PRUNE_AFTER_S go, or every
    upgrade would leave a full cache behind. One still in use by another version's runs
    is written to by them (or, if only read, is at worst rebuilt once). Only folders holding
    the MARKER this tool writes into each version folder it creates are ever removed."""
    import shutil

    now = time.time()
    try:
        siblings = list(os.scandir(root))
    except OSError:
        return
    for entry in siblings:
        if entry.name == keep or not (entry.is_dir(follow_symlinks=False) and VERSION_DIR.fullmatch(entry.name)):
            continue
        try:
            folder = walk(root, (entry.name,))
            try:
                ours = stat.S_ISREG(os.stat(MARKER, dir_fd=folder, follow_symlinks=False).st_mode)
                age = now - os.fstat(folder).st_mtime
            finally:
                os.close(folder)
            if ours and age > PRUNE_AFTER_S:
                shutil.rmtree(entry.name, dir_fd=root, ignore_errors=True)
        except OSError:
            continue  # never delete a folder this tool did not create


def _create(folder: int, name: str, text: str) -> None:
    """Create NAME in FOLDER with TEXT, unless something is there already: a file, or a link
    someone put there (never followed)."""
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=folder)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as fh:
        fh.write(text.encode())


def _read_small(folder: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# This file is a cache directory tag created by jaxfuse-lint.\n")
# In every version folder this tool creates: only folders holding it are ever pruned.
MARKER = "JAXFUSE_LINT_CACHE"
_MARKER_TEXT = "A cache folder created by jaxfuse-lint; it removes it when no run used it for a day.\n"
