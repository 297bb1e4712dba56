"""How the cost of checking and fixing grows with a file's size (issues 27 and 37: it was
quadratic).

A source with fixable findings is copied into one file 1x, 2x, 4x, ... (each copy's
top-level names suffixed, so the copies are independent code), and the CPU time of
`check_source` with and without fixes (and, with --fix, of `fix_source`) is measured: each
should grow like the file (each fix's edits come from the top-level statement it changes, and
every question about a name or a function costs what that name's or function's own uses
cost), so doubling the copies should about double every column.

The source is one fixture (default fixtures/JF201/fix_numpy.py), or with `--fixture all` every
fixture of every rule once (`--every N`: every Nth), which exercises every rule and codemod.

    python benchmarks/bench_fix_scaling.py [--fixture fixtures/JF201/fix_numpy.py|all] [--copies 6,12,24] [--fix]

Figures (CPU seconds of `check_source`, with fixes / without; issue 37, before -> after, on the
shared 2-core development machine under load):

    --fixture all --copies 1,2,4     178 KB (118 fixes)   6.38 / 2.34  ->  2.62 / 2.30
                                     356 KB (236 fixes)  18.24 / 6.65  ->  5.30 / 4.44
                                     711 KB (472 fixes)  61.30 / 18.18 -> 11.49 / 10.58
    --copies 40,80,160 (fix_numpy)    44 KB (320 fixes)   1.63 / 0.46  ->  0.97 / 0.55
                                      89 KB (640 fixes)   4.32 / 1.25  ->  2.04 / 1.18
                                     178 KB (1,280 fixes) 14.17 / 3.13 ->  4.05 / 2.81
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _split(source: str) -> tuple[list[str], str]:
    """(the import lines, the rest) of a module (`from __future__` imports are dropped: they
    must come first, and no fixture's code depends on one)."""
    lines = source.splitlines(keepends=True)
    imports = [ln for ln in lines if ln.startswith(("import ", "from ")) and not ln.startswith("from __future__")]
    body = "".join(ln for ln in lines if ln not in imports and not ln.startswith("from __future__"))
    return imports, body


def _suffixed(body: str, suffix: str) -> str:
    """The body with every top-level name it defines renamed `name_<suffix>` (not the prefix of
    a string: `f"..."` stays an f-string when a function is called `f`)."""
    names = set(re.findall(r"^(?:def|class) (\w+)", body, re.MULTILINE)) | set(
        re.findall(r"^(\w+) *=", body, re.MULTILINE))
    for name in names:
        body = re.sub(rf"\b{re.escape(name)}\b(?![\"'])", f"{name}_{suffix}", body)
    return body


def grown(source: str, copies: int) -> str:
    imports, body = _split(source)
    out = ["".join(imports)]
    for i in range(copies):
        out.append(_suffixed(body, str(i)))
    return "\n".join(out)


def every_fixture(every: int = 1) -> str:
    """Every `every`-th fixture of every rule (their checked sources, not the expected fixes) in
    one module, each one's names suffixed with its number so that they stay independent."""
    paths = sorted(p for p in (ROOT / "fixtures").glob("JF[1-9]*/*.py")
                   if not p.name.endswith((".fixed.py", ".unsafe.py")))[::every]
    imports: set[str] = set()
    bodies = []
    for k, path in enumerate(paths):
        lines, body = _split(path.read_text())
        imports.update(lines)
        bodies.append(_suffixed(body, f"f{k}"))
    return "".join(sorted(imports)) + "\n" + "\n".join(bodies)


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixture", default=str(ROOT / "fixtures" / "JF201" / "fix_numpy.py"),
                        help="a fixture, or `all` (every fixture of every rule)")
    parser.add_argument("--every", type=int, default=1, help="with --fixture all: every Nth fixture")
    parser.add_argument("--copies", default="6,12,24")
    parser.add_argument("--fix", action="store_true", help="also time fix_source (unsafe fixes too)")
    args = parser.parse_args(argv)
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import check_source, fix_source

    settings = Settings()
    source = every_fixture(args.every) if args.fixture == "all" else Path(args.fixture).read_text()
    check_source(grown(source, 1), "grown.py", settings)  # imports and first-use costs out of the way
    print(f"{'bytes':>9} {'lines':>7} {'fixes':>6} {'with fixes s':>13} {'without s':>10} {'ratio':>6}"
          + (f" {'fix_source s':>13}" if args.fix else ""))
    for copies in (int(c) for c in args.copies.split(",")):
        text = grown(source, copies)
        result = None

        def with_fixes():
            nonlocal result
            result = check_source(text, "grown.py", settings)

        t_fix = cpu(with_fixes)
        t_plain = cpu(lambda: check_source(text, "grown.py", settings, with_fixes=False))
        n = sum(d.fix is not None for d in result.diagnostics)
        line = (f"{len(text.encode()):>9} {text.count(chr(10)):>7} {n:>6} {t_fix:>13.2f} {t_plain:>10.2f} "
                f"{t_fix / max(t_plain, 1e-9):>6.1f}")
        if args.fix:
            line += f" {cpu(lambda: fix_source(text, 'grown.py', settings, unsafe=True)):>13.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
