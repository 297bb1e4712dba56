"""The profile format (jaxfuse_lint/core/profile.py): loading, validation, merging, staleness."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jaxfuse_lint.core.profile import (
    FORMAT,
    ProfileError,
    load_profile,
    merge,
    signature_text,
    spec,
    text_digest,
    write_profile,
)
from tests.conftest import ROOT

TEXT = "import jax\n\n@jax.jit\ndef f(x):\n    return x\n"


def _part(pid: int, shape: list[int], kind: str) -> dict:
    sig = {"args": [{"name": "x", "shape": shape, "dtype": "float32", "weak_type": False}],
           "pytree": "PyTreeDef(((*,), {}))", "static": {}, "backend": "cpu", "where": "t.py::test"}
    digest = text_digest(TEXT)
    return {
        "format": FORMAT, "version": 1, "processes": [{"pid": pid}],
        "entries": [{"id": f"{digest}:f:3", "file": "m.py", "sha256": digest, "qualname": "f", "line": 3,
                     "signatures": [sig], "compilations": [{"signature": 0, "pid": pid, "kind": kind}],
                     "constants": []}],
        "functions": [{"file": "m.py", "sha256": digest, "qualname": "f", "line": 3, "entry": f"{digest}:f:3",
                       "transforms": [], "chain": ["f"]}],
        "lines": [{"file": "m.py", "sha256": digest, "line": 5, "entry": f"{digest}:f:3", "temp_bytes": 10 * pid,
                   "constant_bytes": 0, "kernels": 1, "copies": 0}],
    }


def test_merge_joins_entries_and_remaps_signatures():
    merged = merge([_part(1, [4], "first"), _part(2, [8], "first"), _part(3, [4], "first")])
    (entry,) = merged["entries"]
    assert [s["args"][0]["shape"] for s in entry["signatures"]] == [[4], [8]]
    assert [(c["pid"], c["signature"]) for c in entry["compilations"]] == [(1, 0), (2, 1), (3, 0)]
    assert len(merged["functions"]) == 1
    assert merged["lines"][0]["temp_bytes"] == 30  # the largest measurement of the line
    assert len(merged["processes"]) == 3


def test_facts_are_keyed_by_the_text(tmp_path):
    path = tmp_path / "p.json"
    write_profile(path, merge([_part(1, [4], "first")]))
    profile = load_profile(path)
    facts = profile.for_text(TEXT)
    assert facts is not None and [e["qualname"] for e in facts.entries] == ["f"]
    assert profile.for_text(TEXT + "# edited\n") is None
    (tmp_path / "m.py").write_text(TEXT + "# edited\n")
    assert profile.stale_files(tmp_path) == ["m.py"]


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON"),
    ('{"format": "other"}', "not a jaxfuse-lint profile"),
    (json.dumps({"format": FORMAT, "version": 99}), "profile version 99 is newer"),
    (json.dumps({"format": FORMAT, "version": 1, "entries": {}}), "`entries` must be a list"),
])
def test_bad_profiles_are_one_line_errors(tmp_path, content, message):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(ProfileError, match=message):
        load_profile(path)
    proc = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--profile", str(path), str(tmp_path)],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and message in proc.stderr


def test_missing_profile_is_a_usage_error(tmp_path):
    with pytest.raises(ProfileError, match="profile not found"):
        load_profile(tmp_path / "nope.json")


def test_signature_text():
    sig = {"args": [{"name": "x", "shape": [4096, 3], "dtype": "float32"},
                    {"name": "s", "shape": [], "dtype": "int32", "weak_type": True}], "static": {"n": "3"}}
    assert signature_text(sig) == "x: f32[4096,3], s: ~i32[], n=3"
    assert spec({"shape": [2], "dtype": "bfloat16"}) == "bf16[2]"
