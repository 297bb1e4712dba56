"""What `explain` costs on top of compiling: the per-line account of the proof fixtures.

For each case: `plain` is trace + lower + XLA compile of `jax.jit(f)` (a fresh
function object each time, so no cache helps); `compile+ba` the same compile
asked to dump XLA's buffer assignment (what explain needs for per-buffer
temporaries); `attribute` parsing the optimized HLO and the assignment into
the per-line account; `explain` the whole `explain_function` (module loading
excluded). Median of --repeat runs.

    python benchmarks/bench_explain.py [--repeat 5] [--json]
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

CASES = [
    ("sum_reduction.py", "f_sum_jax", ["f32[131072,2]"]),
    ("short_loop.py", "f_for", ["f32[131072,2]"]),
    ("numpy_constant.py", "f_numpy", ["f32[131072,2]"]),
    ("kmesh_filter.py", "f_filter_with_temp", ["f32[64,64,64]"]),
]


def _load(file: str, func: str):
    from jaxfuse_lint.verify.loader import get_function, load_module, read_source

    path = str(PROOFS / file)
    return get_function(load_module(read_source(path), path), func, path)


def measure_case(file: str, func: str, specs: list[str]) -> dict[str, float]:
    import jax

    from jaxfuse_lint.verify.attribution import attribute_compiled, compile_with_buffer_assignment
    from jaxfuse_lint.runtime.explain import explain_function
    from jaxfuse_lint.verify.shapes import parse_arg_spec

    parsed = [parse_arg_spec(s) for s in specs]
    structs = [s.to_shape_dtype_struct() for s in parsed]

    t0 = time.perf_counter()
    jax.jit(_load(file, func)).lower(*structs).compile()
    plain = time.perf_counter() - t0

    lowered = jax.jit(_load(file, func)).lower(*structs)
    t0 = time.perf_counter()
    compiled, assignment = compile_with_buffer_assignment(lowered)
    compile_ba = time.perf_counter() - t0
    t0 = time.perf_counter()
    attribute_compiled(lowered, compiled, buffer_assignment=assignment)
    attribute = time.perf_counter() - t0

    fn = _load(file, func)
    t0 = time.perf_counter()
    explain_function(fn, parsed, {}, target=f"{file}::{func}")
    whole = time.perf_counter() - t0
    return {"plain": plain, "compile+ba": compile_ba, "attribute": attribute, "explain": whole}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import jax

    from jaxfuse_lint.verify.measure import _warm_up

    _warm_up(None)
    rows = []
    for file, func, specs in CASES:
        runs = [measure_case(file, func, specs) for _ in range(args.repeat)]
        rows.append({"case": f"{file}::{func}",
                     **{k: statistics.median(r[k] for r in runs) for k in runs[0]}})
    if args.json:
        print(json.dumps({"jax": jax.__version__, "repeat": args.repeat, "rows": rows}, indent=2))
        return
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, {os.cpu_count()} CPUs, median of {args.repeat}")
    print(f"{'case':<40} {'plain':>8} {'compile+ba':>11} {'attribute':>10} {'explain':>8}")
    print("-" * 81)
    for r in rows:
        print(f"{r['case']:<40} {r['plain']:>7.3f}s {r['compile+ba']:>10.3f}s {r['attribute']:>9.3f}s "
              f"{r['explain']:>7.3f}s")


if __name__ == "__main__":
    main()
