"""Linting speed on a real corpus, side by side with the libcst parse floor, Fixit and flake8.

The corpus is the installed `jax` package's own source plus any other installed JAX
library (jaxlib, flax, equinox, optax, chex, ... whichever are installed), copied to a
temporary directory so that no configuration file or ignore rule of the installation
applies. Every tool runs in its own process, timed wall-clock, first pinned to one CPU
core (one process: the fair comparison with the parse floor), then on all cores:

- libcst parse only: read each file and `libcst.parse_module` it, nothing else (the floor
  for any libcst-based tool; on all cores, a process pool);
- jaxfuse-lint cold: `jaxfuse-lint check -j N --output-format json` with an empty cache;
- jaxfuse-lint warm: the same command again, nothing changed (every result from the cache);
- jaxfuse-lint warm, one file touched: a comment appended to one leaf module (one no other
  file imports) before each run: that file is analysed, every other result is reused;
- the same two warm runs forked from a `jaxfuse-lint daemon` (started for the run, pinned to
  the same cores): no imports left to pay;
- ruff (`ruff check --no-cache`, its default rules; skipped if not installed): the speed
  users compare with, though it checks other things;
- Fixit (`fixit lint`, its built-in rules; skipped if not installed);
- flake8 (pyflakes, pycodestyle, mccabe; jaxfuse-lint's own flake8 plugin hidden from it;
  skipped if not installed).

Then the language server's latency (benchmarks/bench_lsp.py) on the corpus file closest to
2,000 lines: keystroke -> publishDiagnostics, median and p90 of 20 edits (--skip-lsp: not).

Then the peak memory (RSS) of the coordinator and of the worker process of
`check_files(..., jobs=1)` on growing subsets of the corpus: it should stay flat, set
by the largest file rather than by the number of files.

    python benchmarks/bench_lint.py [--package NAME ... | --corpus DIR] [--jobs N] [--repeat N]
                                    [--output benchmarks/results.md] [--skip-memory] [--skip-others] [--skip-lsp]

--corpus DIR uses the Python files under DIR (a checkout, say) instead of installed packages.

Writes a Markdown table (with the machine description) to --output and stdout.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PACKAGES = ("jax", "jaxlib", "flax", "equinox", "optax", "chex", "diffrax", "haiku", "orbax")


# -- the corpus --------------------------------------------------------------------------------------

def package_root(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


@dataclass
class Corpus:
    root: Path
    packages: list[str]
    files: list[Path]
    lines: int
    bytes: int


def corpus_from_directory(src: Path, dest: Path) -> Corpus:
    """A copy of every .py file under src (a checkout), as one package named after it."""
    files, lines, size = [], 0, 0
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        target = dest / src.name / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        target.write_bytes(data)
        files.append(target)
        lines += data.count(b"\n")
        size += len(data)
    return Corpus(dest, [src.name], files, lines, size)


def leaf_file(corpus: Corpus) -> Path | None:
    """A middle-sized module that mentions JAX and that no other file of the corpus imports."""
    sys.path.insert(0, str(ROOT))
    from jaxfuse_lint.project.index import ProjectFile, ProjectIndex
    from jaxfuse_lint.project.module_names import ModuleNamer
    from jaxfuse_lint.project.prescan import prescan

    namer = ModuleNamer()
    pfiles = []
    for f in corpus.files:
        named = namer.name(f)
        module, is_package = named if named else (None, False)
        text = f.read_text(encoding="utf-8", errors="replace")
        pfiles.append(ProjectFile(str(f), module, is_package, prescan(text, module or "", is_package)))
    graph = ProjectIndex(pfiles).graph()
    imported = set().union(*graph) if graph else set()
    leaves = sorted((f.stat().st_size, str(f)) for i, f in enumerate(corpus.files)
                    if i not in imported and f.name != "__init__.py" and b"jax" in f.read_bytes())
    return Path(leaves[len(leaves) // 2][1]) if leaves else None


def build_corpus(names: list[str], dest: Path) -> Corpus:
    files, lines, size, found = [], 0, 0, []
    for name in names:
        root = package_root(name)
        if root is None:
            continue
        found.append(name)
        for src in sorted(root.rglob("*.py")):
            if "__pycache__" in src.parts:
                continue
            target = dest / name / src.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            target.write_bytes(data)
            files.append(target)
            lines += data.count(b"\n")
            size += len(data)
    return Corpus(dest, found, files, lines, size)


# -- running a tool --------------------------------------------------------------------------------------

@dataclass
class Timing:
    tool: str
    cores: int
    processes: str
    seconds: float | None
    note: str = ""


def run_timed(cmd: list[str], cores: set[int], cwd: Path, env: dict | None = None, timeout: float = 3600) -> tuple[float, int, str]:
    def pin() -> None:
        os.sched_setaffinity(0, cores)

    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=pin,
                          timeout=timeout)
    elapsed = time.perf_counter() - started
    return elapsed, proc.returncode, (proc.stdout[-2000:] + proc.stderr[-2000:]).decode("utf-8", "replace")


PARSE_SCRIPT = r"""
import sys, multiprocessing, libcst
files = open(sys.argv[1]).read().split("\n")
jobs = int(sys.argv[2])
def parse(path):
    with open(path, "rb") as fh:
        libcst.parse_module(fh.read())
    return 0
if jobs == 1:
    for f in files:
        parse(f)
else:
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for _ in pool.imap_unordered(parse, files, chunksize=1):
            pass
"""

FLAKE8_SCRIPT = r"""
import importlib.metadata as md, sys
real = md.distributions
def distributions(*args, **kwargs):
    for d in real(*args, **kwargs):
        if (d.metadata["Name"] or "").lower().replace("_", "-") != "jaxfuse-lint":
            yield d
md.distributions = distributions
from flake8.main.cli import main
sys.exit(main())
"""

FIXIT_SCRIPT = r"""
import multiprocessing, sys
from concurrent.futures import ProcessPoolExecutor
import trailrunner.core
jobs = int(sys.argv.pop(1))
trailrunner.core.Trailrunner.DEFAULT_EXECUTOR = lambda *_: ProcessPoolExecutor(
    jobs, mp_context=multiprocessing.get_context("spawn"))
from fixit.cli import main
sys.exit(main())
"""


def tool_copy(work: Path) -> Path:
    """A snapshot of the tool's own source: the cache key includes the tool's files, so a
    checkout edited during the run must not turn the warm run into a cold one."""
    dest = work / "tool"
    for name in ("jaxfuse_lint",):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    # Installed, the tool's modules are byte-compiled (pip does it); timed runs must not
    # compile ~200 modules from source every time.
    import compileall

    compileall.compile_dir(dest, quiet=1)
    return dest


def tool_env(work: Path) -> dict:
    """The environment of every timed run: the tool's snapshot first on the path, and
    bytecode caching on as users have it (PYTHONDONTWRITEBYTECODE, set in some sandboxes,
    made every warm run compile the tool and libcst's modules from source: 0.19 s instead
    of 0.15 s unchanged, 0.5 s instead of 0.25-0.35 s with one file touched)."""
    src = work / "tool"
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # No daemon of the user's serves these runs (only measure_daemon's own, in this folder).
    env["JAXFUSE_LINT_DAEMON"] = "0"
    env["JAXFUSE_LINT_DAEMON_DIR"] = str(work / "daemon")
    return env


def best_of(repeat: int, cmd: list[str], cores: set[int], cwd: Path, env: dict, before=None) -> tuple[float | None, str]:
    """The fastest of `repeat` runs (the least disturbed by whatever else the machine does)."""
    best, note = None, ""
    for _ in range(repeat):
        if before is not None:
            before()
        t, rc, out = run_timed(cmd, cores, cwd, env)
        if rc != 0:
            return None, out
        best = t if best is None else min(best, t)
    return best, note


def measure_speed(corpus: Corpus, jobs: int, skip_others: bool, work: Path, repeat: int = 1) -> tuple[list[Timing], dict]:
    all_cores = os.sched_getaffinity(0)
    one = {min(all_cores)}
    listing = work / "files.txt"
    listing.write_text("\n".join(str(f) for f in corpus.files))
    env = tool_env(work)
    py = sys.executable
    timings: list[Timing] = []
    dirs = [str(corpus.root / p) for p in corpus.packages]
    have_fixit = importlib.util.find_spec("fixit") is not None
    have_flake8 = importlib.util.find_spec("flake8") is not None
    ruff = shutil.which("ruff")
    leaf = leaf_file(corpus)

    for cores, n in ((one, 1), (all_cores, jobs)):
        label = "1 core" if n == 1 else f"{len(cores)} cores"
        print(f"[{label}] libcst parse only...", file=sys.stderr)
        t, out = best_of(repeat, [py, "-c", PARSE_SCRIPT, str(listing), str(n)], cores, work, env)
        timings.append(Timing("libcst parse only (floor)", len(cores), str(n), t, out))

        cache = work / f"cache-{n}"
        shutil.rmtree(cache, ignore_errors=True)
        lint = [py, "-m", "jaxfuse_lint", "check", "--output-format", "json", "--exit-zero", "-j", str(n),
                "--cache-dir", str(cache), *dirs]
        print(f"[{label}] jaxfuse-lint cold...", file=sys.stderr)
        t, out = best_of(repeat, lint, cores, work, env, before=lambda: shutil.rmtree(cache, ignore_errors=True))
        timings.append(Timing("jaxfuse-lint, cold", len(cores), str(n), t, out))
        timings.extend(measure_warm("jaxfuse-lint", lint, leaf, cores, n, work, env, repeat, label))
        timings.extend(measure_daemon(lint, leaf, cores, n, work, env, repeat, label))

        if skip_others:
            continue
        if ruff is not None:
            print(f"[{label}] ruff...", file=sys.stderr)
            # ruff has no worker option: it uses every core it is given.
            t, out = best_of(repeat, [ruff, "check", "--no-cache", "--exit-zero", "--quiet", *dirs], cores, work, env)
            timings.append(Timing("ruff (`ruff check --no-cache`, default rules)", len(cores), "threads", t, out))
        else:
            timings.append(Timing("ruff", len(cores), "—", None, "not installed: skipped"))
        if have_fixit:
            print(f"[{label}] fixit...", file=sys.stderr)
            # Fixit exits 1 when it reports something: that is a result, not a failure.
            t, rc, out = run_timed([py, "-c", FIXIT_SCRIPT, str(n), "lint", *dirs], cores, work, env)
            ok = rc in (0, 1) and "Traceback" not in out
            timings.append(Timing("Fixit 2 (`fixit lint`, built-in rules)", len(cores), str(n), t if ok else None,
                                  "" if ok else out))
        else:
            timings.append(Timing("Fixit", len(cores), str(n), None, "not installed: skipped"))
        if have_flake8:
            print(f"[{label}] flake8...", file=sys.stderr)
            t, out = best_of(repeat, [py, "-c", FLAKE8_SCRIPT, "-j", str(n), "--exit-zero", *dirs], cores, work, env)
            timings.append(Timing("flake8 (pyflakes, pycodestyle, mccabe)", len(cores), str(n), t, out))
        else:
            timings.append(Timing("flake8", len(cores), str(n), None, "not installed: skipped"))

    # What the cold run did (an extra run through the API, for its counters).
    probe = subprocess.run([py, str(Path(__file__).resolve()), "--_stats-probe", str(listing), str(jobs)],
                           cwd=work, env=env, capture_output=True, text=True)
    try:
        stats = json.loads(probe.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        stats = {"error": probe.stderr[-500:]}
    return timings, stats


def measure_warm(tool: str, lint: list[str], leaf: Path | None, cores: set[int], n: int, work: Path, env: dict,
                 repeat: int, label: str) -> list[Timing]:
    """The warm run (nothing changed), then warm runs with a comment appended to one leaf file."""
    print(f"[{label}] {tool} warm...", file=sys.stderr)
    t, out = best_of(repeat, lint, cores, work, env)
    timings = [Timing(f"{tool}, warm (cache)", len(cores), str(n), t, out)]
    if leaf is not None:
        print(f"[{label}] {tool} warm, one file touched...", file=sys.stderr)
        original = leaf.read_bytes()
        touches = iter(range(10**6))
        try:
            t, out = best_of(repeat, lint, cores, work, env, before=lambda: leaf.write_bytes(
                # Never a text an earlier run cached (results are keyed by content).
                original + f"# touched by {tool}: {next(touches)}\n".encode()))
        finally:
            leaf.write_bytes(original)
        timings.append(Timing(f"{tool}, warm, one leaf file touched", len(cores), str(n), t, out))
    return timings


def measure_daemon(lint: list[str], leaf: Path | None, cores: set[int], n: int, work: Path, env: dict, repeat: int,
                   label: str) -> list[Timing]:
    """The warm runs again, forked from a `jaxfuse-lint daemon` (pinned to the same cores)."""
    daemon_env = {**env, "JAXFUSE_LINT_DAEMON": ""}
    server = subprocess.Popen([sys.executable, "-m", "jaxfuse_lint", "daemon", "serve", "--idle-timeout", "600"],
                              env=daemon_env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              preexec_fn=lambda: os.sched_setaffinity(0, cores))
    try:
        status = [sys.executable, "-m", "jaxfuse_lint", "daemon", "status"]
        deadline = time.monotonic() + 60
        while subprocess.run(status, env=daemon_env, cwd=work, capture_output=True).returncode != 0:
            if time.monotonic() > deadline or server.poll() is not None:
                return [Timing("jaxfuse-lint daemon", len(cores), str(n), None, "the daemon did not start")]
            time.sleep(0.1)
        return measure_warm("jaxfuse-lint daemon", lint, leaf, cores, n, work, daemon_env, repeat, label)
    finally:
        server.terminate()
        server.wait(30)


# -- memory ------------------------------------------------------------------------------------------

def measure_memory(corpus: Corpus, work: Path) -> list[tuple[int, int, float, float]]:
    """(files, lines, coordinator MB, worker MB) for growing, evenly spread subsets."""
    env = tool_env(work)
    rows = []
    n = len(corpus.files)
    # The largest file that mentions JAX (one that is not skipped) goes into every subset.
    largest = max((p for p in corpus.files if b"jax" in p.read_bytes()), key=lambda p: p.stat().st_size)
    for fraction in (0.1, 0.25, 0.5, 1.0):
        k = max(1, int(n * fraction))
        step = n / k
        subset = [corpus.files[int(i * step)] for i in range(k)]
        if largest not in subset:
            subset[-1] = largest
        listing = work / f"memory-{k}.txt"
        listing.write_text("\n".join(str(f) for f in subset))
        print(f"[memory] {k} files...", file=sys.stderr)
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--_memory-probe", str(listing)],
                              cwd=work, env=env, capture_output=True, text=True)
        data = json.loads(proc.stdout.strip().splitlines()[-1])
        lines = sum(p.read_bytes().count(b"\n") for p in subset)
        rows.append((k, lines, data["coordinator_mb"], data["worker_mb"]))
    return rows


def _memory_probe(listing: str) -> None:
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.run.runner import check_files

    files = [Path(p) for p in Path(listing).read_text().split("\n") if p]
    check_files(files, Settings(), jobs=1)
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"coordinator_mb": round(me, 1), "worker_mb": round(workers, 1)}))


def _stats_probe(listing: str, jobs: str) -> None:
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.run.runner import check_files

    files = [Path(p) for p in Path(listing).read_text().split("\n") if p]
    run = check_files(files, Settings(), jobs=int(jobs))
    stats = dict(run.stats)
    stats["diagnostics"] = len(run.diagnostics)
    stats["internal_errors"] = len(run.errors)
    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in stats.items()}))


# -- the report --------------------------------------------------------------------------------------

def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = next(int(line.split()[1]) // 1024 // 1024 for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal"))
        mem_s = f", {mem} GiB RAM"
    except (OSError, StopIteration):
        mem_s = ""
    versions = []
    for name in ("libcst", "jax", "fixit", "flake8"):
        try:
            from importlib.metadata import version

            versions.append(f"{name} {version(name)}")
        except Exception:
            pass
    return (f"{cpu}, {len(os.sched_getaffinity(0))} cores available{mem_s}; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}; " + ", ".join(versions))


def measure_lsp(corpus: Corpus, work: Path) -> dict | None:
    """bench_lsp.py on the corpus file closest to 2,000 lines, in a process of its own."""
    sized = []
    for f in corpus.files:
        data = f.read_bytes()
        if b"jax" in data:
            sized.append((abs(data.count(b"\n") - 2000), str(f)))
    if not sized:
        return None
    target = min(sized)[1]
    print(f"[lsp] {target}...", file=sys.stderr)
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_lsp.py"), "--file", target, "--json"],
                          cwd=work, env=tool_env(work), capture_output=True, text=True, timeout=900)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return {"error": (proc.stderr or proc.stdout)[-500:]}


def load_note() -> str:
    """The load average while the benchmark ran: figures taken on a busy machine say so."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return ""
    cores = len(os.sched_getaffinity(0))
    busy = " — the machine was busy with other work, so every figure is inflated" if five > cores * 0.75 else ""
    return f"Load average at the end: {one:.1f} (1 min), {five:.1f} (5 min) on {cores} cores{busy}."


def table(corpus: Corpus, timings: list[Timing], stats: dict, memory: list, lsp: dict | None = None) -> str:
    out = [
        "# jaxfuse-lint: speed and memory",
        "",
        f"Machine: {machine()}.",
        f"Date: {time.strftime('%Y-%m-%d')}. Command: `python benchmarks/bench_lint.py {' '.join(sys.argv[1:])}`"
        " (wall-clock; with --repeat, the fastest run of each).",
        "",
        f"Corpus: the {', '.join(f'`{p}`' for p in corpus.packages)} source: {len(corpus.files)} files, "
        f"{corpus.lines:,} lines, {corpus.bytes / 1e6:.1f} MB.",
        load_note(),
        "",
        "| tool | cores | processes | wall (s) | files/s | lines/s | × parse floor |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    floors = {t.cores: t.seconds for t in timings if t.tool.startswith("libcst parse") and t.seconds}
    for t in timings:
        if t.seconds is None:
            why = t.note.strip().splitlines()[-1] if t.note.strip() else "failed"
            out.append(f"| {t.tool} | {t.cores} | {t.processes} | — | — | — | {why} |")
            continue
        floor = floors.get(t.cores)
        ratio = f"{t.seconds / floor:.2f}" if floor else "—"
        wall = f"{t.seconds:.2f}" if t.seconds < 10 else f"{t.seconds:.1f}"
        out.append(f"| {t.tool} | {t.cores} | {t.processes} | {wall} | {len(corpus.files) / t.seconds:.0f} | "
                   f"{corpus.lines / t.seconds:,.0f} | {ratio} |")
    cold = {t.cores: t.seconds for t in timings if t.tool == "jaxfuse-lint, cold" and t.seconds}
    warm = {t.cores: t.seconds for t in timings if t.tool.startswith("jaxfuse-lint, warm") and t.seconds}
    out.append("")
    for cores in sorted(cold):
        if cores in warm:
            out.append(f"- Warm re-run on {cores} core(s): {cold[cores] / warm[cores]:.0f}× faster than cold.")
    if lsp and "error" not in lsp:
        out.append(f"- Language server, `{Path(lsp['file']).name}` ({lsp['lines']:,} lines), full-text sync: "
                   f"keystroke -> publishDiagnostics median {lsp['median_s'] * 1000:.0f} ms, "
                   f"p90 {lsp['p90_s'] * 1000:.0f} ms over 20 edits that append a comment; median "
                   f"{lsp['code_median_s'] * 1000:.0f} ms, p90 {lsp['code_p90_s'] * 1000:.0f} ms over 20 that insert "
                   f"a statement into a function. In process, `check_source` on an edited text takes "
                   f"{lsp['floor_s'] * 1000:.0f} ms with a full parse, {lsp['incremental_floor_s'] * 1000:.0f} ms and "
                   f"{lsp['incremental_code_floor_s'] * 1000:.0f} ms with the server's incremental parser. Typing 20 "
                   f"edits 30 ms apart: {lsp['typing_published']} version(s) got diagnostics (the others were coalesced "
                   f"or dropped as outdated), the last "
                   f"{lsp['typing_last_s'] * 1000:.0f} ms after the last keystroke.")
    elif lsp:
        out.append(f"- Language server benchmark failed: {lsp['error'].strip().splitlines()[-1] if lsp['error'].strip() else '?'}")
    if stats:
        out.append(f"- The cold run's counters (`RunResult.stats`, all cores): {json.dumps(stats)}. `reanalysed` files "
                   "are in import cycles: they were analysed before every module that traces them was, and again "
                   "once their `external_traced` map was final.")
    if memory:
        out += ["", "Peak memory (RSS) of `check_files(..., jobs=1)` on evenly spread subsets (each with the "
                "largest JAX file):", "", "| files | lines | coordinator (MB) | worker (MB) |", "|---:|---:|---:|---:|"]
        for k, lines, coord, worker in memory:
            out.append(f"| {k} | {lines:,} | {coord:.0f} | {worker:.0f} |")
    return "\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--_memory-probe":
        _memory_probe(sys.argv[2])
        return 0
    if len(sys.argv) > 3 and sys.argv[1] == "--_stats-probe":
        _stats_probe(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package", action="append", help="installed packages to use (default: jax and any other "
                    "installed JAX library)")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)), help="processes for the all-cores runs")
    ap.add_argument("--output", default=str(ROOT / "benchmarks" / "results.md"))
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement, the fastest kept (Fixit: one run)")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-others", action="store_true", help="only the parse floor and jaxfuse-lint")
    ap.add_argument("--skip-lsp", action="store_true", help="no language server latency")
    ap.add_argument("--corpus", type=Path, default=None, help="a directory of Python files (a checkout) to use "
                    "instead of installed packages")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="jaxfuse-bench-") as tmp:
        work = Path(tmp)
        if args.corpus is not None:
            corpus = corpus_from_directory(args.corpus.resolve(), work / "corpus")
        else:
            corpus = build_corpus(args.package or list(DEFAULT_PACKAGES), work / "corpus")
        tool_copy(work)
        if not corpus.files:
            print("no corpus: jax is not installed", file=sys.stderr)
            return 1
        print(f"corpus: {', '.join(corpus.packages)}: {len(corpus.files)} files, {corpus.lines} lines", file=sys.stderr)
        timings, stats = measure_speed(corpus, args.jobs, args.skip_others, work, args.repeat)
        lsp = None if args.skip_lsp else measure_lsp(corpus, work)
        memory = [] if args.skip_memory else measure_memory(corpus, work)
        report = table(corpus, timings, stats, memory, lsp)
    Path(args.output).write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
