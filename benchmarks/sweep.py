"""Precision sweep over public JAX repositories, with per-finding verdicts kept between runs.

    python benchmarks/sweep.py --src /tmp/sweep                    # check every repository, diff, precision
    python benchmarks/sweep.py --src /tmp/sweep --no-run           # reuse the last run's findings
    python benchmarks/sweep.py --src /tmp/sweep --no-run --review --rule JF201 --limit 20
    python benchmarks/sweep.py --src /tmp/sweep --no-run --judge verdicts.txt
    python benchmarks/sweep.py --src /tmp/sweep --no-run --write-doc
    python benchmarks/sweep.py --src /tmp/sweep --fetch            # clone missing trees (needs network)
    python benchmarks/sweep.py --src /tmp/sweep --git-dirs '/work/.mirror/{owner}+{repo}/repo'   # or from local clones

The repositories, with the commit each was reviewed at, are listed in
`benchmarks/sweep_repos.toml`; their trees live outside this repository, at `SRC/<name>`
(nothing of theirs is committed). Each is checked with
`jaxfuse-lint check --no-cache --output-format json` and the default settings (this checkout's
code: the harness puts the repository root first on PYTHONPATH), timed, and the findings are
kept in `SRC/_results/<name>.json` so that `--no-run` can review and judge without checking again.

Verdicts live in `benchmarks/sweep_verdicts.json`, one entry per reviewed finding: TP (the
claim is true and the advice applies), FP (the claim is false, or following the advice breaks
the code) or useless (true, but not worth acting on: test code run once, a tiny constant),
each with a reason. A finding's key survives line shifts: the repository, the file's path,
the rule, the enclosing function's qualified name, a hash of the reported line's text with
its whitespace collapsed, and which occurrence of that (repo, path, rule, function, line) it
is (in reading order). Only that hash and a one-line snippet of at most 100 characters of the
reported line are stored, never more of the file.

Every run diffs the findings against the verdicts: NEW findings (no verdict yet) and GONE
verdicts (their finding no longer reported; a GONE true positive is a lost finding and is
printed loudly, with exit status 1 under --strict), then precision, TP / (TP + FP) on the
decisive findings, per rule and per repository. `--review` prints unreviewed findings with
six lines of context on each side and an id; `--judge FILE` reads lines `ID[,ID...] VERDICT
reason` (VERDICT: TP, FP or useless; `#` starts a comment line) and records them.
`--write-doc` rewrites the tables between the sweep markers of docs/accuracy.md.
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parent.parent
REPOS_FILE = ROOT / "benchmarks" / "sweep_repos.toml"
VERDICTS_FILE = ROOT / "benchmarks" / "sweep_verdicts.json"
DOC_FILE = ROOT / "docs" / "accuracy.md"
DOC_START = "<!-- sweep-tables:start (written by benchmarks/sweep.py --write-doc) -->"
DOC_END = "<!-- sweep-tables:end -->"
VERDICTS = ("TP", "FP", "useless")
SNIPPET_CHARS = 100
CONTEXT = 6


# ----------------------------------------------------------------------------- findings and keys

@dataclass(frozen=True)
class Finding:
    repo: str
    path: str  # relative to the repository's root, '/'-separated
    code: str
    row: int  # in the file, or in the cell for a notebook
    column: int
    message: str
    cell: int | None = None  # notebook cell, 1-based among all cells
    function: str = ""  # enclosing function's qualified name ("" at module level)
    line: str = ""  # the reported line's text, whitespace collapsed
    occurrence: int = 0
    fix: str | None = None  # "safe" / "unsafe" / None

    @property
    def base(self) -> tuple[str, str, str, str, str]:
        return (self.repo, self.path, self.code, self.function, line_hash(self.line))

    @property
    def key(self) -> str:
        return make_key(self.repo, self.path, self.code, self.function, line_hash(self.line), self.occurrence)

    @property
    def id(self) -> str:
        return short_id(self.key)

    @property
    def where(self) -> str:
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.repo}:{self.path}:{cell}{self.row}:{self.column}"


def normalize(text: str) -> str:
    """A line's text with its whitespace collapsed (indentation and spacing changes keep the key)."""
    return " ".join(text.split())


def line_hash(text: str) -> str:
    return hashlib.sha1(normalize(text).encode("utf-8")).hexdigest()[:12]


def make_key(repo: str, path: str, code: str, function: str, lhash: str, occurrence: int) -> str:
    return f"{repo}|{path}|{code}|{function}|{lhash}|{occurrence}"


def short_id(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:8]


def snippet(text: str) -> str:
    text = normalize(text)
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 3] + "..."


_DEF_RE = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")


def enclosing_function(source: str, row: int) -> str:
    """The qualified name (`Class.method.inner`) of the innermost function containing ROW.

    Classes count in the name, but a row in a class body outside any method is at "module
    level" for the purpose of the key only if no function contains it: the name is then
    the class path. Unparsable sources fall back to an indentation scan.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _enclosing_by_indent(source.splitlines(), row)
    best: list[str] = []

    def visit(node: ast.AST, path: list[str]) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                start = min([child.lineno] + [d.lineno for d in child.decorator_list])
                end = getattr(child, "end_lineno", None) or child.lineno
                if start <= row <= end:
                    here = path + [child.name]
                    if len(here) > len(best):
                        best = here
                    visit(child, here)
                    continue
            visit(child, path)

    visit(tree, [])
    return ".".join(best)


def _enclosing_by_indent(lines: list[str], row: int) -> str:
    if not 1 <= row <= len(lines):
        return ""
    text = lines[row - 1]
    indent = len(text) - len(text.lstrip()) if text.strip() else 10**9
    names: list[str] = []
    m = _DEF_RE.match(text)
    if m:
        names.append(m.group(2))
        indent = len(m.group(1))
    for r in range(row - 2, -1, -1):
        m = _DEF_RE.match(lines[r])
        if m and len(m.group(1)) < indent:
            names.append(m.group(2))
            indent = len(m.group(1))
            if indent == 0:
                break
    return ".".join(reversed(names))


def _masked_cell(source: str) -> str:
    """A notebook cell with IPython lines (`%magic`, `!shell`, `x = !cmd`) blanked for `ast`."""
    out = []
    for text in source.splitlines():
        s = text.strip()
        if s.startswith(("%", "!", "?")) or re.match(r"^[\w., ]+=\s*[!%]", s) or s.endswith("?"):
            out.append(text[: len(text) - len(text.lstrip())] + "pass")
        else:
            out.append(text)
    return "\n".join(out)


def assign_occurrences(findings: list[Finding]) -> list[Finding]:
    """Number findings sharing a base key (same repo, path, rule, function, line text) in reading order."""
    ordered = sorted(findings, key=lambda f: (f.repo, f.path, f.cell or 0, f.row, f.column, f.code))
    seen: Counter = Counter()
    out = []
    for f in ordered:
        n = seen[f.base]
        seen[f.base] += 1
        out.append(Finding(**{**f.__dict__, "occurrence": n}))
    return out


class SourceCache:
    """Reads the checked files (and notebook cells) once."""

    def __init__(self, tree: Path):
        self.tree = tree
        self._files: dict[str, str] = {}
        self._cells: dict[str, list[str]] = {}

    def text(self, path: str) -> str:
        if path not in self._files:
            try:
                self._files[path] = (self.tree / path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._files[path] = ""
        return self._files[path]

    def cell(self, path: str, cell: int) -> str:
        if path not in self._cells:
            try:
                nb = json.loads(self.text(path))
                cells = []
                for c in nb.get("cells", []):
                    src = c.get("source", "")
                    cells.append("".join(src) if isinstance(src, list) else str(src))
                self._cells[path] = cells
            except (ValueError, AttributeError):
                self._cells[path] = []
        cells = self._cells[path]
        return cells[cell - 1] if 1 <= cell <= len(cells) else ""

    def source_of(self, path: str, cell: int | None) -> str:
        return self.cell(path, cell) if cell is not None else self.text(path)


def findings_from_json(repo: str, tree: Path, diagnostics: list[dict],
                       sources: SourceCache | None = None) -> list[Finding]:
    """The linter's JSON diagnostics as keyed findings (paths made relative to TREE)."""
    sources = sources or SourceCache(tree)
    out = []
    for d in diagnostics:
        filename = Path(d["filename"])
        try:
            rel = filename.resolve().relative_to(tree.resolve()).as_posix()
        except ValueError:
            rel = filename.as_posix()
        row, col = d["location"]["row"], d["location"]["column"]
        cell = d.get("cell")
        source = sources.source_of(rel, cell)
        lines = source.splitlines()
        text = lines[row - 1] if 1 <= row <= len(lines) else ""
        func = enclosing_function(_masked_cell(source) if cell is not None else source, row)
        fix = d.get("fix")
        applicability = fix.get("applicability") if isinstance(fix, dict) else None
        out.append(Finding(repo=repo, path=rel, code=d["code"], row=row, column=col, message=d.get("message", ""),
                           cell=cell, function=func, line=normalize(text), fix=applicability))
    return assign_occurrences(out)


# ----------------------------------------------------------------------------- verdicts

@dataclass
class Verdict:
    repo: str
    path: str
    code: str
    function: str
    line_hash: str
    occurrence: int
    verdict: str
    reason: str
    snippet: str = ""
    row: int | None = None  # where it was when reviewed (informational, not part of the key)
    cell: int | None = None

    @property
    def key(self) -> str:
        return make_key(self.repo, self.path, self.code, self.function, self.line_hash, self.occurrence)

    def to_json(self) -> dict:
        d = {"repo": self.repo, "path": self.path, "code": self.code, "function": self.function,
             "line_hash": self.line_hash, "occurrence": self.occurrence, "snippet": self.snippet,
             "row": self.row, "verdict": self.verdict, "reason": self.reason}
        if self.cell is not None:
            d["cell"] = self.cell
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        if d["verdict"] not in VERDICTS:
            raise ValueError(f"unknown verdict {d['verdict']!r} for {d.get('path')}")
        return cls(repo=d["repo"], path=d["path"], code=d["code"], function=d.get("function", ""),
                   line_hash=d["line_hash"], occurrence=int(d.get("occurrence", 0)), verdict=d["verdict"],
                   reason=d.get("reason", ""), snippet=d.get("snippet", ""), row=d.get("row"), cell=d.get("cell"))

    @classmethod
    def of(cls, f: Finding, verdict: str, reason: str) -> "Verdict":
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
        return cls(repo=f.repo, path=f.path, code=f.code, function=f.function, line_hash=line_hash(f.line),
                   occurrence=f.occurrence, verdict=verdict, reason=reason, snippet=snippet(f.line), row=f.row,
                   cell=f.cell)


def load_verdicts(path: Path) -> dict[str, Verdict]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for d in data.get("verdicts", []):
        v = Verdict.from_json(d)
        out[v.key] = v
    return out


def dump_verdicts(verdicts: dict[str, Verdict]) -> str:
    entries = sorted(verdicts.values(), key=lambda v: (v.repo, v.path, v.code, v.row or 0, v.function, v.occurrence))
    body = {"about": "Per-finding verdicts of benchmarks/sweep.py (TP / FP / useless, with a reason). "
                     "Keys: repo, path, code, enclosing function, hash of the reported line, occurrence.",
            "verdicts": [v.to_json() for v in entries]}
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"


def parse_judgements(text: str) -> list[tuple[list[str], str, str]]:
    """Lines `ID[,ID...] VERDICT reason...`; blank lines and `#` comments are skipped."""
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            raise ValueError(f"line {n}: expected `ID VERDICT reason`, got {raw!r}")
        ids, verdict, reason = parts
        if verdict.lower() == "useless":
            verdict = "useless"
        verdict = verdict if verdict == "useless" else verdict.upper()
        if verdict not in VERDICTS:
            raise ValueError(f"line {n}: verdict must be one of {VERDICTS}, got {parts[1]!r}")
        out.append(([i for i in ids.split(",") if i], verdict, reason.strip()))
    return out


def apply_judgements(findings: list[Finding], verdicts: dict[str, Verdict],
                     judgements: list[tuple[list[str], str, str]]) -> tuple[int, list[str]]:
    """Record JUDGEMENTS (by finding id) into VERDICTS; returns (how many, unknown ids)."""
    by_id = {f.id: f for f in findings}
    done, unknown = 0, []
    for ids, verdict, reason in judgements:
        for i in ids:
            f = by_id.get(i)
            if f is None:
                unknown.append(i)
                continue
            verdicts[f.key] = Verdict.of(f, verdict, reason)
            done += 1
    return done, unknown


# ----------------------------------------------------------------------------- diff and precision

@dataclass
class Diff:
    new: list[Finding] = field(default_factory=list)  # reported, no verdict
    gone: list[Verdict] = field(default_factory=list)  # verdict, no longer reported
    kept: list[tuple[Finding, Verdict]] = field(default_factory=list)

    @property
    def lost_tps(self) -> list[Verdict]:
        return [v for v in self.gone if v.verdict == "TP"]


def diff(findings: list[Finding], verdicts: dict[str, Verdict], repos: Iterable[str]) -> Diff:
    """Findings against verdicts; verdicts of repositories not in REPOS (not run) are never GONE."""
    repos = set(repos)
    keys = {f.key for f in findings}
    d = Diff()
    for f in findings:
        v = verdicts.get(f.key)
        if v is None:
            d.new.append(f)
        else:
            d.kept.append((f, v))
    d.gone = [v for k, v in verdicts.items() if v.repo in repos and k not in keys]
    return d


@dataclass
class Tally:
    findings: int = 0
    tp: int = 0
    fp: int = 0
    useless: int = 0

    @property
    def reviewed(self) -> int:
        return self.tp + self.fp + self.useless

    @property
    def precision(self) -> float | None:
        decisive = self.tp + self.fp
        return self.tp / decisive if decisive else None

    def add(self, verdict: str | None) -> None:
        self.findings += 1
        if verdict == "TP":
            self.tp += 1
        elif verdict == "FP":
            self.fp += 1
        elif verdict == "useless":
            self.useless += 1


def tally(findings: list[Finding], verdicts: dict[str, Verdict], by: str,
          names: Iterable[str] = ()) -> dict[str, Tally]:
    """Counts per `code` or per `repo` (BY) of the current findings and their verdicts (NAMES: rows
    to show even without findings, e.g. every repository that was checked)."""
    out: dict[str, Tally] = defaultdict(Tally)
    for name in names:
        out[name] = Tally()
    total = Tally()
    for f in findings:
        v = verdicts.get(f.key)
        out[getattr(f, by)].add(v.verdict if v else None)
        total.add(v.verdict if v else None)
    result = dict(sorted(out.items()))
    result["all"] = total
    return result


def fmt_precision(p: float | None) -> str:
    return "–" if p is None else f"{p:.2f}"


def precision_table(tallies: dict[str, Tally], first: str, extra: dict[str, list[str]] | None = None,
                    extra_heads: list[str] | None = None) -> str:
    heads = [first] + (extra_heads or []) + ["findings", "reviewed", "TP", "FP", "useless", "precision"]
    rows = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for name, t in tallies.items():
        label = "**all**" if name == "all" else name
        cells = [label] + ((extra or {}).get(name) or [""] * len(extra_heads or [])) + [
            str(t.findings), str(t.reviewed), str(t.tp), str(t.fp), str(t.useless), fmt_precision(t.precision)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def replace_between(doc: str, start: str, end: str, body: str) -> str:
    """DOC with the text between the START and END marker lines replaced by BODY (appended if absent)."""
    block = f"{start}\n{body.rstrip()}\n{end}"
    i, j = doc.find(start), doc.find(end)
    if i == -1 or j == -1 or j < i:
        return doc.rstrip("\n") + "\n\n" + block + "\n"
    return doc[:i] + block + doc[j + len(end):]


# ----------------------------------------------------------------------------- running

@dataclass
class Repo:
    name: str
    github: str
    commit: str
    note: str = ""


def load_repos(path: Path = REPOS_FILE) -> list[Repo]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return [Repo(name=r["name"], github=r["github"], commit=r["commit"], note=r.get("note", "")) for r in data["repo"]]


def lint_command(jobs: int, preview: bool = False) -> list[str]:
    return [sys.executable, "-m", "jaxfuse_lint", "check", "--no-cache", "--exit-zero", "-j", str(jobs),
            "--output-format", "json", *(["--preview"] if preview else []), "."]


def _env(code: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["JAXFUSE_LINT_DAEMON"] = "off"  # a running daemon could be another checkout's code
    env["PYTHONPATH"] = os.pathsep.join([str(code)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_repo(repo: Repo, tree: Path, jobs: int, code: Path = ROOT, preview: bool = False) -> dict:
    """Check TREE with the linter of checkout CODE; returns {"seconds", "files", "diagnostics"}."""
    env = _env(code)
    files = subprocess.run([sys.executable, "-m", "jaxfuse_lint", "check", "--show-files", "."], cwd=tree, env=env,
                           capture_output=True, text=True)
    n_files = sum(1 for line in files.stdout.splitlines() if line.strip())
    start = time.perf_counter()
    proc = subprocess.run(lint_command(jobs, preview), cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{repo.name}: jaxfuse-lint exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return {"seconds": round(seconds, 1), "files": n_files, "diagnostics": json.loads(proc.stdout or "[]")}


def fetch_repo(repo: Repo, tree: Path) -> None:
    """Shallow-fetch REPO at its commit into TREE (read-only use; needs network)."""
    tree.mkdir(parents=True, exist_ok=True)
    git = ["git", "-C", str(tree)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["fetch", "-q", "--depth", "1", f"https://github.com/{repo.github}", repo.commit], check=True)
    subprocess.run(git + ["checkout", "-q", "FETCH_HEAD"], check=True)


def _linter_commit(code: Path = ROOT) -> str:
    """The last commit of checkout CODE that changed the linter (with `+changes` when its files differ
    from it in the working tree), for the doc's tables."""
    head = subprocess.run(["git", "-C", str(code), "log", "-1", "--format=%h", "--abbrev=12", "--", "jaxfuse_lint"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(code), "status", "--porcelain", "--untracked-files=no", "--",
                            "jaxfuse_lint"], capture_output=True, text=True)
    return (head.stdout.strip() or "unknown") + ("+changes" if dirty.stdout.strip() else "")


def extract_repo(repo: Repo, tree: Path, git_dir: Path) -> int:
    """Write REPO's files at its commit from the (bare) git directory GIT_DIR into TREE, skipping
    blobs the directory lacks (a partial snapshot); returns how many were missing."""
    listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", repo.commit],
                             capture_output=True, check=True).stdout
    entries = []
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":
            entries.append((sha.decode(), path.decode("utf-8", "surrogateescape")))
    missing = 0
    with subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as proc:
        for sha, path in entries:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":
                missing += 1
                continue
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            target = tree / path
            if tree.resolve() not in target.resolve().parents:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        proc.stdin.close()
    return missing


def context(sources: SourceCache, f: Finding, n: int = CONTEXT) -> str:
    lines = sources.source_of(f.path, f.cell).splitlines()
    lo, hi = max(1, f.row - n), min(len(lines), f.row + n)
    return "\n".join(f"{'>>' if r == f.row else '  '}{r:5d} {lines[r - 1]}" for r in range(lo, hi + 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True, help="folder holding the extracted trees, SRC/<name>")
    ap.add_argument("--repos", type=Path, default=REPOS_FILE)
    ap.add_argument("--verdicts", type=Path, default=VERDICTS_FILE)
    ap.add_argument("--only", default="", help="comma-separated repository names (default: all)")
    ap.add_argument("--no-run", action="store_true", help="reuse SRC/_results/<name>.json from the last run")
    ap.add_argument("--fetch", action="store_true", help="shallow-clone missing trees at their commit")
    ap.add_argument("--git-dirs", metavar="TEMPLATE",
                    help="extract missing trees from local git directories, e.g. '/mirror/{owner}+{repo}/repo'")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="the jaxfuse-lint checkout to run (default: this one), e.g. a scratch merge of branches")
    ap.add_argument("--results", type=Path, help="where the findings of each run are kept (default SRC/_results)")
    ap.add_argument("--review", action="store_true", help="list unreviewed findings with code context")
    ap.add_argument("--rule", default="", help="with --review: only these rule codes (comma-separated)")
    ap.add_argument("--limit", type=int, default=0, help="with --review: at most this many")
    ap.add_argument("--judge", type=Path, help="record verdicts from lines `ID[,ID...] VERDICT reason`")
    ap.add_argument("--write-doc", action="store_true", help=f"rewrite the tables in {DOC_FILE.relative_to(ROOT)}")
    ap.add_argument("--doc", type=Path, default=DOC_FILE)
    ap.add_argument("--strict", action="store_true", help="exit 1 when a reviewed true positive is gone")
    ap.add_argument("--preview", action="store_true",
                    help="run with the preview tier on (its findings judged apart: give their own --verdicts)")
    args = ap.parse_args(argv)

    repos = load_repos(args.repos)
    if args.only:
        wanted = set(args.only.split(","))
        repos = [r for r in repos if r.name in wanted]
    results_dir = args.results or args.src / "_results"
    results_dir.mkdir(parents=True, exist_ok=True)
    verdicts = load_verdicts(args.verdicts)

    findings: list[Finding] = []
    meta: dict[str, dict] = {}
    sources: dict[str, SourceCache] = {}
    for repo in repos:
        tree = args.src / repo.name
        if not tree.is_dir():
            if args.git_dirs:
                owner, name = repo.github.split("/", 1)
                missing = extract_repo(repo, tree, Path(args.git_dirs.format(owner=owner, repo=name)))
                if missing:
                    print(f"{repo.name}: {missing} files absent from the git directory, left out", file=sys.stderr)
            elif args.fetch:
                fetch_repo(repo, tree)
            else:
                print(f"skip {repo.name}: no tree at {tree} (--fetch clones it)", file=sys.stderr)
                continue
        stored = results_dir / f"{repo.name}.json"
        if args.no_run and stored.exists():
            result = json.loads(stored.read_text(encoding="utf-8"))
        else:
            print(f"checking {repo.name} ...", file=sys.stderr, flush=True)
            result = run_repo(repo, tree, args.jobs, args.code, args.preview)
            stored.write_text(json.dumps(result), encoding="utf-8")
        sources[repo.name] = SourceCache(tree)
        found = findings_from_json(repo.name, tree, result["diagnostics"], sources[repo.name])
        findings.extend(found)
        meta[repo.name] = {"seconds": result.get("seconds"), "files": result.get("files"), "commit": repo.commit,
                           "github": repo.github}

    if args.judge:
        done, unknown = apply_judgements(findings, verdicts, parse_judgements(args.judge.read_text(encoding="utf-8")))
        args.verdicts.write_text(dump_verdicts(verdicts), encoding="utf-8")
        print(f"recorded {done} verdicts" + (f"; unknown ids: {' '.join(unknown)}" if unknown else ""))

    d = diff(findings, verdicts, meta)
    if args.review:
        rules = {r.strip().upper() for r in args.rule.split(",") if r.strip()}
        todo = [f for f in d.new if not rules or f.code in rules]
        todo.sort(key=lambda f: (f.code, f.repo, f.path, f.cell or 0, f.row))
        for f in todo[: args.limit or None]:
            fix = f" [fix: {f.fix}]" if f.fix else ""
            print(f"=== {f.id}  {f.code}  {f.where}  in {f.function or '<module>'}{fix}\n    {f.message}")
            print(context(sources[f.repo], f))
            print()
        print(f"{len(todo)} unreviewed" + (f" (showing {min(len(todo), args.limit)})" if args.limit else ""))
        return 0

    for f in d.new:
        print(f"NEW   {f.id} {f.code} {f.where} {snippet(f.line)}")
    for v in d.gone:
        loud = "GONE  *** TRUE POSITIVE LOST ***" if v.verdict == "TP" else f"GONE  ({v.verdict})"
        print(f"{loud} {v.code} {v.repo}:{v.path}:{v.row} {v.snippet}")
    by_rule, by_repo = tally(findings, verdicts, "code"), tally(findings, verdicts, "repo", meta)
    print()
    print(precision_table(by_rule, "rule"))
    print()
    print(precision_table(by_repo, "repository"))
    print(f"\n{len(d.new)} new, {len(d.gone)} gone ({len(d.lost_tps)} true positives lost), "
          f"{len(d.kept)} reviewed findings still reported")

    if args.write_doc:
        repo_extra = {name: [f"`{m['commit'][:12]}`", str(m["files"]), f"{m['seconds']} s"] for name, m in meta.items()}
        repo_extra["all"] = ["", str(sum(m["files"] or 0 for m in meta.values())),
                             f"{round(sum(m['seconds'] or 0 for m in meta.values()), 1)} s"]
        body = (f"Linter code as of commit `{_linter_commit(args.code)}`. Per repository (default settings; time: "
                f"`check --no-cache -j{args.jobs}` on a shared machine):\n\n"
                + precision_table(by_repo, "repository", repo_extra, ["commit", "files", "time"])
                + "\n\nPer rule:\n\n" + precision_table(by_rule, "rule"))
        args.doc.write_text(replace_between(args.doc.read_text(encoding="utf-8"), DOC_START, DOC_END, body),
                            encoding="utf-8")
        print(f"wrote {args.doc}")
    return 1 if args.strict and d.lost_tps else 0


if __name__ == "__main__":
    raise SystemExit(main())
