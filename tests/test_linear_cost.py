"""Checking a file, fixes included, costs in proportion to the file (issue 37, items 7 and 9:
check_source took 68 s on 0.3 MB and 228 s on 0.6 MB; 760 fixes took 9 s). Every question about
one name, one function or one class used to look at every read, call or class of the module,
and each finding's position was found by scanning the whole text.

The cost is counted, not timed: Python function calls under cProfile, which do not depend on
the machine or its load. A module of every 8th fixture (every rule and codemod has some) grown
from 2 to 4 copies must cost about twice as much; the quadratic version cost 2.4 times as much.
The times themselves are benchmarks/bench_fix_scaling.py's."""
from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_fix_scaling import every_fixture, grown  # noqa: E402


def calls(text: str) -> int:
    profile = cProfile.Profile()
    profile.enable()
    result = check_source(text, "grown.py", Settings())
    profile.disable()
    assert sum(d.fix is not None for d in result.diagnostics) >= 10  # fixes are part of the cost
    return pstats.Stats(profile).total_calls


def test_checking_twice_the_code_costs_twice_as_much():
    source = every_fixture(8)
    check_source(grown(source, 1), "grown.py", Settings())  # first-use costs (imports, tables) out of the way
    two, four = calls(grown(source, 2)), calls(grown(source, 4))
    assert four / two < 2.15, (two, four)
