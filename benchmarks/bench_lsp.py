"""Language server latency: keystroke -> publishDiagnostics on a real ~2,000-line file.

Starts the real server (`python -m jaxfuse_lint server`) over stdio and drives it with
pygls's client and lsprotocol types, as an editor does with full-text sync:

- open the file and wait for its first diagnostics (the server's start, imports included);
- 20 edits, one at a time: each appends a comment to a line in the middle of the file (the
  text stays valid, so every edit costs an analysis) and waits for the diagnostics of that
  version; median and p90 of the latencies;
- 20 more that change code: each inserts a statement into the function body nearest the
  middle of the file (`_edit_<i> = <i>`, at that body's indentation);
- typing: 20 edits sent 30 ms apart without waiting; the latency from the last keystroke to
  the diagnostics of the last version, and how many versions got diagnostics (the rest
  were coalesced or dropped as stale);
- the floors, in this process: `check_source` on an edited text with a full parse (parse,
  model, rules), and with the server's incremental parser (reparse.py) after the previous
  version, for both kinds of edit.

    python benchmarks/bench_lsp.py [--file PATH] [--edits 20] [--json]

Without --file it picks the installed Python file (jax, flax, ...) closest to 2,000 lines.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("flax", "jax", "optax", "equinox")


def default_file(target: int = 2000) -> Path | None:
    best: tuple[int, str] | None = None
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for path in sorted(Path(list(spec.submodule_search_locations)[0]).rglob("*.py")):
            try:
                n = path.read_text(encoding="utf-8").count("\n")
            except (OSError, UnicodeDecodeError):
                continue
            if "import jax" in path.read_text(encoding="utf-8") and (best is None or abs(n - target) < best[0]):
                best = (abs(n - target), str(path))
    return Path(best[1]) if best else None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def edited(text: str, i: int) -> str:
    lines = text.splitlines(keepends=True)
    row = len(lines) // 2
    while row < len(lines) - 1 and not lines[row].strip():
        row += 1
    line = lines[row].rstrip("\r\n")
    lines[row] = f"{line}  # edit {i}\n"
    return "".join(lines)


def code_edited(text: str, i: int) -> str:
    """`_edit_<i> = <i>` inserted before the statement of a function body nearest the middle."""
    import ast

    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    body_statements = [node for node in ast.walk(ast.parse(text))
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for node in node.body]
    target = min(body_statements, key=lambda n: abs(n.lineno - middle))
    row = target.lineno - 1
    if hasattr(target, "decorator_list") and target.decorator_list:
        row = target.decorator_list[0].lineno - 1
    indent = " " * target.col_offset
    lines.insert(row, f"{indent}_edit_{i} = {i}\n")
    return "".join(lines)


async def drive(path: Path, edits: int, interval: float) -> dict:
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("jaxfuse-lint-bench", "1")
    published: dict[int, float] = {}
    arrived = asyncio.Event()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(ls, params: types.PublishDiagnosticsParams) -> None:
        published[params.version or 0] = time.perf_counter()
        arrived.set()

    async def wait_for(version: int, timeout: float = 120.0) -> float:
        deadline = time.perf_counter() + timeout
        while version not in published:
            arrived.clear()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"no diagnostics for version {version}")
            try:
                await asyncio.wait_for(arrived.wait(), left)
            except asyncio.TimeoutError:
                pass
        return published[version]

    uri = path.resolve().as_uri()
    text = path.read_text(encoding="utf-8")
    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "jaxfuse_lint", "server", cwd=str(path.parent))
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=path.parent.resolve().as_uri()))
    client.initialized(types.InitializedParams())
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    first = await wait_for(1) - started

    version = 1
    latencies: dict[str, list[float]] = {"comment": [], "code": []}
    for kind, edit in (("comment", edited), ("code", code_edited)):
        for i in range(edits):
            version += 1
            new = edit(text, i)
            sent = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=new)]))
            latencies[kind].append(await wait_for(version) - sent)

    before = len(published)
    for i in range(edits):
        version += 1
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [types.TextDocumentContentChangeWholeDocument(text=edited(text, 100 + i))]))
        if i < edits - 1:
            await asyncio.sleep(interval)
    typing_latency = await wait_for(version) - sent
    typing_published = len(published) - before

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {"first": first, "latencies": latencies, "typing_latency": typing_latency,
            "typing_published": typing_published, "typing_edits": edits}


def floors(path: Path, repeat: int = 5) -> dict[str, float]:
    """Median seconds of `check_source` on edited texts: with a full parse, and with the
    incremental parser after the previous version (per kind of edit)."""
    sys.path.insert(0, str(ROOT))
    from jaxfuse_lint.core.config import load_settings
    from jaxfuse_lint.engine.pipeline import check_source
    from jaxfuse_lint.parse.reparse import IncrementalParser

    text = path.read_text(encoding="utf-8")
    settings = load_settings(None, start=str(path.parent))
    check_source(text, str(path), settings)  # imports and first-use costs, which the server has paid
    out = {}
    full = []
    for i in range(repeat):
        t = time.perf_counter()
        check_source(edited(text, i), str(path), settings)
        full.append(time.perf_counter() - t)
    out["full"] = statistics.median(full)
    for kind, edit in (("comment", edited), ("code", code_edited)):
        parser = IncrementalParser()
        check_source(text, str(path), settings, parse=parser.parse)
        times = []
        for i in range(repeat):
            new = edit(text, i)
            t = time.perf_counter()
            check_source(new, str(path), settings, parse=parser.parse)
            times.append(time.perf_counter() - t)
        out[kind] = statistics.median(times)
    return out


def measure(path: Path, edits: int = 20, interval: float = 0.03) -> dict:
    out = asyncio.run(drive(path, edits, interval))
    lat = out["latencies"]
    f = floors(path)
    return {
        "file": str(path), "lines": path.read_text(encoding="utf-8").count("\n"),
        "first_diagnostics_s": out["first"],
        "median_s": statistics.median(lat["comment"]), "p90_s": percentile(lat["comment"], 0.9),
        "code_median_s": statistics.median(lat["code"]), "code_p90_s": percentile(lat["code"], 0.9),
        "typing_last_s": out["typing_latency"],
        "typing_published": out["typing_published"], "typing_edits": out["typing_edits"],
        "floor_s": f["full"], "incremental_floor_s": f["comment"], "incremental_code_floor_s": f["code"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=None)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = ap.parse_args()
    path = args.file or default_file()
    if path is None:
        sys.exit("bench_lsp: no file given and no installed JAX library found")
    r = measure(path, args.edits)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(f"{r['file']} ({r['lines']} lines)")
    print(f"  open -> first diagnostics (server start included): {r['first_diagnostics_s'] * 1000:.0f} ms")
    print(f"  edit -> diagnostics, {args.edits} comment edits one at a time: median {r['median_s'] * 1000:.0f} ms, "
          f"p90 {r['p90_s'] * 1000:.0f} ms")
    print(f"  edit -> diagnostics, {args.edits} code edits one at a time: median {r['code_median_s'] * 1000:.0f} ms, "
          f"p90 {r['code_p90_s'] * 1000:.0f} ms")
    print(f"  typing ({args.edits} edits 30 ms apart): last keystroke -> its diagnostics "
          f"{r['typing_last_s'] * 1000:.0f} ms; {r['typing_published']} of {r['typing_edits']} versions got diagnostics")
    print(f"  floors, in process: check_source with a full parse {r['floor_s'] * 1000:.0f} ms; with the incremental "
          f"parser {r['incremental_floor_s'] * 1000:.0f} ms (comment edit), {r['incremental_code_floor_s'] * 1000:.0f} ms "
          f"(code edit)")


if __name__ == "__main__":
    main()
