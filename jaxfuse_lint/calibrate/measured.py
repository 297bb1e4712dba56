"""`python -m jaxfuse_lint.calibrate.measured TIMINGS.md`: a real GPU's timings as a measurement table.

The compile tables cannot say whether a fix that saves one kernel launch and nothing else makes the
program faster (their "launch" verdict). Where a GPU was at hand, the pairs were timed; this module
reads those timings (the format of `shared/gpu/h200-turn4.md`: one line per pair, `N=` rows, `n=` the
small axis, the form, kernels `k`, temporaries `t` and the median time before and after the fix) and
writes `core/calibration_tables/<CODE>.<device>.json`, keyed by the same features as the rule's
compile tables, each pair with the verdict `core/calibration.measured_verdicts` gives it. `decide`
reads it through `core/calibration.table_for`.

Only JF101's small-axis reductions are keyed: the file's loop captures (JF203: `unrolled`, `reused`,
`looped`) do not say the trip count, the use or whether the value is a grid, so no compile-table row
is theirs; they are left out (their rewrites save temporaries, which the compile tables already count,
and none ran faster or slower beyond the noise).
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from jaxfuse_lint.calibrate.jf101 import FEATURES as JF101_FEATURES
from jaxfuse_lint.core.calibration import Figures, Row, Table, measured_verdicts, table_path

# The file's forms, as JF101's features: (reduction, producer, consumer[, size]). The generic forms
# are over f32[N, n] (`sum(x)` is `jnp.sum(x, axis=-1)`; `d = x - 1`); the named ones fix their size.
FORMS: dict[str, tuple] = {
    "sum(x)": ("sum", "arg", "returned"),
    "sum(x)*2+1": ("sum", "arg", "epilogue"),
    "c*sum(x*x)-1": ("sum", "elementwise", "epilogue"),
    "x*sum(x*x,keep)": ("sum", "elementwise", "broadcast_back"),
    "2x+sum(x,keep)": ("sum", "arg", "broadcast_back"),
    "sqrt(sum(d*d))": ("sum", "elementwise", "epilogue"),
    "sum(sum(x*x))": ("sum", "elementwise", "reduction"),
    "max(x)": ("max", "arg", "returned"),
    "stack_keep": ("sum", "stack", "broadcast_back", 3),
    "row_epi2": ("sum", "arg", "epilogue", 2),
    "energy2": ("sum", "elementwise", "epilogue", 2),
    "energy3": ("sum", "elementwise", "epilogue", 3),
    "speed3": ("sum", "elementwise", "epilogue", 3),
    "dist2": ("sum", "elementwise", "epilogue", 2),
    "scaled4": ("sum", "elementwise", "broadcast_back", 4),
    "plain3": ("sum", "arg", "returned", 3),
    "max3": ("max", "arg", "returned", 3),
}
# How the named forms are written (the file's definitions), for the rule page.
NAMED = {
    "stack_keep": "v * jnp.sum(v * v, axis=-1, keepdims=True), v = jnp.stack([...3 columns], -1)",
    "row_epi2": "x.sum(-1) * 2.0 + 1.0",
    "energy2": "-0.5 * jnp.sum(x * x, axis=-1) - 1.0",
    "energy3": "-0.5 * jnp.sum(x * x, axis=-1) - 1.0",
    "speed3": "jnp.sqrt(jnp.sum(v * v, axis=-1))",
    "dist2": "jnp.sqrt(jnp.sum((x - 1.0) ** 2, axis=-1))",
    "scaled4": "x * jnp.sum(x * x, axis=-1, keepdims=True)",
    "plain3": "jnp.sum(x, axis=-1)",
    "max3": "jnp.max(x, axis=-1)",
}
_GENERIC = re.compile(r"^N=\s*(\d+)\s+n=(\d+)\s+(\S+)\s+before k=(\d+) t=\s*(\d+)\s+([\d.]+)us \| "
                      r"after k=(\d+) t=\s*(\d+)\s+([\d.]+)us")
_NAMED = re.compile(r"^(\w+)\s+N=\s*(\d+): before k=(\d+) t=\s*(\d+)\s+([\d.]+)us \| after k=(\d+) t=\s*(\d+)\s+([\d.]+)us")
_HEADER = re.compile(r"^# .*?:\s*(NVIDIA [^,]+),\s*jax ([\d.]+)\s*\(measured ([\d-]+)\)")
_NOISE = re.compile(r"within about ±(\d+)%")


def read(text: str, source: str) -> Table:
    """The JF101 measurement table of one timings file."""
    header = next((m for m in map(_HEADER.match, text.splitlines()) if m), None)
    if header is None:
        raise ValueError(f"{source}: no '# ...: NVIDIA <GPU>, jax <version> (measured <date>)' header")
    gpu, jax_version, date = header.groups()
    noise_found = _NOISE.search(text.replace("\n", " "))
    noise = int(noise_found.group(1)) / 100 if noise_found else 0.2
    rows: list[Row] = []
    for line in text.splitlines():
        line = line.strip()
        if (m := _GENERIC.match(line)) is not None:
            n_rows, size, form, kb, tb, sb, ka, ta, sa = m.groups()
            label, spec = form, FORMS.get(form)
        elif (m := _NAMED.match(line)) is not None:
            form, n_rows, kb, tb, sb, ka, ta, sa = m.groups()
            spec = FORMS.get(form)
            size = spec[3] if spec is not None and len(spec) > 3 else None
            label = f"{form}: {NAMED[form]}" if form in NAMED else form
        else:
            continue
        if spec is None or size is None:
            continue  # not a JF101 form (the loop captures)
        features = {"reduction": spec[0], "producer": spec[1], "consumer": spec[2], "size": int(size),
                    "rows": int(n_rows), "dtype": "float32", "loop": "none"}
        before = Figures(int(kb), int(kb), int(tb), 0, float(sb) * 1e-6)
        after = Figures(int(ka), int(ka), int(ta), 0, float(sa) * 1e-6)
        rows.append(Row(features, before, after, "", None, f"f32[{n_rows},{size}]", label))
    verdicts = measured_verdicts(rows, noise, group_by=("rows",), code="JF101")
    rows = [Row(r.features, r.before, r.after, v, None, r.args, r.form) for r, v in zip(rows, verdicts)]
    features = {name: tuple(v for v in values if any(r.features[name] == v for r in rows))
                for name, values in JF101_FEATURES.items()}
    device = f"{gpu} (measured {date}, jax {jax_version})"
    shown = source[source.index("shared/"):] if "shared/" in source else os.path.basename(source)
    meta = {"compiler": "XLA:GPU", "device": device, "deviceless": False, "jax": jax_version, "date": date,
            "measured": True, "noise": noise, "group_by": ["rows"], "source": shown,
            "about": (f"Timed on a real {gpu} with jax {jax_version}: the median of 100 runs after 3 warm-ups, "
                      f"before and after the explicit-terms fix, each pair once."),
            "command": f"python -m jaxfuse_lint.calibrate.measured {shown}"}
    key = gpu.split()[-1].lower()
    return Table("JF101", key, meta, features, tuple(rows), ("rows",))


def main(argv: list[str] | None = None) -> int:
    from jaxfuse_lint.calibrate.harness import write_table

    ap = argparse.ArgumentParser(prog="python -m jaxfuse_lint.calibrate.measured", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("timings", help="a timings file (shared/gpu/h200-turn4.md)")
    ap.add_argument("-o", "--output-dir", default=None, help="write the table here (default: the package's tables)")
    args = ap.parse_args(argv)
    with open(args.timings, encoding="utf-8") as fh:
        table = read(fh.read(), args.timings)
    path = table_path(table.rule, table.key, args.output_dir) if args.output_dir else table_path(table.rule, table.key)
    write_table(table, path)
    counts = {v: sum(r.verdict == v for r in table.rows) for v in ("harm", "none", "worse", "mixed")}
    print(f"{table.rule} {table.key}: wrote {path}: {len(table.rows)} timed pairs {counts}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
