"""Time and memory of one file at the size ceiling (issue 42, item 4): `check` and `check --fix`
with one worker (`-j1 --no-cache`), each in a fresh process, on one module of JAX code of a given
size. A 2 MB file under `--fix -j1` took 318 s and 2.7 GB, ran past the per-file limit and was
left unchecked; both must stay linear in the file and under 1 GB at the ceiling (2 MiB).

The module is every fixture of every rule (the code each rule reports, fixes or leaves alone:
every rule and codemod runs), their top-level names suffixed per copy so the copies are
independent code, repeated and cut at a top-level statement to the size asked for.

    python benchmarks/bench_size_ceiling.py [--sizes 0.25,0.5,1,2] [--no-fix]

CPU is the user + system time of the command and its worker; memory the peak resident set of
the largest of them (getrusage of the children). Figures: docs/performance.md.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

MIB = 1 << 20
CEILING = 2 * MIB


def fixtures_module() -> tuple[str, str]:
    """(the imports, the body) of every fixture of every rule in one module."""
    from bench_fix_scaling import every_fixture

    text = every_fixture(1)
    lines = text.splitlines(keepends=True)
    imports = "".join(ln for ln in lines if ln.startswith(("import ", "from ")))
    body = "".join(ln for ln in lines if not ln.startswith(("import ", "from ")))
    return imports, body


def module_of_size(size: int) -> str:
    """Copies of the fixtures' body (top-level names suffixed `_c<i>`) after their imports, cut at
    the last top-level statement that ends within `size` bytes."""
    imports, body = fixtures_module()
    names = sorted(set(re.findall(r"^(?:def|class) (\w+)", body, re.MULTILINE))
                   | set(re.findall(r"^(\w+) *=", body, re.MULTILINE)), key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b(?![\"'])")
    parts = [imports]
    total = len(imports.encode())
    copy = 0
    while total < size + len(body.encode()):
        text = pattern.sub(lambda m, c=copy: f"{m.group(1)}_c{c}", body) + "\n"
        parts.append(text)
        total += len(text.encode())
        copy += 1
    text = "".join(parts)
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    last = 0
    for node in ast.parse(text).body:
        if offsets[node.end_lineno] <= size:
            last = node.end_lineno
    return "".join(lines[:last])


# Run in a process of its own per measurement: getrusage of the children it waited for is then
# that one command's (ru_maxrss of children is the largest of all those ever waited for).
_RUNNER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024,
                  done.returncode, done.stderr]))
"""


def measure(args: list[str], cwd: Path) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS MiB, exit code) of `jaxfuse-lint ARGS` in a fresh process."""
    import json

    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXFUSE_LINT_DAEMON": "0"}
    out = subprocess.run([sys.executable, "-c", _RUNNER, sys.executable, "-m", "jaxfuse_lint", *args], cwd=cwd,
                         env=env, capture_output=True, text=True, check=True).stdout
    wall, cpu, peak, code, stderr = json.loads(out)
    if "internal error" in stderr:
        print(f"  ({stderr.strip().splitlines()[0]})", flush=True)
    return wall, cpu, peak, code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0.25,0.5,1,2", help="MiB, at most 2 (the ceiling)")
    parser.add_argument("--no-fix", action="store_true", help="check only")
    args = parser.parse_args(argv)
    print(f"{'MiB':>6} {'lines':>7} {'command':>8} {'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'exit':>5}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pyproject.toml").write_text(f"[tool.jaxfuse-lint]\nmax-file-size = {CEILING}\n")
        for size in (float(s) for s in args.sizes.split(",")):
            text = module_of_size(min(int(size * MIB), CEILING))
            for mode in (["check"] if args.no_fix else ["check", "fix"]):
                (folder / "big.py").write_text(text)
                extra = ["--fix"] if mode == "fix" else []
                wall, cpu, peak, code = measure(["check", "--no-cache", "-j1", *extra, "big.py"], folder)
                print(f"{len(text.encode()) / MIB:>6.2f} {text.count(chr(10)):>7} {mode:>8} {wall:>8.1f} {cpu:>8.1f} "
                      f"{peak:>9} {code:>5}", flush=True)


if __name__ == "__main__":
    main()
