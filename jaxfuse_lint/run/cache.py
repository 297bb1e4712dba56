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

Entries are JSON files written atomically, behind a line with the SHA-256 of the JSON; a
missing, unreadable, corrupt (checksum), or malformed (schema: cached_results.entry_is_valid) entry or
record is a miss, and a cache directory that cannot be written is reported once and then left
alone. The folder walks of discovery are remembered here too (`walks/`, see
discover/files.py, `_walk_remembered`; the cache is discovery's `WalkMemo`). JSON was measured against marshal, msgpack and pickle on the cache of flax (353
files): decoding every full entry took 24, 17, 19 and 24 ms. The format matters less than
not reading the summaries at all, so it stays JSON (stdlib, safe on a damaged file).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.fingerprint import source_fingerprint

DEFAULT_DIR = ".jaxfuse_lint_cache"
FORMAT = 3  # 3: a SHA-256 line before each entry's JSON
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


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cache:
    def __init__(self, directory: str | os.PathLike, settings: Settings) -> None:
        self.root = Path(directory)
        settings_key = hashlib.sha256(settings.fingerprint().encode()).hexdigest()[:16]
        self.directory = self.root / tool_fingerprint() / settings_key
        self.error: str | None = None  # the first write failure, reported once by the runner
        self._prepared = False

    @staticmethod
    def key(filename: str, digest: str, module: str | None) -> str:
        return hashlib.sha256(f"{filename}\0{digest}\0{module}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    @staticmethod
    def run_key(filenames: list[str]) -> str:
        return hashlib.sha256("\0".join(filenames).encode()).hexdigest()

    def _run_path(self, run_key: str) -> Path:
        return self.directory / "runs" / f"{run_key}.json"

    def load_run(self, run_key: str) -> RunRecord | None:
        """The record of the last run over these files (None: none, or unreadable)."""
        data = self._read(self._run_path(run_key))
        if data is None or not isinstance(data.get("files"), list) or not isinstance(data.get("stat_time_ns"), int):
            return None
        out = []
        for item in data["files"]:
            if not (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str)
                    and isinstance(item[1], str) and isinstance(item[2], dict)
                    and (item[3] is None or isinstance(item[3], list)) and (item[4] is None or isinstance(item[4], str))):
                return None
            out.append(RecordedFile(*item))
        return RunRecord(data["stat_time_ns"], out)

    def store_run(self, run_key: str, record: RunRecord) -> None:
        self._write(self._run_path(run_key), {"format": FORMAT, "stat_time_ns": record.stat_time_ns,
                                              "files": [list(f) for f in record.files]})

    def _walk_path(self, key: str) -> Path:
        return self.directory / "walks" / f"{key}.json"

    def load_walk(self, key: str) -> dict[str, Any] | None:
        """The last walk of a folder (discover/files.py, `_walk_remembered`), None if there is none."""
        return self._read(self._walk_path(key))

    def store_walk(self, key: str, walk: dict[str, Any]) -> None:
        self._write(self._walk_path(key), {"format": FORMAT, **walk})

    def load(self, key: str) -> dict[str, Any] | None:
        return self._read(self._path(key))

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        """An entry this version wrote (None: missing, unreadable, damaged, or another format).
        Its first line is the SHA-256 of the rest: a flipped byte is a miss, never a result."""
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
            digest, _, body = raw.partition(b"\n")
            if hashlib.sha256(body).hexdigest().encode() != digest:
                return None
            data = json.loads(body)
        except (OSError, ValueError, RecursionError):
            return None
        return data if isinstance(data, dict) and data.get("format") == FORMAT else None

    def store(self, key: str, entry: dict[str, Any]) -> None:
        self._write(self._path(key), {"format": FORMAT, **entry})

    def _prune_other_versions(self) -> None:
        """A new version of the tool (an upgrade, an edited checkout) starts a new folder: the
        folders of other versions that no run has written to for PRUNE_AFTER_S go, or every
        upgrade would leave a full cache behind. One still in use by another version's runs
        is written to by them (or, if only read, is at worst rebuilt once)."""
        import shutil

        now = time.time()
        try:
            siblings = list(os.scandir(self.root))
        except OSError:
            return
        for entry in siblings:
            if not (entry.is_dir(follow_symlinks=False) and VERSION_DIR.fullmatch(entry.name)
                    and os.path.isfile(os.path.join(entry.path, MARKER))):
                continue  # never delete a folder this tool did not create
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > PRUNE_AFTER_S:
                    shutil.rmtree(entry.path, ignore_errors=True)
            except OSError:
                continue

    def _write(self, path: Path, entry: dict[str, Any]) -> None:
        if self.error is not None:
            return
        import tempfile  # writing is the exception on a warm run

        try:
            # dumps, not dump: dump streams through json's pure-Python encoder (40 ms for the
            # record of flax's run, against 4 ms for the C encoder of dumps).
            body = json.dumps(entry, separators=(",", ":")).encode()
            text = hashlib.sha256(body).hexdigest().encode() + b"\n" + body
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(text)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, TypeError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.error = f"{self.root}: cannot write the cache ({reason}); continuing without it"

    def _prepare(self) -> None:
        if self._prepared:
            return
        tag = self.root / "CACHEDIR.TAG"
        created = not self.root.exists()
        self.root.mkdir(parents=True, exist_ok=True)
        version_dir = self.directory.parent
        if version_dir.is_dir():
            os.utime(version_dir)  # "last written by a run": what pruning goes by
        else:
            version_dir.mkdir(exist_ok=True)
            (version_dir / MARKER).write_text(_MARKER_TEXT)
            self._prune_other_versions()
        # The tag and the .gitignore go only into a folder this tool made (`cache-dir` may name
        # any folder: a `.gitignore` of `*` there would hide the user's own files from git).
        if created or _ours(tag):
            if not tag.exists():
                tag.write_text(_TAG_TEXT)
            ignore = self.root / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# Automatically created by jaxfuse-lint.\n*\n")
        self._prepared = True


_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
             "# This file is a cache directory tag created by jaxfuse-lint.\n")
# In every version folder this tool creates: only folders holding it are ever pruned.
MARKER = "JAXFUSE_LINT_CACHE"
_MARKER_TEXT = "A cache folder created by jaxfuse-lint; it removes it when no run used it for a day.\n"


def _ours(tag: Path) -> bool:
    try:
        return tag.read_text(encoding="utf-8", errors="replace") == _TAG_TEXT
    except OSError:
        return False
