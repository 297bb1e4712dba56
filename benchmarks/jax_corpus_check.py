"""Robustness over a real corpus: the installed `jax` package's own source (and any other
installed JAX library named with --package).

1. `check` over every file completes with no internal error (a worker crash, a rule or
   codemod exception, a timeout: each would be listed).
2. `--fix` (safe, and with --unsafe also unsafe) over a copy of the corpus: every changed
   file still parses (libcst) and compiles (CPython).
3. Fixing the fixed copy again changes nothing: fixing twice equals fixing once.

    python benchmarks/jax_corpus_check.py [--package jax] [--jobs N] [--unsafe] [--sample K]

Exit status 0 when all three hold. This takes minutes over the whole jax package;
tests/test_robustness.py runs the same function over a sample of about 40 files.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def package_root(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def corpus_files(root: Path, sample: int | None = None) -> list[Path]:
    """The package's .py files relative to its parent (so `jax/_src/core.py`), every k-th one
    for a sample: deterministic, spread over the whole package."""
    files = sorted(p.relative_to(root.parent) for p in root.rglob("*.py"))
    if sample and sample < len(files):
        step = len(files) / sample
        files = [files[int(i * step)] for i in range(sample)]
    return files


@dataclass
class Report:
    files: int = 0
    check_seconds: float = 0.0
    fix_seconds: float = 0.0
    diagnostics: int = 0
    changed: int = 0
    fixed: int = 0
    internal_errors: list[str] = field(default_factory=list)
    invalid_results: list[str] = field(default_factory=list)
    not_idempotent: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.internal_errors or self.invalid_results or self.not_idempotent)


def check_corpus(source_parent: Path, rel_files: list[Path], workdir: Path, *, jobs: int | None = None,
                 unsafe: bool = False) -> Report:
    """Copy the files (keeping package paths) into workdir, check, fix, fix again."""
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.codemods.plan import is_valid_python
    from jaxfuse_lint.run.runner import check_files, fix_files
    from jaxfuse_lint.core.writer import write_atomic

    for rel in rel_files:
        dest = workdir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_parent / rel, dest)
    # Keep packages packages (the project index names modules by their __init__.py files).
    for rel in rel_files:
        for parent in (workdir / rel).parents:
            if parent == workdir:
                break
            init = parent / "__init__.py"
            if not init.exists():
                init.write_text("")
    files = [workdir / rel for rel in rel_files]
    settings = Settings()
    report = Report(files=len(files))

    started = time.perf_counter()
    run = check_files(files, settings, jobs=jobs)
    report.check_seconds = time.perf_counter() - started
    report.diagnostics = len(run.diagnostics)
    report.internal_errors += run.errors

    started = time.perf_counter()
    fixed = fix_files(files, settings, unsafe=unsafe, jobs=jobs)
    report.fix_seconds = time.perf_counter() - started
    report.internal_errors += [e for e in fixed.errors if "fix dropped" not in e]
    for o in fixed.fixes:
        if not o.changed:
            continue
        report.changed += 1
        report.fixed += len(o.fixed)
        problem = is_valid_python(o.source, o.filename)
        if problem is not None:
            report.invalid_results.append(f"{o.filename}: {problem}")
            continue
        write_atomic(o.filename, o.source, o.encoding)

    again = fix_files(files, settings, unsafe=unsafe, jobs=jobs)
    report.internal_errors += [e for e in again.errors if "fix dropped" not in e and e not in report.internal_errors]
    for o in again.fixes:
        if o.changed:
            report.not_idempotent.append(f"{o.filename}: {len(o.fixed)} more fix(es) on the second pass: "
                                         + ", ".join(sorted({d.code for d in o.fixed})))
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", action="append", help="an installed package to check (default: jax)")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--unsafe", action="store_true", help="apply unsafe fixes too")
    ap.add_argument("--sample", type=int, default=None, help="only this many files per package")
    args = ap.parse_args()
    status = 0
    for name in args.package or ["jax"]:
        root = package_root(name)
        if root is None:
            print(f"{name}: not installed, skipped")
            continue
        rel = corpus_files(root, args.sample)
        with tempfile.TemporaryDirectory(prefix="jaxfuse-corpus-") as tmp:
            r = check_corpus(root.parent, rel, Path(tmp), jobs=args.jobs, unsafe=args.unsafe)
        print(f"{name}: {r.files} files; check {r.check_seconds:.1f}s, {r.diagnostics} diagnostics; "
              f"fix {r.fix_seconds:.1f}s, {r.fixed} fixes in {r.changed} files")
        for title, items in (("internal errors", r.internal_errors), ("fixes that broke the code", r.invalid_results),
                             ("not idempotent", r.not_idempotent)):
            print(f"  {title}: {len(items)}")
            for item in items:
                print(f"    {os.path.relpath(item) if os.path.exists(item.split(':')[0]) else item}")
        status |= 0 if r.ok else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
