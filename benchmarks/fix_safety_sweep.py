"""A larger run of the adversarial fix-safety suite (tests/test_fix_safety.py runs the same
generators with a small, fixed example count in CI).

    python benchmarks/fix_safety_sweep.py --examples 2000            # every rule, x64 off
    python benchmarks/fix_safety_sweep.py --rules JF101 --examples 5000 --seed 7
    JAX_ENABLE_X64=1 python benchmarks/fix_safety_sweep.py --x64     # the same under x64

Prints, per rule, how many cases were generated, flagged, fixed safely and unsafely, and every
distinct problem (a safe fix that changed an error, shape, dtype, weak type or value; an unsafe
fix that changed something its rule does not document), with the source that shows it. Exit
status 1 when there is a problem. This executes generated code with jax (never user code).
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RULES = ("JF101", "JF201", "JF102", "JF103", "JF203", "JF301", "JF405")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="cases per rule (default 500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", default=",".join(RULES), help=f"comma-separated, of {', '.join(RULES)}")
    parser.add_argument("--x64", action="store_true", help="run with jax_enable_x64 (sets JAX_ENABLE_X64=1)")
    args = parser.parse_args(argv)
    if args.x64:
        os.environ["JAX_ENABLE_X64"] = "1"
    os.environ.setdefault("JAX_PLATFORMS", "cpu")

    from hypothesis import HealthCheck, given, seed, settings

    import tests.fix_safety as fs

    failed = False
    for code in [c.strip().upper() for c in args.rules.split(",") if c.strip()]:
        name = code.lower()
        gen, allowed = getattr(fs, f"{name}_cases"), getattr(fs, f"{name}_allowed")
        stats: collections.Counter = collections.Counter()
        problems: dict[str, tuple[str, str]] = {}

        @seed(args.seed)
        @settings(max_examples=args.examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(gen())
        def run(case):
            checked = fs.check_case(case, allowed)
            stats["cases"] += 1
            stats["flagged"] += checked.flagged
            stats["safe fixes"] += checked.safe_fixed
            stats["unsafe fixes"] += checked.unsafe_fixed
            for p in checked.problems:
                key = p.split(":", 1)[0] + " / " + case.note.split(" dims")[0][:60]
                problems.setdefault(key, (case.source, p))

        start = time.perf_counter()
        run()
        elapsed = time.perf_counter() - start
        print(f"{code}: {dict(stats)} in {elapsed:.1f} s" + (" (x64)" if args.x64 else ""))
        for key, (source, problem) in problems.items():
            failed = True
            print(f"  PROBLEM {key}\n{source}\n{problem}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
