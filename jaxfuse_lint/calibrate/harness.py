"""Fix, compile and measure every variant of a rule; write its tables.

For one rule: the generator's variants go into modules of `BATCH` functions each; the linter
fixes each module with the rule's own codemod (unsafe fixes included: the table is about what
the fix does to the compiled program; whether it is safe is the codemod's business), and both
versions of every function are compiled for each target in worker processes:

- XLA:GPU without a GPU (`jaxfuse_lint/verify/backend.py`), for each bundled GPU model;
- XLA:CPU, where the compiled programs are also run and timed (alternating, median of `repeat`).

A generator's `advised(features, name)` spells the "after" itself, for a rule without a codemod or
for the forms its codemod does not fix (it returns None where the codemod's fix is the "after").

Figures per version: kernels and launches per run (the optimized HLO, loops counted by their
trip counts), temporary bytes (XLA's buffer assignment), folded-constant bytes. A variant the
fix does not change is `nofix`; one that fails to compile is `error` (with what failed). Where
both versions compile to one program (`same_program`: the optimized HLO, names and source
locations aside), the verdict is `none` and nothing is timed: a wall-clock difference between
one program and itself is noise. Where only the wall-clock tells two programs apart, a second
timed round must see the same change; otherwise the row keeps no noise figure (no change).
"""
from __future__ import annotations

import ast
import datetime
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any, Iterable, Mapping, Sequence

from jaxfuse_lint.core.calibration import (FIGURES, RAW, VERDICTS, Figures, Row, Table, change, measured_verdicts,
                                           table_path, verdict)

BATCH = 40
GPU_KEYS = ("h100", "a100")
TARGET_KEYS = (*GPU_KEYS, "cpu")


def calibration_settings(code: str):
    """The rule alone, reporting its raw pattern (not its table's decision), fixes included; a rule in
    the preview tier as a whole runs too."""
    from jaxfuse_lint.core.config import Settings

    return Settings(select=(code,), per_file_ignores=(), extra=(RAW,), preview=True)


def functions_text(source: str) -> dict[str, str]:
    """Top-level function name -> its source text (to tell which functions a fix changed)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    return {node.name: "".join(lines[node.lineno - 1:node.end_lineno])
            for node in tree.body if isinstance(node, ast.FunctionDef)}


def source_of(gen, function_text: str) -> str:
    return gen.HEADER.rstrip() + "\n\n\n" + function_text.rstrip() + "\n"


def fixed_batches(code: str, variants: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The variants in modules of BATCH functions, each with the rule's fix applied (no jax here)."""
    from jaxfuse_lint.calibrate.variants import generator, module
    from jaxfuse_lint.engine import fix_source

    gen = generator(code)
    settings = calibration_settings(code)
    batches = []
    for start in range(0, len(variants), BATCH):
        chunk = list(variants[start:start + BATCH])
        before, names = module(gen, chunk)
        # A rule without a codemod (or for the forms its codemod does not fix): the generator spells
        # the advice's form (`advised` returns None where the codemod's fix is the "after").
        advised = [gen.advised(f, n) if hasattr(gen, "advised") else None for f, n in zip(chunk, names)]
        if all(a is not None for a in advised):
            after = gen.HEADER.rstrip() + "\n" + "".join("\n\n" + a.rstrip() + "\n" for a in advised)
        else:
            outcome = fix_source(before, f"{code.lower()}_variants.py", settings, unsafe=True)
            after = outcome.source if isinstance(outcome.source, str) else outcome.source.decode("utf-8")
            fixed = functions_text(after)
            for name, text in zip(names, advised):
                if text is not None:
                    after = after.replace(fixed[name], functions_text(source_of(gen, text))[name], 1)
        old, new = functions_text(before), functions_text(after)
        batches.append({
            "code": code, "before": before, "after": after, "names": names, "features": chunk,
            "args": [gen.args(f) for f in chunk], "fixed": [old[n] != new.get(n) for n in names],
            # The advised form may take its arguments in another layout (components first, say).
            "args_after": [(gen.advised_args(f) if hasattr(gen, "advised_args") else None) or gen.args(f)
                           for f in chunk],
        })
    return batches


# --- in the worker processes -------------------------------------------------------------------------

_TARGETS: dict[str, Any] = {}


def _target(key: str):
    if key not in _TARGETS:
        from jaxfuse_lint.verify.backend import select

        target = select("cpu") if key == "cpu" else select("gpu", key)
        if key != "cpu" and not target.deviceless and target.stand_in:
            raise RuntimeError(f"no XLA:GPU compiler here for `{key}`: {target.stand_in}")
        _TARGETS[key] = target
    return _TARGETS[key]


def _figures(measurement) -> Figures:
    return Figures(measurement.kernels.total, measurement.kernels.launches_per_run, measurement.temp_bytes,
                   measurement.folded_constant_bytes)


def _measure_batch(batch: dict, key: str, repeat: int) -> list[tuple]:
    """(features, before, after, verdict, noise, args) for each function of the batch."""
    import warnings

    from jaxfuse_lint.verify.loader import get_function, load_module
    from jaxfuse_lint.verify.measure import measure
    from jaxfuse_lint.verify.shapes import parse_arg_spec

    warnings.simplefilter("ignore")
    target = _target(key)
    modules = {label: load_module(batch[label], f"{batch['code'].lower()}_{label}.py", label=label)
               for label in ("before", "after")}
    out = []
    args_after = batch.get("args_after") or batch["args"]
    for name, features, args, after_args, fixed in zip(batch["names"], batch["features"], batch["args"], args_after,
                                                       batch["fixed"]):
        spec_text = ", ".join(args)
        if not fixed:
            out.append((features, None, None, "nofix", None, spec_text))
            continue
        specs = {"before": [parse_arg_spec(a, {}) for a in args], "after": [parse_arg_spec(a, {}) for a in after_args]}
        try:
            measured = {label: measure(get_function(module, name, label), specs[label], {}, filename=label, label=label,
                                       device=target.device) for label, module in modules.items()}
        except Exception as exc:  # noqa: BLE001 - recorded in the table, not fatal to the run
            out.append((features, None, None, "error", None, f"{spec_text}: {' '.join(str(exc).split())[:200]}"))
            continue
        before, after = _figures(measured["before"]), _figures(measured["after"])
        noise = None
        if same_program(measured["before"].hlo_text, measured["after"].hlo_text):
            # The compiler made one program of both (XLA:CPU's loop-invariant code motion hoists a recomputation
            # back out, say): a difference in their wall-clock is the machine's noise, not the fix's.
            out.append((features, before, after, "none", None, spec_text))
            continue
        if key == "cpu" and repeat:
            before, after, noise = _timed(measured, specs, target, repeat, before, after)
            if _wall_clock_only(before, after, noise):
                # Only the wall-clock tells the versions apart: a second round must see the same change, or
                # it was the machine (another process, a clock step) and the row keeps no noise: no change.
                again = _timed(measured, specs, target, repeat, before, after)
                if change("seconds", again[0].seconds, again[1].seconds, again[2]) != \
                        change("seconds", before.seconds, after.seconds, noise):
                    noise = None
        out.append((features, before, after, verdict(before, after, noise, batch["code"], features), noise, spec_text))
    return out


def _wall_clock_only(before: Figures, after: Figures, noise: float | None) -> bool:
    changes = {f: change(f, getattr(before, f), getattr(after, f), noise) for f in FIGURES}
    return changes["seconds"] != "same" and all(v == "same" for f, v in changes.items() if f != "seconds")


def same_program(before: str, after: str) -> bool:
    """Whether two optimized HLO modules are one program: the same instructions in the same order, once
    the names XLA numbers, the source locations and the module's name are set aside."""
    if not before or not after:
        return False
    return _canonical_hlo(before) == _canonical_hlo(after)


def _canonical_hlo(text: str) -> str:
    import re

    lines = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("HloModule") or (
                " = " not in line and not stripped.startswith(("ENTRY", "%", "}", "ROOT"))):
            continue  # the module header, the file and stack-frame tables
        line = re.sub(r", metadata=\{[^}]*\}", "", line)
        lines.append(re.sub(r", stack_frame_id=\d+", "", line))
    names: dict[str, str] = {}
    body = re.sub(r"%[\w.\-]+", lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), "\n".join(lines))
    return re.sub(r"([(,] ?)[\w.\-]+: ", r"\1p: ", body)  # parameter names in computation headers


def _timed(measured, specs, target, repeat, before: Figures, after: Figures):
    from jaxfuse_lint.verify.numerics import random_inputs
    from jaxfuse_lint.verify.timing import noise, time_versions

    inputs = {label: random_inputs(specs[label], 0, target.run_device) for label in ("before", "after")}
    calls = [lambda m=measured[label], a=inputs[label]: m.compiled(*a) for label in ("before", "after")]
    timings = time_versions(calls, repeat=repeat, mode="compiled")
    return (replace(before, seconds=timings[0].median), replace(after, seconds=timings[1].median),
            noise(timings[0], timings[1]))


def _work(task: tuple) -> list[tuple]:
    batch, key, repeat = task
    return _measure_batch(batch, key, repeat)


# --- the run -----------------------------------------------------------------------------------------

def environment(key: str) -> dict[str, Any]:
    import jax
    import jaxlib

    target = _target(key)
    return {
        "compiler": "XLA:CPU" if key == "cpu" else "XLA:GPU",
        "device": target.device_kind if key != "cpu" else f"a CPU with {os.cpu_count()} cores",
        "deviceless": bool(getattr(target, "deviceless", False)),
        "jax": jax.__version__, "jaxlib": jaxlib.__version__,
        "date": datetime.date.today().isoformat(),
        "command": f"python -m jaxfuse_lint.calibrate --rule {{rule}} --target {key}",
    }


def calibrate(code: str, keys: Iterable[str] = TARGET_KEYS, *, workers: int = 1, repeat: int = 5,
              limit: int | None = None, directory: str | None = None, log=print) -> list[str]:
    """Calibrate one rule for `keys`; write its tables; return their paths."""
    from jaxfuse_lint.calibrate.variants import generator

    gen = generator(code)
    all_variants = list(gen.variants())
    if limit:
        all_variants = all_variants[:limit]
    written = []
    for key in keys:
        # A timed target (XLA:CPU) runs every variant: its generator may name a smaller space for it.
        space = dict(gen.FEATURES)
        if key == "cpu" and repeat:
            space.update(getattr(gen, "TIMED", {}))
        variants = [f for f in all_variants if all(f[name] in values for name, values in space.items())]
        log(f"{code} {key}: {len(variants)} variants; fixing them with the rule's codemod")
        batches = fixed_batches(code, variants)
        log(f"{code} {key}: {sum(sum(b['fixed']) for b in batches)} of {len(variants)} changed by the fix")
        tasks = [(batch, key, repeat) for batch in batches]
        rows: list[Row] = []
        if workers > 1:
            import multiprocessing

            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                results = pool.map(_work, tasks)
                for i, result in enumerate(results):
                    rows += [Row(*r) for r in result]
                    log(f"{code} {key}: {min((i + 1) * BATCH, len(variants))}/{len(variants)}")
        else:
            for i, task in enumerate(tasks):
                rows += [Row(*r) for r in _work(task)]
                log(f"{code} {key}: {min((i + 1) * BATCH, len(variants))}/{len(variants)}")
        meta = environment(key)
        meta["command"] = meta["command"].format(rule=code)
        meta["page"] = [list(g) for g in getattr(gen, "PAGE", ())] or [list(gen.FEATURES)[:2]]
        if key == "cpu":
            meta["timing"] = f"median of {repeat} alternating runs each, on this machine's CPU"
        table = Table(code, key, meta, {k: tuple(v) for k, v in space.items()}, tuple(rows),
                      tuple(getattr(gen, "NEAREST", ())))
        path = table_path(code, key, directory) if directory else table_path(code, key)
        write_table(table, path)
        counts = {v: sum(r.verdict == v for r in rows) for v in VERDICTS}
        log(f"{code} {key}: wrote {path}: {counts}")
        written.append(path)
    return written


def reverdict(path: str) -> dict[str, int]:
    """Recompute a table's verdicts from its stored figures (after a change of what counts as harm);
    nothing is compiled. Returns how many verdicts changed, by new verdict."""
    import json

    with open(path, encoding="utf-8") as fh:
        table = Table.from_json(json.load(fh))
    changed: dict[str, int] = {}
    rows = []
    if table.meta.get("measured"):  # a real GPU's timings (calibrate/measured.py): their own policy
        verdicts = measured_verdicts(list(table.rows), float(table.meta.get("noise", 0.2)),
                                     table.meta.get("group_by", ()), table.rule)
        for row, new in zip(table.rows, verdicts):
            if new != row.verdict:
                changed[new] = changed.get(new, 0) + 1
            rows.append(replace(row, verdict=new))
        write_table(replace(table, rows=tuple(rows)), path)
        return changed
    for row in table.rows:
        if row.before is not None and row.after is not None:
            new = verdict(row.before, row.after, row.noise, table.rule, row.features)
            if new != row.verdict:
                changed[new] = changed.get(new, 0) + 1
                row = replace(row, verdict=new)
        rows.append(row)
    write_table(replace(table, rows=tuple(rows)), path)
    return changed


def write_table(table: Table, path: str) -> None:
    """One row per line: the file diffs well when a compiler release changes a few decisions."""
    data = table.to_json()
    rows = data.pop("rows")
    head = json.dumps(data, indent=1, ensure_ascii=False)
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in rows)
    text = head[:-2] + ',\n "rows": [\n' + body + "\n ]\n}\n"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)
    json.loads(text)  # a table that does not read back is a bug here, not a file to commit


if __name__ == "__main__":  # pragma: no cover - use `python -m jaxfuse_lint.calibrate`
    sys.exit("use: python -m jaxfuse_lint.calibrate")
