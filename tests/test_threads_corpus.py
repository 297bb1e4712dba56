"""The threads corpus (benchmarks/threads/): problems maintainers diagnosed in public issue threads,
scored with the default settings. The floors are the first-look figures rounded down to 0.05; raise
them as the tool improves (issue 40's target is recall >= 0.85)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "benchmarks"
RECALL_FLOOR = 0.50      # first look: 0.54 (14 of 26), jax_ files only
PRECISION_FLOOR = 0.70   # first look: 0.78 (14 of 18) on jax_ files; 0.74 (17 of 23) with rc2's library cases merged
FULL_CORPUS = 100        # expected findings once both halves (jax_ and library/XLA threads) are in


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
    if figures["expected"] < FULL_CORPUS:
        pytest.skip(f"only {figures['expected']} expected findings: the corpus's other half "
                    f"(library and XLA threads) is not merged yet; {FULL_CORPUS} are asserted once it is")
    assert figures["expected"] >= FULL_CORPUS
    assert figures["trap_files"] >= 1
