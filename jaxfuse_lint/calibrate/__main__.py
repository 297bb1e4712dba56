"""`python -m jaxfuse_lint.calibrate`: regenerate the calibration tables (see the package docstring)."""
from __future__ import annotations

import argparse
import sys

from jaxfuse_lint.calibrate.harness import TARGET_KEYS, calibrate
from jaxfuse_lint.calibrate.variants import GENERATORS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m jaxfuse_lint.calibrate", description=__doc__)
    ap.add_argument("--rule", action="append", choices=sorted(GENERATORS),
                    help="a rule to calibrate (repeatable; default: every rule with a generator)")
    ap.add_argument("--target", action="append", choices=TARGET_KEYS,
                    help="a table to make: a bundled GPU model (XLA:GPU, deviceless) or cpu (XLA:CPU, timed); "
                         "repeatable; default: all")
    ap.add_argument("-j", "--workers", type=int, default=1, help="compiling processes (default 1)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per version on XLA:CPU (0: do not time)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N variants (to try a generator)")
    ap.add_argument("-o", "--output-dir", default=None,
                    help="write the tables here instead of jaxfuse_lint/core/calibration_tables/")
    ap.add_argument("--reverdict", action="store_true",
                    help="recompute the verdicts of the committed tables from their figures; compile nothing")
    args = ap.parse_args(argv)
    if args.reverdict:
        import glob
        import os

        from jaxfuse_lint.calibrate.harness import reverdict
        from jaxfuse_lint.core.calibration import TABLES_DIR

        for path in sorted(glob.glob(os.path.join(args.output_dir or TABLES_DIR, "*.json"))):
            print(f"{os.path.basename(path)}: {reverdict(path) or 'unchanged'}", file=sys.stderr)
        return 0
    print("calibrate: imports jax and compiles (and on XLA:CPU runs) generated functions; no user code",
          file=sys.stderr)
    for code in args.rule or sorted(GENERATORS):
        calibrate(code, args.target or TARGET_KEYS, workers=args.workers, repeat=args.repeat, limit=args.limit,
                  directory=args.output_dir, log=lambda line: print(line, file=sys.stderr, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
