#!/usr/bin/env python3
"""Score the recall corpus (benchmarks/recall/) in process: `# expect: CODE` lines must be reported,
every other finding of the scored codes is a false positive (the acceptance corpus's format).

Usage: PYTHONPATH=. python benchmarks/recall_score.py [CORPUS_DIR] [--codes JF4] [-v]
"""
from __future__ import annotations

import argparse
import collections
import re
import sys
from dataclasses import replace
from pathlib import Path

EXPECT = re.compile(r"#\s*expect(\?)?:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
CORPUS = Path(__file__).resolve().parent / "recall"


def score(corpus: Path = CORPUS, codes: tuple[str, ...] = ("JF4",)) -> dict:
    """{"tp", "fp", "fn": [(file, row, code)], "per_code": {code: Counter}}."""
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import check_source

    settings = replace(Settings(), select=codes)
    must, may, found = set(), set(), set()
    for path in sorted(corpus.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for row, line in enumerate(text.splitlines(), 1):
            for m in EXPECT.finditer(line):
                for code in re.split(r"\s*,\s*", m.group(2)):
                    if code.startswith(codes):
                        (may if m.group(1) else must).add((path.name, row, code))
        result = check_source(text, str(path), settings)
        if result.errors:
            raise SystemExit(f"{path}: {result.errors}")
        found |= {(path.name, d.location.row, d.code) for d in result.diagnostics if d.code.startswith(codes)}
    tp, fp, fn = found & must, found - must - may, must - found
    per_code: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for name, group in (("tp", tp), ("fp", fp), ("fn", fn)):
        for _, _, code in group:
            per_code[code][name] += 1
    return {"tp": sorted(tp), "fp": sorted(fp), "fn": sorted(fn), "per_code": per_code}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(CORPUS))
    ap.add_argument("--codes", default="JF4", help="comma-separated code prefixes to score")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    out = score(Path(args.corpus), tuple(c.strip() for c in args.codes.split(",") if c.strip()))
    for code, c in sorted(out["per_code"].items()):
        print(f"{code}  tp={c['tp']:3d} fp={c['fp']:3d} fn={c['fn']:3d}")
    tp, fp, fn = len(out["tp"]), len(out["fp"]), len(out["fn"])
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"precision {precision:.2f} recall {recall:.2f} (tp={tp} fp={fp} fn={fn})")
    if args.verbose:
        for kind in ("fp", "fn"):
            for name, row, code in out[kind]:
                print(f"  {kind.upper()} {name}:{row} {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
