"""The `jaxfuse-lint explain` command: a line profiler for fusion."""
from __future__ import annotations

import ast
import json
import os
import sys
from typing import Any, Iterator

import click

from jaxfuse_lint.cli.output import announcing_user_code
from jaxfuse_lint.cli.verify import argument_options, compile_options
from jaxfuse_lint.verify.errors import VerifyError

# Where `jaxfuse-lint record` writes its profile by default.
DEFAULT_PROFILE = os.path.join(".jaxfuse_lint", "profile.json")

HELP = """Account for a compiled function line by line: a line profiler for fusion.

PATH::FUNC names the function. It is lowered and compiled with jax.jit for the
argument shapes (--arg, else [tool.jaxfuse-lint.verify] in pyproject.toml,
else jaxtyping annotations with --dim), and every line of FUNC is shown with
the kernels its operations run in (K1, K2, ...; the legend says which other
lines share each kernel), the temporary bytes of the buffers those kernels
write (from XLA's buffer assignment), the folded-constant bytes it introduced
and the copies or transposes XLA inserted around it. Lines of the helpers it
calls are listed after it.

With --profile FILE, nothing is compiled: the per-line accounts that
`jaxfuse-lint record` stored for PATH (or PATH::FUNC) are shown instead.
.jaxfuse_lint/profile.json is used when PATH has no ::FUNC, or when no
argument shapes are given anywhere. With --profile and --target (or --gpu),
the signatures the run recorded are compiled again for that target instead:
a run recorded on a CPU shows what XLA:GPU makes of the same calls.

The target is the config's `target` (--target; default gpu): with no GPU here,
XLA:GPU compiles for the `gpu` model (--gpu; default h100) without one when
jax's CUDA plugin is installed (the `gpu` extra:
python3 -m pip install -e '.[gpu]' in the repository).

--graph DIR writes the kernel graph, each kernel labelled by its source lines,
as FUNC.dot and FUNC.svg (drawn by Graphviz when `dot` is installed, else laid
out in pure Python).

WARNING: without --profile (or with --profile and --target/--gpu), explain
imports and runs the code under test (the module's top level and FUNC, traced
by jax.jit), and says so on stderr before it runs any. `check` never does. Run it
on code you trust.
"""


@click.command("explain", help=HELP,
               short_help="Per-source-line account of a compiled function: kernels, temporaries (runs your code).")
@click.argument("target", metavar="PATH::FUNC | PATH")
@argument_options
@compile_options
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Read the accounts stored by `jaxfuse-lint record` for PATH instead of compiling.")
@click.option("--graph", "graph_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Write the kernel graph with source-line labels to DIR (DOT and SVG).")
@click.option("--output-format", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("--backend", default=None, metavar="NAME",
              help="JAX backend to compile for (cpu, gpu, tpu), whatever the target.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="pyproject.toml or jaxfuse-lint.toml to read (default: found upward from PATH).")
def explain_command(target: str, arg_specs: tuple[str, ...], statics: tuple[str, ...], dims: tuple[str, ...],
                    compile_for: str | None, gpu: str | None, profile_path: str | None, graph_dir: str | None,
                    output_format: str, backend: str | None, config_path: str | None) -> None:
    with announcing_user_code("explain"):
        explanations, profile_path = _explanations(target, arg_specs, statics, dims, compile_for, gpu, profile_path,
                                                   backend, config_path)
    from jaxfuse_lint.runtime.explain import render_html, render_text
    from jaxfuse_lint.verify.graph_render import graph_svg, write_graph_files

    written: list[str] = []
    if graph_dir:
        for explanation in explanations:
            graph = explanation.graph()
            if graph is not None:
                stem = _unique_stem(explanation.func, written)
                written += write_graph_files(graph, graph_dir, stem)
    if output_format == "json":
        data = [e.to_json() for e in explanations]
        payload = data[0] if len(data) == 1 and not profile_path else data
        if written:
            payload = {"explanations": data, "graphs": written} if isinstance(payload, list) else {
                **payload, "graphs": written}
        click.echo(json.dumps(payload, indent=2, default=str))
    elif output_format == "html":
        pages = []
        for e in explanations:
            graph = e.graph()
            pages.append(render_html(e, svg=graph_svg(graph) if graph is not None else None))
        click.echo("\n".join(pages), nl=False)
    else:
        click.echo("\n".join(render_text(e) for e in explanations), nl=False)
        for path in written:
            click.echo(f"graph: {path}")


def _explanations(target, arg_specs, statics, dims, compile_for, gpu, profile_path, backend, config_path):
    """(the explanations, the profile they came from or None); a VerifyError is one line, exit 2."""
    try:
        if profile_path is None and "<locals>" in target and not arg_specs and os.path.exists(DEFAULT_PROFILE):
            profile_path = DEFAULT_PROFILE  # a nested function: only a recorded run has its programs
        if profile_path is None and "::" not in target:
            if not os.path.exists(DEFAULT_PROFILE):
                raise VerifyError(f"explain needs PATH::FUNC, or a profile for `{target}`: pass --profile FILE "
                                  f"(no {DEFAULT_PROFILE} here)")
            profile_path = DEFAULT_PROFILE
        if profile_path and (compile_for or gpu):
            explanations = explanations_recompiled(profile_path, target, compile_for=compile_for, gpu=gpu,
                                                   backend=backend, config_path=config_path)
        elif profile_path:
            explanations = explanations_from_profile(profile_path, target)
        else:
            try:
                explanations = [explain_target(target, arg_specs=arg_specs, statics=statics, dims=dims,
                                               backend=backend, config_path=config_path, compile_for=compile_for,
                                               gpu=gpu)]
            except VerifyError as exc:
                # No shapes given anywhere: what a recorded run traced is the next best source.
                if "no argument shapes" not in str(exc) or not os.path.exists(DEFAULT_PROFILE):
                    raise
                profile_path = DEFAULT_PROFILE
                explanations = explanations_from_profile(profile_path, target)
    except VerifyError as exc:
        click.echo(f"jaxfuse-lint explain: error: {exc}", err=True)
        sys.exit(2)
    return explanations, profile_path


def _unique_stem(name: str, written: list[str]) -> str:
    taken = {os.path.splitext(os.path.basename(p))[0] for p in written}
    stem, n = name, 2
    while stem in taken:
        stem, n = f"{name}.{n}", n + 1
    return stem


def explain_target(target: str, *, arg_specs: tuple[str, ...] = (), statics: tuple[str, ...] = (),
                   dims: tuple[str, ...] = (), backend: str | None = None, config_path: str | None = None,
                   compile_for: str | None = None, gpu: str | None = None) -> Any:
    """What `explain PATH::FUNC` does, returning the Explanation (raises VerifyError). `compile_for`
    and `gpu` override the config's `target` and `gpu`."""
    from jaxfuse_lint.verify.api import _check_x64, _import_jax, resolve_arg_specs
    from jaxfuse_lint.verify.backend import for_settings
    from jaxfuse_lint.cli.verify import _load_settings
    from jaxfuse_lint.verify.loader import get_function, load_module, parse_target, read_source
    from jaxfuse_lint.verify.shapes import parse_arg_spec, parse_dims, parse_static, specs_from_annotations

    parsed = parse_target(target)
    if "<locals>" in parsed.func:
        raise VerifyError(f"`{parsed.func}` is a nested function, made when its enclosing function runs: explain "
                          "reads its programs from a recorded run (`jaxfuse-lint record -- COMMAND`, then "
                          "`explain --profile FILE`)")
    source = read_source(parsed.path)
    settings = _load_settings(config_path, parsed.path, compile_for, gpu)
    dim_sizes = parse_dims(dims)
    static = dict(parse_static(item) for item in statics)
    resolved = resolve_arg_specs(source, parsed.func, filename=parsed.path, settings=settings,
                                 cli_args=arg_specs, cli_static=static, dims=dim_sizes)
    texts = resolved.args
    if texts is None:
        texts = specs_from_annotations(source, parsed.func, skip=tuple(resolved.static), where=parsed.path) or []
    specs = [parse_arg_spec(text, dim_sizes) for text in texts]
    jax = _import_jax()
    compile_target = for_settings(settings, backend)
    _check_x64(jax, specs)
    module = load_module(source, parsed.path, label="explained")
    func = get_function(module, parsed.func, parsed.path)

    from jaxfuse_lint.runtime.explain import explain_function

    explanation = explain_function(func, specs, resolved.static, target=str(parsed), compile_target=compile_target)
    if resolved.origin not in ("--arg", "no array arguments"):
        explanation.notes.insert(0, f"argument shapes from {resolved.origin}")
    from jaxfuse_lint.verify.loader import notebook_note

    if (note := notebook_note(parsed.path)) is not None:
        explanation.notes.append(note)
    return explanation


# --- profiles ------------------------------------------------------------------------------


def explanations_recompiled(profile_path: str, path: str, *, compile_for: str | None = None,
                            gpu: str | None = None, backend: str | None = None,
                            config_path: str | None = None) -> list[Any]:
    """Explanations for PATH's recorded entry points, each recorded signature compiled again for the
    target (`verify/backend.py`): the GPU's kernels and temporaries from a run recorded on a CPU.
    Imports and runs PATH's module, like `explain PATH::FUNC`."""
    from jaxfuse_lint.runtime.explain import explain_function
    from jaxfuse_lint.core.profile import ProfileError, load_profile
    from jaxfuse_lint.runtime.verify_profile import case_for
    from jaxfuse_lint.verify.api import _check_x64
    from jaxfuse_lint.verify.backend import for_settings, import_jax
    from jaxfuse_lint.cli.verify import _load_settings
    from jaxfuse_lint.verify.loader import get_function, load_module, read_source
    from jaxfuse_lint.verify.shapes import parse_arg_spec

    path, _, wanted = path.partition("::")
    try:
        profile = load_profile(profile_path)
    except ProfileError as exc:
        raise VerifyError(str(exc)) from None
    if not os.path.exists(path):
        raise VerifyError(f"{path}: no such file")
    entries = [e for e in profile.entries_in(path)
               if not wanted or _same_function(wanted, e.get("qualname", ""))
               or e.get("qualname", "").split(".")[-1] == wanted.split(".")[-1] and "." not in wanted]
    if not entries:
        raise VerifyError(f"{profile_path}: no entry point recorded for the current text of {path}"
                          + (f"::{wanted}" if wanted else "") + " (changed since, or not traced while recording)")
    settings = _load_settings(config_path, path, compile_for, gpu)
    jax = import_jax()
    compile_target = for_settings(settings, backend)
    module = load_module(read_source(path), path, label="explained")
    out, skipped = [], []
    for entry in entries:
        func_name = entry.get("qualname", "")
        seen: set[str] = set()
        for sig in entry.get("signatures", []):
            case, why = case_for(entry, sig)
            if case is None or "<" in func_name:
                skipped.append(f"{path}::{func_name}: {why or 'not a module-level function'}")
                continue
            key = repr((case.args, sorted(case.static.items())))
            if key in seen:
                continue
            seen.add(key)
            specs = [parse_arg_spec(text, {}) for text in case.args]
            _check_x64(jax, specs)
            explanation = explain_function(get_function(module, func_name, path), specs, case.static,
                                           target=f"{path}::{func_name}", compile_target=compile_target)
            explanation.notes.insert(0, f"signature recorded in {profile_path}"
                                        + (f" ({case.where})" if case.where else "")
                                        + f" on {str(sig.get('backend') or '?').upper()}, compiled again")
            out.append(explanation)
    if not out:
        raise VerifyError(f"no recorded signature can be compiled again: {skipped[0]}")
    if skipped:
        out[0].notes.append(f"{len(skipped)} recorded signature(s) not compiled again: {'; '.join(skipped[:3])}")
    return out


def explanations_from_profile(profile_path: str, path: str) -> list[Any]:
    """Explanations for PATH from the per-line accounts a profile stores (no compiling)."""
    from jaxfuse_lint.verify.attribution import Attribution
    from jaxfuse_lint.runtime.explain import Explanation

    try:
        with open(profile_path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise VerifyError(f"{profile_path}: profile not found (write one with `jaxfuse-lint record -- COMMAND`)") \
            from None
    except (OSError, json.JSONDecodeError) as exc:
        raise VerifyError(f"{profile_path}: not a readable profile: {exc}") from None
    if isinstance(data, dict):
        from jaxfuse_lint.core.profile import with_costs_inline

        data = with_costs_inline(data)  # each program's account is stored once; read per compilation
    if "::" in path:
        path, _, wanted = path.rpartition("::")
    else:
        wanted = None
    if not os.path.exists(path):
        raise VerifyError(f"{path}: no such file")
    spans = _function_spans(path)
    digest = _text_digest(path)
    out = []
    stale = 0
    for chain, stored in _stored_attributions(data, []):
        try:
            attribution = Attribution.from_json(stored)
        except (TypeError, ValueError, KeyError) as exc:
            raise VerifyError(f"{profile_path}: a stored per-line account is malformed: {exc}") from None
        lines = [a.line for a in attribution.lines_in(path)]
        if not lines:
            continue
        recorded = _nearest(chain, "sha256")
        if recorded and _nearest(chain, "file") and _same_path(_nearest(chain, "file"), path) and recorded != digest:
            stale += 1  # the file changed since the run: its line numbers may no longer hold
            continue
        name = next((_context_name(c) for c in chain if _context_name(c)), None)
        under = None  # the entry point FUNC was traced under, when FUNC is a helper it calls
        if wanted is not None:
            # FUNC itself, where this account has lines of it: its own entry's, or one it was traced under.
            span = _enclosing_span(spans, [], wanted)
            if span is None or span[0].split(".")[-1] != wanted.split(".")[-1]:
                raise VerifyError(f"{path}: no function `{wanted}`")
            if not any(span[1] <= line <= span[2] for line in lines):
                continue
            if name and not _same_function(name, span[0]):
                under = name
        else:
            span = _enclosing_span(spans, lines, name)  # the entry it was recorded for, first
        if span is None:
            continue
        func, first, last = span
        explanation = Explanation(
            target=f"{path}::{func}", file=path, func=func, first_line=first, last_line=last,
            attribution=attribution, args=_recorded_args(chain),
            environment={"backend": attribution.backend or _nearest(chain, "backend") or ""},
        )
        where = _nearest(chain, "where")
        explanation.notes.append(f"from {profile_path}" + (f" ({where})" if where else ""))
        if under:
            explanation.notes.append(f"`{func}` was traced inside `{under}` (its program is accounted here)")
        out.append(explanation)
    if not out and stale:
        raise VerifyError(f"{profile_path}: {path} changed since it was recorded ({stale} stale account"
                          f"{'s' if stale != 1 else ''}): record again")
    if not out:
        suffix = f"::{wanted}" if wanted else ""
        if _was_recorded(data, path, wanted):
            raise VerifyError(f"{profile_path}: {path}{suffix} was traced while recording, but the profile keeps "
                              f"no per-line account of its programs (recorded without costs?): record again, or "
                              f"compile it here with `jaxfuse-lint explain {path}::FUNC --arg ...`")
        raise VerifyError(f"{profile_path}: no per-line account for {path}{suffix}: nothing in it was traced "
                          f"while recording (run code that calls it under `jaxfuse-lint record`)")
    return out


def _was_recorded(data: Any, path: str, wanted: str | None) -> bool:
    """Whether the profile's entries or traced functions name PATH (and FUNC)."""
    if not isinstance(data, dict):
        return False
    for key in ("entries", "functions"):
        for item in data.get(key) or []:
            if not isinstance(item, dict) or not isinstance(item.get("file"), str):
                continue
            if not _same_path(item["file"], path):
                continue
            qualname = str(item.get("qualname") or "")
            if wanted is None or qualname.split(".")[-1] == wanted.split(".")[-1]:
                return True
    return False


def _stored_attributions(data: Any, chain: list[dict]) -> Iterator[tuple[list[dict], dict]]:
    """Every stored Attribution.to_json() in a profile, with the dicts that hold it, innermost first."""
    if isinstance(data, dict):
        if "kernels" in data and "lines" in data and "temp_source" in data:
            yield chain, data
            return
        for value in data.values():
            yield from _stored_attributions(value, [data, *chain])
    elif isinstance(data, list):
        for value in data:
            yield from _stored_attributions(value, chain)


def _nearest(chain: list[dict], key: str) -> Any:
    return next((c[key] for c in chain if isinstance(c.get(key), (str, int)) and c.get(key) != ""), None)


def _recorded_args(chain: list[dict]) -> list[str]:
    """The argument shapes the account was compiled for, when the profile says."""
    for i, c in enumerate(chain):
        if isinstance(c.get("args"), list) and all(isinstance(a, str) for a in c["args"]):
            return list(c["args"])
        index = c.get("signature")
        if isinstance(index, int):
            for outer in chain[i + 1:]:
                signatures = outer.get("signatures")
                if isinstance(signatures, list) and 0 <= index < len(signatures):
                    return [_spec_text(a) for a in signatures[index].get("args", [])] + [
                        f"{k}={v}" for k, v in signatures[index].get("static", {}).items()]
    return []


def _spec_text(arg: Any) -> str:
    from jaxfuse_lint.verify.shapes import ArgSpec

    if isinstance(arg, dict) and isinstance(arg.get("shape"), list) and arg.get("dtype"):
        try:
            return str(ArgSpec(str(arg["dtype"]), tuple(int(d) for d in arg["shape"])))
        except (TypeError, ValueError):
            pass
    return str(arg.get("repr", "?")) if isinstance(arg, dict) else str(arg)


def _text_digest(path: str) -> str | None:
    import hashlib
    import tokenize

    try:
        with tokenize.open(path) as fh:
            return hashlib.sha256(fh.read().encode("utf-8", "surrogatepass")).hexdigest()
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
        return None


def _same_path(recorded: str, path: str) -> bool:
    return os.path.realpath(recorded) == os.path.realpath(path) or os.path.realpath(path).endswith(
        os.sep + recorded.lstrip("./"))


def _context_name(context: dict) -> str | None:
    for key in ("qualname", "function", "func", "name", "entry"):
        value = context.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _function_spans(path: str) -> list[tuple[str, int, int]]:
    """(qualified name, first line, last line) of every function in the file."""
    from jaxfuse_lint.verify.loader import read_source

    try:
        tree = ast.parse(read_source(path))
    except SyntaxError as exc:
        raise VerifyError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    spans: list[tuple[str, int, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                spans.append((prefix + child.name, first, child.end_lineno or child.lineno))
                visit(child, prefix + child.name + ".<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(tree, "")
    return spans


def _same_function(name: str, qualname: str) -> bool:
    """Whether a recorded name is the function `qualname`: the same qualified name, or (a short
    name, as older profiles and `PATH::func` give) the same last part."""
    if name == qualname:
        return True
    return "." not in name and name == qualname.split(".")[-1]


def _enclosing_span(spans: list[tuple[str, int, int]], lines: list[int], name: str | None):
    """The function the account is about: the named one (by its qualified name, so that
    `A.make.<locals>.kernel` is not `B.make.<locals>.kernel`; a short name where it names one
    function, else the one holding the account's lines), else the outermost holding the most lines."""
    if name:
        exact = [span for span in spans if span[0] == name]
        if exact:
            return exact[0]
        short = [span for span in spans if span[0].split(".")[-1] == name.split(".")[-1]
                 and ("." not in name or span[0].endswith("." + name))]
        if len(short) == 1 or (short and not lines):
            return short[0]
        if short:
            return max(short, key=lambda span: sum(1 for line in lines if span[1] <= line <= span[2]))
    best, best_count = None, 0
    for span in spans:
        count = sum(1 for line in lines if span[1] <= line <= span[2])
        if count > best_count or (count == best_count and best and span[2] - span[1] > best[2] - best[1]):
            best, best_count = span, count
    return best
