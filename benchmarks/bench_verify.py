"""The verifier's own overhead on the proof fixtures, next to a plain compile of the same code.

For each proof: `plain` is what compiling both versions costs anyway (trace +
lower + XLA compile of `jax.jit(f)` for the original and for the fixed
version, fresh function objects each time so no cache helps); `fix` is the
engine's parse + fix of the file; `verify` is a whole `verify_pair` (loading
both versions as modules, both compiles, HLO parsing, running both on random
inputs, comparing). Overhead = fix + verify - plain. Median of --repeat runs.

    python benchmarks/bench_verify.py [--repeat 5] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JAX_PLATFORMS", "cpu")

PROOFS = ROOT / "fixtures" / "proofs"

# (file, function, argument specs, static arguments, --call)
CASES = [
    ("sum_reduction.py", "f_sum_jax", ["f32[131072,2]"], {}, False),
    ("sum_reduction.py", "f_sum_jax_width_asserted", ["f32[131072,2]"], {}, False),
    ("short_loop.py", "f_for", ["f32[131072,2]"], {}, False),
    ("numpy_constant.py", "f_numpy", ["f32[131072,2]"], {}, False),
    ("kmesh_filter.py", "f_filter_with_temp", ["f32[64,64,64]"], {}, False),
    ("inner_jit.py", "g_inner_jitted_lambda", ["f32[8]"], {"n": 5}, True),
]


def plain_compile_seconds(source: str, filename: str, func: str, specs, static) -> float | None:
    """trace + lower + compile of jax.jit(func), from a freshly loaded module."""
    import jax

    from jaxfuse_lint.verify.loader import get_function, load_module
    from jaxfuse_lint.verify.shapes import parse_arg_spec

    fn = get_function(load_module(source, filename), func, filename)
    structs = [parse_arg_spec(s).to_shape_dtype_struct() for s in specs]
    t0 = time.perf_counter()
    try:
        jax.jit(fn, static_argnames=tuple(static)).lower(*structs, **static).compile()
    except Exception:  # a driver that cannot be jitted whole (JF301) has no plain compile
        return None
    return time.perf_counter() - t0


def fixed_source(file: str, source: str) -> tuple[str, float, str]:
    """The fixed text, the seconds the engine took, and where the text came from."""
    try:
        from jaxfuse_lint.core.config import load_settings
        from jaxfuse_lint.engine.pipeline import fix_source

        settings = load_settings(None, start=str(PROOFS / file))
        t0 = time.perf_counter()
        outcome = fix_source(source, str(PROOFS / file), settings)
        seconds = time.perf_counter() - t0
        if outcome.source != source:
            return outcome.source, seconds, "engine"
    except ImportError:
        seconds = 0.0
    # No engine fix (yet) for this rule: the hand-written fixed version stands in.
    return (PROOFS / file.replace(".py", "_fixed.py")).read_text(), seconds, "fixture"


def bench(repeat: int) -> list[dict]:
    import jax

    from jaxfuse_lint.verify import verify_pair

    # One throwaway compile so the first case does not pay the backend's start-up.
    jax.jit(lambda v: v + 1).lower(jax.ShapeDtypeStruct((4,), jax.numpy.float32)).compile()
    rows = []
    for file, func, specs, static, call in CASES:
        source = (PROOFS / file).read_text()
        filename = str(PROOFS / file)
        plain, fix, total = [], [], []
        origin = "?"
        verdict = summary = None
        for _ in range(repeat):
            after, fix_seconds, origin = fixed_source(file, source)
            b = plain_compile_seconds(source, filename, func, specs, static)
            a = plain_compile_seconds(after, filename + " (fixed)", func, specs, static)
            plain.append((b or 0.0) + (a or 0.0))
            fix.append(fix_seconds)
            t0 = time.perf_counter()
            result = verify_pair(source, after, func, specs, static, filename=filename, call=call)
            total.append(time.perf_counter() - t0)
            verdict, summary = result.verdict, result.summary()
        med_plain, med_fix, med_verify = (statistics.median(x) for x in (plain, fix, total))
        rows.append({
            "case": f"{file}::{func}",
            "fixed_by": origin,
            "plain_compile_s": round(med_plain, 4),
            "fix_s": round(med_fix, 4),
            "verify_s": round(med_verify, 4),
            "overhead_s": round(med_fix + med_verify - med_plain, 4),
            "verdict": verdict,
            "summary": summary,
        })
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = bench(args.repeat)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    import jax
    import jaxlib

    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, backend {jax.default_backend()}, "
          f"{os.cpu_count()} CPUs, median of {args.repeat}")
    header = f"{'case':52s} {'plain':>8s} {'fix':>7s} {'verify':>8s} {'overhead':>9s}  verdict"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['case']:52s} {r['plain_compile_s']:7.3f}s {r['fix_s']:6.3f}s {r['verify_s']:7.3f}s "
              f"{r['overhead_s']:8.3f}s  {r['verdict']} ({r['summary']}; fixed by {r['fixed_by']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
