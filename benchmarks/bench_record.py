"""What `jaxfuse-lint record` costs: the same workload run plainly and under `record`.

The workload is a small JAX program written to a temporary directory: ENTRIES jitted
functions (a few elementwise operations, a reduction and a helper call each), each
compiled for SHAPES shapes and then called STEPS times per shape. Three timings, best
of --repeat runs each, every run in a fresh process, as CPU time (user + system of the
process tree, which a busy machine disturbs far less than wall-clock time) and wall time:

- plain: `python workload.py`;
- record: `jaxfuse-lint record -- python workload.py` (trace and compile hooks, parameter
  shapes while tracing, per-line cost attribution of every compiled program, the merge);
- record --no-costs: the same without the per-line attribution.

The recorder only acts when JAX traces or compiles, so the overhead is per compilation,
not per step: it is reported per compilation as well as in total.

    python benchmarks/bench_record.py [--entries 20] [--shapes 3] [--steps 50] [--ops 0] [--repeat 3]

`--ops N` adds N operations to each entry point: larger programs, whose per-line attribution
costs more (a library's test programs are often of that size).

Prints a Markdown table. Keep runs short on shared machines (the defaults take ~30 s idle).
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = '''
import jax
import jax.numpy as jnp


def helper(x):
    return jnp.sin(x) * 2.0 + jnp.cos(x)


def make(k):
    def entry(x):
        y = helper(x) * (k + 1.0) + x
        for i in range({ops}):  # --ops: a larger program (more kernels, lines and temporaries)
            y = jnp.cumsum(jnp.sin(y) * (i + 2.0), axis=0) + y[::-1]
        return jnp.sum(y * y, axis=-1) + jnp.max(y, axis=-1)
    entry.__name__ = entry.__qualname__ = f"entry_{{k}}"
    return jax.jit(entry)


fns = [make(k) for k in range({entries})]
for n in range(1, {shapes} + 1):
    x = jnp.ones((256 * n, 8))
    for f in fns:
        for _ in range({steps}):
            f(x).block_until_ready()
'''


def timed(cmd: list[str], cwd: str, repeat: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds), each the best of `repeat` runs."""
    best_cpu = best_wall = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu")))
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
    return best_cpu, best_wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=20)
    parser.add_argument("--shapes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ops", type=int, default=0, help="extra operations per entry point (larger programs)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_record_") as work:
        Path(work, "workload.py").write_text(WORKLOAD.format(entries=args.entries, shapes=args.shapes,
                                                             steps=args.steps, ops=args.ops))
        python = [sys.executable, "workload.py"]
        tool = [sys.executable, "-m", "jaxfuse_lint", "record", "-o", "profile.json"]
        plain = timed(python, work, args.repeat)
        full = timed([*tool, "--", *python], work, args.repeat)
        size = Path(work, "profile.json").stat().st_size
        no_costs = timed([*tool, "--no-costs", "--", *python], work, args.repeat)
        size_no_costs = Path(work, "profile.json").stat().st_size
    compilations = args.entries * args.shapes
    import jax

    print(f"jax {jax.__version__}, {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"{args.entries} entry points x {args.shapes} shapes = {compilations} compilations"
          f"{f' of {args.ops} extra operations' if args.ops else ''}, "
          f"{args.steps} steps each (best of {args.repeat})\n")
    print("| run | CPU time | overhead | per compilation | wall time |")
    print("|---|---|---|---|---|")
    print(f"| plain | {plain[0]:.2f} s | | | {plain[1]:.2f} s |")
    for name, (cpu, wall) in (("record", full), ("record --no-costs", no_costs)):
        extra = cpu - plain[0]
        print(f"| {name} | {cpu:.2f} s | +{extra:.2f} s ({100 * extra / plain[0]:.0f}%) | "
              f"{1000 * extra / compilations:.1f} ms | {wall:.2f} s |")
    print(f"\nprofile: {size / 1024:.0f} KiB ({size_no_costs / 1024:.0f} KiB with --no-costs)")


if __name__ == "__main__":
    main()
