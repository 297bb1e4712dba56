"""The threads corpus (benchmarks/threads/): problems maintainers diagnosed in public issue threads,
scored with the default settings. The floors are the whole corpus's first-look figures rounded down
to 0.05; raise them as the tool improves (issue 40's target is recall >= 0.85)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "benchmarks"
RECALL_FLOOR = 0.85      # 138 expected: 0.89 (123 of 138) with rvalue merged; 0.76 (105) with rstate and rjit (rc4 added 34 at a first-look recall of 0.32)
PRECISION_FLOOR = 0.95   # 0.99 (123 of 124) with rvalue merged, (105 of 106) with rstate and rjit; the first looks of the halves: 0.78, 0.74, 0.92, 0.85
FULL_CORPUS = 100        # expected findings asserted (104 with the rc3 additions)


def _scorer():
    spec = importlib.util.spec_from_file_location("threads_score", ROOT / "threads_score.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def figures() -> dict:
    mod = _scorer()
    return mod.summary(mod.score(ROOT / "threads"))


def test_recall_floor(figures):
    assert figures["recall"] >= RECALL_FLOOR, figures


def test_precision_floor(figures):
    assert figures["precision"] >= PRECISION_FLOOR, figures


def test_corpus_size(figures):
    assert figures["expected"] >= FULL_CORPUS, figures
    assert figures["trap_files"] >= 1
