#!/usr/bin/env python3
"""Score the threads corpus (benchmarks/threads/): problems that maintainers diagnosed in public
issue threads, checked in process with the DEFAULT settings (all default rules, default tier, default
target: `Settings()`), every code scored.

A line marked `# expect: CODE` must be reported with that code on that line (a miss otherwise);
`# expect?: CODE` counts as neither hit nor miss; any other finding -- on a line without `# expect`,
with another code, or anywhere in a trap file (`*_fixed.py`) -- is a false positive.

Usage: PYTHONPATH=. python benchmarks/threads_score.py [CORPUS_DIR] [-v] [--json]
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

EXPECT = re.compile(r"#\s*expect(\?)?:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
CORPUS = Path(__file__).resolve().parent / "threads"


def expectations(text: str, name: str) -> tuple[set, set]:
    """(must, may): {(file, row, code)} from the `# expect:` / `# expect?:` marks of one file."""
    must, may = set(), set()
    for row, line in enumerate(text.splitlines(), 1):
        for m in EXPECT.finditer(line):
            for code in re.split(r"\s*,\s*", m.group(2)):
                (may if m.group(1) else must).add((name, row, code))
    return must, may


def score(corpus: Path = CORPUS) -> dict:
    """{"tp", "fp", "fn": [(file, row, code)], "per_code": {code: Counter}, "files", "traps", "expected"}."""
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import check_source

    settings = Settings()
    must, may, found = set(), set(), set()
    files = traps = 0
    for path in sorted(corpus.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        file_must, file_may = expectations(text, path.name)
        must |= file_must
        may |= file_may
        if path.stem.endswith("_fixed"):
            traps += 1
        else:
            files += 1
        result = check_source(text, str(path), settings)
        if result.errors:
            raise SystemExit(f"{path}: {result.errors}")
        found |= {(path.name, d.location.row, d.code) for d in result.diagnostics}
    tp, fp, fn = found & must, found - must - may, must - found
    per_code: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for name, group in (("tp", tp), ("fp", fp), ("fn", fn)):
        for _, _, code in group:
            per_code[code][name] += 1
    return {"tp": sorted(tp), "fp": sorted(fp), "fn": sorted(fn), "per_code": per_code,
            "files": files, "traps": traps, "expected": len(must), "optional": len(may)}


def summary(out: dict) -> dict:
    tp, fp, fn = len(out["tp"]), len(out["fp"]), len(out["fn"])
    return {
        "problem_files": out["files"], "trap_files": out["traps"],
        "expected": out["expected"], "optional": out["optional"],
        "tp": tp, "fp": fp, "fn": fn,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / (tp + fn) if tp + fn else 1.0,
        "per_code": {code: {k: c[k] for k in ("tp", "fp", "fn")} for code, c in sorted(out["per_code"].items())},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=str(CORPUS))
    ap.add_argument("-v", "--verbose", action="store_true", help="list each miss and false positive")
    ap.add_argument("--json", action="store_true", help="print the figures (and the misses and false positives) as JSON")
    args = ap.parse_args(argv)
    out = score(Path(args.corpus))
    s = summary(out)
    if args.json:
        s["misses"] = [f"{name}:{row} {code}" for name, row, code in out["fn"]]
        s["false_positives"] = [f"{name}:{row} {code}" for name, row, code in out["fp"]]
        print(json.dumps(s, indent=2))
        return 0
    print(f"{s['problem_files']} problem files, {s['trap_files']} traps, "
          f"{s['expected']} expected findings ({s['optional']} optional)")
    for code, c in s["per_code"].items():
        print(f"{code}  tp={c['tp']:3d} fp={c['fp']:3d} fn={c['fn']:3d}")
    print(f"precision {s['precision']:.2f} recall {s['recall']:.2f} (tp={s['tp']} fp={s['fp']} fn={s['fn']})")
    if args.verbose:
        for kind, label in (("fn", "MISS"), ("fp", "FP")):
            for name, row, code in out[kind]:
                print(f"  {label} {name}:{row} {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
