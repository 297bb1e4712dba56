"""The record of a run (cache.py): a run over the same, unchanged files replays it without
reading any file's entry, nor the text of a file that stat says is unchanged; any change, a
different list of files, or a damaged or old record falls back to the per-file entries with the
same results."""
from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from jaxfuse_lint.run.cache import Cache
from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.run.runner import check_files
from tests.test_cache import BAD, files, settings, summary, tree  # noqa: F401  (tree is a fixture)



def read_record(path):
    """A cache file's JSON (its first line is the SHA-256 of the rest)."""
    return json.loads(path.read_bytes().partition(b"\n")[2])


def write_record(path, data) -> None:
    """Write a cache file as the cache does: its checksum line, then the JSON."""
    import hashlib

    body = json.dumps(data, separators=(",", ":")).encode()
    path.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)

def records(tree: Path) -> list[Path]:
    return sorted((tree / "cache").rglob("runs/*.json"))


def entries(tree: Path) -> list[Path]:
    return sorted(p for p in (tree / "cache").rglob("*.json") if p.parent.name != "runs")


def test_an_unchanged_run_is_replayed_from_one_record(tree):
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    assert len(records(tree)) == 1
    for entry in entries(tree):  # not read: the record alone answers
        entry.unlink()
    warm = check_files(files(tree), s, jobs=1, use_cache=True)
    assert warm.stats["cached"] == len(files(tree)) and warm.stats["analysed"] == 0
    assert warm.diagnostics == cold.diagnostics
    assert warm.sources == cold.sources
    assert warm.errors == cold.errors == []


def test_a_changed_file_or_file_list_is_not_replayed(tree):
    s = settings(tree)
    check_files(files(tree), s, jobs=1, use_cache=True)
    bad = tree / "src" / "bad.py"
    bad.write_text(BAD.replace("np.ones(3)", "np.zeros(3)"))
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert run.stats["analysed"] == 1
    assert any("np.zeros" in d.message for d in run.diagnostics)
    assert summary(run) == summary(check_files(files(tree), replace(Settings(), extra=(RAW,)), jobs=1))
    # A subset of the files is another run, with its own record.
    subset = [p for p in files(tree) if p.name != "clean.py"]
    part = check_files(subset, s, jobs=1, use_cache=True)
    assert part.stats["analysed"] == 0
    assert summary(part) == summary(run)
    assert len(records(tree)) == 2


@pytest.mark.parametrize("damage", [
    "{not json",
    "[]",
    json.dumps({"format": 0, "files": []}),
    json.dumps({"format": 1, "files": [["x.py", "k", {}]]}),
    json.dumps({"format": 1}),
])
def test_a_damaged_or_old_record_is_a_miss(tree, damage):
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    [record] = records(tree)
    record.write_text(damage)
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert run.diagnostics == cold.diagnostics and run.errors == []
    assert run.stats["analysed"] == 0  # the per-file entries still answer


def test_a_record_with_the_right_keys_but_a_broken_result_is_a_miss(tree):
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    [record] = records(tree)
    data = read_record(record)
    data["files"][0][2] = {"diagnostics": [{"no": "fields"}]}
    write_record(record, data)  # sealed again: a valid checksum, a broken result
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert run.diagnostics == cold.diagnostics and run.errors == []


def test_run_keys_follow_the_list_of_files():
    assert Cache.run_key(["a.py", "b.py"]) != Cache.run_key(["a.py"])
    assert Cache.run_key(["a.py", "b.py"]) != Cache.run_key(["a.pyb.py"])


# -- files unchanged since the record are not read again ------------------------------------------

def count_reads(monkeypatch) -> list[str]:
    import jaxfuse_lint.run.run_state as run_state

    reads: list[str] = []
    real = run_state.read_identified_source

    def reading(path, *args):
        reads.append(str(path))
        return real(path, *args)

    monkeypatch.setattr(run_state, "read_identified_source", reading)  # the one read of a file in a run
    return reads


def test_files_unchanged_well_before_the_record_are_not_read(tree, monkeypatch):
    # No racy window: every file was written before the first run took its signature.
    monkeypatch.setattr("jaxfuse_lint.core.stat_signature.RACY_NS", 0)
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    reads = count_reads(monkeypatch)
    warm = check_files(files(tree), s, jobs=1, use_cache=True)
    # Only the text of files with findings is read, for the report to show their lines.
    assert sorted(reads) == sorted({d.filename for d in cold.diagnostics})
    assert len(reads) < len(files(tree))
    assert warm.stats["analysed"] == 0 and summary(warm) == summary(cold)


def test_files_changed_just_before_the_record_are_hashed(tree, monkeypatch):
    # The default window: the files were written within it, so their times prove nothing.
    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    reads = count_reads(monkeypatch)
    warm = check_files(files(tree), s, jobs=1, use_cache=True)
    assert set(reads) == {str(p) for p in files(tree)}
    assert warm.stats["analysed"] == 0 and summary(warm) == summary(cold)


def test_an_edit_that_keeps_the_size_and_restores_the_mtime_is_seen(tree, monkeypatch):
    monkeypatch.setattr("jaxfuse_lint.core.stat_signature.RACY_NS", 0)
    s = settings(tree)
    check_files(files(tree), s, jobs=1, use_cache=True)
    bad = tree / "src" / "bad.py"
    before = bad.stat()
    bad.write_text(BAD.replace("np.ones(3)", "np.full(3)"))  # as many bytes
    os.utime(bad, ns=(before.st_atime_ns, before.st_mtime_ns))  # the change time still moves
    assert bad.stat().st_size == before.st_size and bad.stat().st_mtime_ns == before.st_mtime_ns
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert run.stats["analysed"] == 1
    assert any("np.full" in d.message for d in run.diagnostics)


def test_a_file_moved_into_place_is_seen(tree, monkeypatch):
    monkeypatch.setattr("jaxfuse_lint.core.stat_signature.RACY_NS", 0)
    s = settings(tree)
    check_files(files(tree), s, jobs=1, use_cache=True)
    bad = tree / "src" / "bad.py"
    before = bad.stat()
    other = tree / "bad.new"
    other.write_text(BAD.replace("np.ones(3)", "np.full(3)"))
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, bad)  # an editor's save: another inode, the same size and mtime
    run = check_files(files(tree), s, jobs=1, use_cache=True)
    assert any("np.full" in d.message for d in run.diagnostics)


def test_trusted_signature():
    from jaxfuse_lint.core.stat_signature import RACY_NS, trusted_signature

    old = [10, 1_000, 1_000, 5, 1]
    later = 1_000 + RACY_NS + 1
    assert trusted_signature(old, list(old), later)
    assert not trusted_signature(old, list(old), 1_000 + RACY_NS)  # changed within the window
    assert not trusted_signature(old, [10, 1_000, 1_001, 5, 1], later)
    assert not trusted_signature(None, None, later)
    assert not trusted_signature(old, None, later)


def test_a_replay_that_had_to_hash_writes_the_record_again(tree, monkeypatch):
    """Files hashed because they had changed just before the recorded run: once the replay has
    vouched for them by content, their signatures are recorded again, and the next run trusts
    them (without this, a fresh checkout would be hashed on every run)."""
    import time

    s = settings(tree)
    cold = check_files(files(tree), s, jobs=1, use_cache=True)
    [record] = records(tree)
    first = read_record(record)["stat_time_ns"]
    time.sleep(0.5)
    check_files(files(tree), s, jobs=1, use_cache=True)  # within the window: hashes, then re-records
    second = read_record(record)["stat_time_ns"]
    assert second > first
    # A window the first record's times fall in, but the second's do not.
    monkeypatch.setattr("jaxfuse_lint.core.stat_signature.RACY_NS", 300_000_000)
    reads = count_reads(monkeypatch)
    warm = check_files(files(tree), s, jobs=1, use_cache=True)
    assert sorted(reads) == sorted({d.filename for d in cold.diagnostics})
    assert summary(warm) == summary(cold)
