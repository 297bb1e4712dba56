"""How the cost of computing fixes grows with a file's size (issue 27: it was quadratic).

A fixture with fixable findings is copied into one file 1x, 2x, 4x, ... (each copy's
top-level names suffixed, so the copies are independent code), and the CPU time of
`check_source` with and without fixes is measured: with fixes, it should grow like the file
(each fix's edits come from the top-level statement it changes, not from a diff of the whole
file), so the ratio fixes/no-fixes should stay about the same.

    python benchmarks/bench_fix_scaling.py [--fixture fixtures/JF201/fix_numpy.py] [--copies 6,12,24]
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def grown(source: str, copies: int) -> str:
    lines = source.splitlines(keepends=True)
    imports = [ln for ln in lines if ln.startswith(("import ", "from "))]
    body = "".join(ln for ln in lines if ln not in imports)
    names = set(re.findall(r"^(?:def|class) (\w+)", body, re.MULTILINE)) | set(
        re.findall(r"^(\w+) *=", body, re.MULTILINE))
    out = ["".join(imports)]
    for i in range(copies):
        text = body
        for name in names:
            text = re.sub(rf"\b{re.escape(name)}\b", f"{name}_{i}", text)
        out.append(text)
    return "\n".join(out)


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixture", default=str(ROOT / "fixtures" / "JF201" / "fix_numpy.py"))
    parser.add_argument("--copies", default="6,12,24")
    args = parser.parse_args(argv)
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.engine.pipeline import check_source

    settings = Settings()
    source = Path(args.fixture).read_text()
    print(f"{'lines':>7} {'fixes':>6} {'with fixes s':>13} {'without s':>10} {'ratio':>6}")
    for copies in (int(c) for c in args.copies.split(",")):
        text = grown(source, copies)
        result = None

        def with_fixes():
            nonlocal result
            result = check_source(text, "grown.py", settings)

        t_fix = cpu(with_fixes)
        t_plain = cpu(lambda: check_source(text, "grown.py", settings, with_fixes=False))
        n = sum(d.fix is not None for d in result.diagnostics)
        print(f"{text.count(chr(10)):>7} {n:>6} {t_fix:>13.2f} {t_plain:>10.2f} {t_fix / max(t_plain, 1e-9):>6.1f}")


if __name__ == "__main__":
    main()
