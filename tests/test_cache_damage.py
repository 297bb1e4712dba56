"""A damaged cache is a miss, never a crash nor a wrong result (issue 27): entries truncated,
bytes flipped, keys renamed, a read-only cache, a cache deleted during the run."""
from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from jaxfuse_lint.run.runner import check_files
from tests.test_cache import files, settings, summary, tree  # noqa: F401


def _entries(tree: Path) -> list[Path]:
    return sorted(p for p in (tree / "cache").rglob("*.json") if "walks" not in p.parts)


def _edit(path: Path, change) -> None:
    """Rewrite an entry's JSON through `change`, with a valid checksum line when it has one (a
    damage that the checksum cannot see: only the schema check can)."""
    import hashlib

    raw = path.read_bytes()
    head, _, body = raw.partition(b"\n")
    checksummed = re.fullmatch(rb"[0-9a-f]{64}", head) is not None
    data = json.loads(body if checksummed else raw)
    new = json.dumps(change(data)).encode()
    path.write_bytes(hashlib.sha256(new).hexdigest().encode() + b"\n" + new if checksummed else new)


def _rename_keys(data):
    if isinstance(data, dict):
        return {(k + "_" if k in ("result", "diagnostics", "code", "location", "row") else k):
                _rename_keys(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_rename_keys(v) for v in data]
    return data


def _flip_digit(path: Path) -> None:
    """Change the row of a cached diagnostic (valid JSON, a different result)."""
    raw = path.read_bytes()
    m = re.search(rb'"location":\{[^}]*"row":(\d)', raw)
    if m:
        digit = b"9" if m.group(1) != b"9" else b"8"
        path.write_bytes(raw[:m.start(1)] + digit + raw[m.end(1):])


DAMAGES = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "flipped": _flip_digit,
    "renamed_keys": lambda p: _edit(p, _rename_keys),
    "wrong_types": lambda p: _edit(p, lambda d: {**d, **{k: [] for k in ("result", "files", "jax") if k in d}}),
    "empty": lambda p: p.write_bytes(b""),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_entry_is_a_miss(tree, damage):  # noqa: F811
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    for entry in _entries(tree):
        DAMAGES[damage](entry)
    warm = check_files(files(tree), s, jobs=1, use_cache=True)
    assert summary(warm) == summary(cold)
    assert warm.errors == []
    # ... and the next run repairs it.
    again = check_files(files(tree), s, jobs=1, use_cache=True)
    assert summary(again) == summary(cold) and again.errors == []


def test_a_read_only_cache_gives_results_and_at_most_one_line(tree):  # noqa: F811
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    (tree / "src" / "bad.py").write_text((tree / "src" / "bad.py").read_text() + "# changed\n")
    modes = {}
    for p in [tree / "cache", *(tree / "cache").rglob("*")]:
        if p.is_dir():
            modes[p] = p.stat().st_mode
            os.chmod(p, 0o555)
    try:
        run = check_files(files(tree), s, jobs=1, use_cache=True)
    finally:
        for p, mode in modes.items():
            os.chmod(p, stat.S_IMODE(mode))
    assert summary(run) == summary(cold)
    assert len(run.errors) <= 1 and all("\n" not in e for e in run.errors)


def test_a_cache_deleted_during_the_run(tree, monkeypatch):  # noqa: F811
    from jaxfuse_lint.run.cache import Cache

    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    (tree / "src" / "bad.py").write_text((tree / "src" / "bad.py").read_text() + "# changed\n")
    real_store = Cache.store

    def store(self, key, entry):
        shutil.rmtree(tree / "cache", ignore_errors=True)
        return real_store(self, key, entry)

    monkeypatch.setattr(Cache, "store", store)
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert summary(run) == summary(cold)
    assert len(run.errors) <= 1 and all("\n" not in e for e in run.errors)
