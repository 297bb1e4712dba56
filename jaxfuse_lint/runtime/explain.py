"""`explain`: compile one function and account for it line by line, like a line profiler for fusion.

    explanation = explain_function(func, [ArgSpec("float32", (1024, 2))], {}, filename="m.py")
    explanation.attribution           # the per-line account (jaxfuse_lint.verify.attribution)
    explanation.focus_lines()         # [(line number, source text, LineAccount | None)] of FUNC's body
    render_text(explanation)          # the table `jaxfuse-lint explain` prints
    explanation.graph()               # the kernel graph, each kernel labelled by its source lines

It imports and runs the user's code (through the verifier's loader), so only
the `explain` command and `jaxfuse_lint.show` call it.
"""
from __future__ import annotations

import functools
import html
import inspect
import json
import linecache
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from jaxfuse_lint.verify.attribution import Attribution, KernelAccount, LineAccount, attribute_compiled
from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.loader import cell_row, source_row  # a notebook's rows, named by cell
from jaxfuse_lint.verify.report import format_bytes

LABEL_WIDTH = 72  # characters of a source line shown in a kernel's label


@dataclass
class FocusLine:
    """What one line of the explained function costs (see `Explanation.focus_accounts`)."""

    kernels: list[str] = field(default_factory=list)
    temp_bytes: int = 0
    temp_buffers: list[str] = field(default_factory=list)
    constant_bytes: int = 0
    constants: list[str] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)


@dataclass
class Explanation:
    """One function's compiled program, accounted for per source line."""

    target: str  # how it is named: "model.py::step"
    file: str  # the file its code objects name (what the frames say)
    func: str
    first_line: int
    last_line: int
    attribution: Attribution
    args: list[str] = field(default_factory=list)
    static: dict[str, str] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The verifier's Measurement when compiled in this process (never stored).
    measurement: Any = field(default=None, repr=False, compare=False)

    def in_focus(self, account: LineAccount) -> bool:
        return self.first_line <= account.line <= self.last_line and _same_file(account.file, self.file)

    def focus_accounts(self) -> dict[int, FocusLine]:
        """FUNC's lines, each with what its operations cost.

        Each operation counts on one line of FUNC: the innermost frame of its stack
        inside FUNC. What a helper computes counts on the line that calls it; a
        nested function's lines count for themselves, not also for the line that
        calls them (as a line profiler counts).
        """
        out: dict[int, FocusLine] = {}

        def at(key: str) -> FocusLine:
            number = int(key.rpartition(":")[2])
            return out.setdefault(number, FocusLine())

        for k in self.attribution.kernels:
            if k.inserted:
                for key in k.lines:
                    if self._key_in_focus(key) and k.name not in at(key).copies:
                        at(key).copies.append(k.name)
                continue
            for key in self._innermost_in_focus(k.stacks):
                line = at(key)
                line.kernels.append(k.name)
                if k.moves_data:
                    line.copies.append(k.name)
                if k.temp_bytes:
                    line.temp_bytes += k.temp_bytes
                    line.temp_buffers.append(k.name)
        for c in self.attribution.constants:
            for key in self._innermost_in_focus(c.stacks):
                at(key).constant_bytes += c.nbytes
                at(key).constants.append(c.name)
        return out

    def _innermost_in_focus(self, stacks: list[list[str]]) -> list[str]:
        found: dict[str, None] = {}
        for stack in stacks:
            inside = next((key for key in stack if self._key_in_focus(key)), None)
            if inside is not None:
                found.setdefault(inside)
        return list(found)

    def focus_lines(self) -> list[tuple[int, str, FocusLine | None]]:
        """Every line of FUNC's definition with its account (None for a line nothing was traced from)."""
        accounts = self.focus_accounts()
        docstrings = _docstring_rows(self.file, self.first_line, self.last_line)
        rows = []
        for number in range(self.first_line, self.last_line + 1):
            account = accounts.get(number)
            if number in docstrings and account is None:
                continue  # a docstring runs nothing: not a row of the table
            text = linecache.getline(self.file, number).rstrip("\n")
            if not text:
                stored = self.attribution.line(self.file, number)
                text = stored.text if stored is not None else ""
            rows.append((number, text, account))
        return rows

    def other_lines(self) -> list[LineAccount]:
        """Traced lines outside FUNC's definition in the user's own code: the helpers it calls
        (never jax's, a library's or the test runner's frames)."""
        called = self._called_keys
        return [a for a in self.attribution.lines
                if not self.in_focus(a) and user_file(a.file) and (called is None or a.key in called)]

    @functools.cached_property
    def _called_keys(self) -> set[str] | None:
        """The frames inner to FUNC's in the operations' call stacks: what FUNC calls into, not
        what called it (a test, the runner). None when the account keeps no call stacks."""
        stacks = [st for k in self.attribution.kernels for st in k.stacks]
        stacks += [st for c in self.attribution.constants for st in c.stacks]
        if not stacks:
            return None
        called: set[str] = set()
        for stack in stacks:
            for i, key in enumerate(stack):
                if self._key_in_focus(key):
                    called.update(stack[:i])
                    break
        return called

    def kernel_ids(self) -> dict[str, str]:
        """Kernel instruction name -> K1, K2, ... in program order."""
        return {k.name: f"K{i}" for i, k in enumerate(self.attribution.kernels, 1)}

    def kernel_label_lines(self, kernel: KernelAccount) -> list[str]:
        """The source lines a kernel runs, for its box in the graph: FUNC's own lines first."""
        # Per operation, the innermost frame inside FUNC: the call line for what a helper
        # computes, the line itself for FUNC's own operations.
        chosen = (_by_line(self._innermost_in_focus(kernel.stacks)) or _by_line(_user(kernel.own_lines))
                  or _by_line(_user(kernel.lines)))
        out = []
        for key in chosen[:6]:
            file, _, number = key.rpartition(":")
            text = linecache.getline(file, int(number)).strip()
            account = self.attribution.line(file, int(number))
            if not text and account is not None:
                text = account.text
            label = f"{self._short_key(key)} {text}"
            out.append(label if len(label) <= LABEL_WIDTH else label[: LABEL_WIDTH - 1] + "…")
        if len(chosen) > 6:
            out.append(f"(+{len(chosen) - 6} more lines)")
        return out

    def _key_in_focus(self, key: str) -> bool:
        file, _, number = key.rpartition(":")
        return _same_file(file, self.file) and self.first_line <= int(number) <= self.last_line

    def graph(self) -> Any:
        """The kernel graph (a KernelGraph) with each kernel labelled by its source lines."""
        from jaxfuse_lint.verify.graph import KernelGraph

        if not self.attribution.graph:
            return None
        graph = KernelGraph.from_json(self.attribution.graph)
        ids = self.kernel_ids()
        notes = {}
        for k in self.attribution.kernels:
            notes[k.name] = [f"[{ids[k.name]}]" + (f" ×{k.launches}" if k.launches not in (None, 1) else ""),
                             *self.kernel_label_lines(k)]
        for c in self.attribution.constants:
            notes[c.name] = [self._short_key(key) for key in c.lines[:3]]
        return graph.with_notes(notes, title=[self.headline(), self.summary()])

    def kernel_lines_text(self, kernel: KernelAccount) -> str:
        """`L60, L64; in helpers: L32, L44` for the legend: FUNC's lines (each operation on its
        innermost line inside FUNC, as the table counts), then the helpers' own lines."""
        if kernel.inserted:
            return ", ".join(self._short_key(key) for key in _by_line(_user(kernel.lines))) or "no source line"
        own = _by_line(self._innermost_in_focus(kernel.stacks))
        called = self._called_keys
        helpers = _by_line([key for key in _user(kernel.lines)
                            if not self._key_in_focus(key) and (called is None or key in called)])
        text = ", ".join(self._short_key(key) for key in own)
        if helpers:
            text += ("; " if text else "") + "in helpers: " + ", ".join(self._short_key(key) for key in helpers)
        if not text:
            # Lines of the user's code outside FUNC and what it calls (the code that built it).
            text = ", ".join(self._short_key(key) for key in _by_line(_user(kernel.lines)))
        return text or "no source line"

    def _short_key(self, key: str) -> str:
        file, _, number = key.rpartition(":")
        if not _same_file(file, self.file):
            return f"{os.path.basename(file)}:{source_row(file, int(number))}"
        found = cell_row(file, int(number))
        if found is not None and found[0] != self.focus_cell():
            return f"cell {found[0]}:L{found[1]}"
        return f"L{self.focus_row(int(number))}"

    def focus_cell(self) -> int | None:
        """The notebook cell FUNC is defined in (None outside notebooks)."""
        found = cell_row(self.file, self.first_line)
        return found[0] if found else None

    def focus_row(self, number: int) -> int:
        """How the table numbers a row of FUNC's file: in a notebook, counted in its cell."""
        found = cell_row(self.file, number)
        return found[1] if found else number

    def headline(self) -> str:
        args = ", ".join(self.args)
        static = ", ".join(f"{k}={v}" for k, v in self.static.items())
        inside = ", ".join(part for part in (args, static) if part)
        from jaxfuse_lint.verify.backend import label

        backend = label({**self.environment, "backend": self.environment.get("backend") or self.attribution.backend})
        cell = self.focus_cell()
        where = f", cell {cell}" if cell is not None else ""
        return f"{self.target}({inside}) on {backend}{where}"

    def summary(self) -> str:
        a = self.attribution
        launches = "unknown launches" if a.launches_per_run is None else _plural(a.launches_per_run, "launch")
        parts = [f"{_plural(len(a.kernels), 'kernel')} ({launches})", f"{format_bytes(a.temp_bytes)} temporaries",
                 f"{format_bytes(a.constant_bytes)} folded constants"]
        if a.compile_seconds is not None:
            parts.append(f"compiled in {a.compile_seconds:.3f} s")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        ids = self.kernel_ids()
        rows = self.focus_lines()
        on_lines: dict[str, list[int]] = {}
        for number, _, account in rows:
            for k in account.kernels if account else []:
                on_lines.setdefault(k, []).append(number)
        cell = self.focus_cell()
        # Rows count in the file's module; in a notebook, "cell" and each line's "cell_line" say where.
        in_cell = {"cell": cell} if cell is not None else {}
        return {
            "target": self.target,
            "file": self.file,
            "function": self.func,
            "first_line": self.first_line,
            "last_line": self.last_line,
            **in_cell,
            "args": self.args,
            "static": self.static,
            "environment": self.environment,
            "notes": self.notes,
            "summary": self.summary(),
            "kernel_ids": ids,
            "lines": [
                {
                    "line": number, **({"cell_line": self.focus_row(number)} if in_cell else {}),
                    "source": text, "kernels": [ids[k] for k in account.kernels],
                    "shared_with": {ids[k]: [n for n in on_lines[k] if n != number] for k in account.kernels},
                    "temp_bytes": account.temp_bytes, "temp_buffers": [ids[k] for k in account.temp_buffers],
                    "constant_bytes": account.constant_bytes, "copies": [ids[k] for k in account.copies],
                }
                for number, text, account in rows if account is not None
            ],
            "attribution": self.attribution.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Explanation:
        return cls(
            target=data["target"], file=data["file"], func=data["function"],
            first_line=data["first_line"], last_line=data["last_line"],
            attribution=Attribution.from_json(data["attribution"]),
            args=list(data.get("args", [])), static=dict(data.get("static", {})),
            environment=dict(data.get("environment", {})), notes=list(data.get("notes", [])),
        )


def user_file(path: str) -> bool:
    """Whether a frame's file is the user's own code: not an installed package (site-packages:
    jax, pytest, pluggy, click), not the standard library (runpy), not this tool, not frozen."""
    return _user_file(path)


@functools.lru_cache(maxsize=4096)
def _user_file(path: str) -> bool:
    if not path or (path.startswith("<") and not path.startswith(("<ipython-input", "<stdin>", "<string>"))):
        return False  # <frozen runpy>; code typed at a prompt or exec'd text stays the user's
    parts = path.replace("\\", "/").split("/")
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    real = os.path.realpath(path)
    return not any(real == root or real.startswith(root + os.sep) for root in _library_roots())


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    import sysconfig

    roots = {os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))}  # this tool
    for key in ("stdlib", "platstdlib"):
        where = sysconfig.get_paths().get(key)
        if where:
            roots.add(os.path.realpath(where))
    return tuple(sorted(roots))


def _user(keys: list[str]) -> list[str]:
    return [key for key in keys if user_file(key.rpartition(":")[0])]


def _docstring_rows(file: str, first: int, last: int) -> set[int]:
    """The rows of the docstrings of FUNC and of the functions and classes inside it."""
    text = "".join(linecache.getlines(file))
    if not text:
        return set()
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    rows: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if not (first <= node.lineno <= last) or not node.body:
            continue
        doc = node.body[0]
        if (isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                and isinstance(doc.value.value, str)):
            rows.update(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
    return rows


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}{'es' if noun.endswith('ch') else 's'}"


def _by_line(keys: list[str]) -> list[str]:
    return sorted(keys, key=lambda key: (key.rpartition(":")[0], int(key.rpartition(":")[2])))


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def function_span(func: Callable[..., Any]) -> tuple[str, int, int]:
    """(file, first line, last line) of a function's definition, decorators included."""
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        raise VerifyError(f"{func!r} is not a Python function: nothing to attribute lines to")
    try:
        lines, start = inspect.getsourcelines(func)
    except (OSError, TypeError):
        # No source to read (typed at a plain interpreter prompt): the code object still
        # knows which lines it spans, nested functions included.
        return code.co_filename, code.co_firstlineno, _last_line(code)
    return code.co_filename, start, start + len(lines) - 1


def _last_line(code: Any) -> int:
    last = code.co_firstlineno
    for _, _, line in code.co_lines():
        if line is not None:
            last = max(last, line)
    for const in code.co_consts:
        if hasattr(const, "co_lines"):
            last = max(last, _last_line(const))
    return last


def explain_function(
    func: Callable[..., Any],
    specs: Sequence[Any],
    static: Mapping[str, Any],
    *,
    target: str,
    device: Any = None,
    example_args: Sequence[Any] | None = None,
    compile_target: Any = None,
) -> Explanation:
    """Lower and compile `jax.jit(func)` for `specs` (ArgSpec) and account for it per line.

    `example_args` (real arrays or pytrees, as in a notebook) replace `specs` when given.
    `compile_target` (`jaxfuse_lint.verify.backend.CompileTarget`) says what to compile for
    (a GPU without one included); else `device`, else JAX's default device.
    Raises VerifyError (one line) when tracing or compiling fails.
    """
    from jaxfuse_lint.verify.api import environment
    from jaxfuse_lint.verify.measure import measure

    import jax

    if compile_target is not None:
        device = compile_target.device
        if example_args is not None and compile_target.deviceless:
            from jaxfuse_lint.verify.backend import abstract_args

            example_args = abstract_args(compile_target, list(example_args))
    file, first, last = function_span(func)
    measurement = measure(func, specs, static, filename=file, label="explained", device=device,
                          buffer_assignment=True, example_args=example_args)
    attribution = attribute_compiled(None, measurement.compiled, buffer_assignment=measurement.buffer_assignment,
                                     compile_seconds=measurement.compile_seconds)
    dev = compile_target if compile_target is not None else device if device is not None else jax.devices()[0]
    if compile_target is not None:
        attribution.backend = compile_target.backend
    explanation = Explanation(
        target=target, file=file, func=getattr(func, "__name__", target), first_line=first, last_line=last,
        attribution=attribution,
        args=[describe_arg(a) for a in example_args] if example_args is not None else [str(s) for s in specs],
        static={k: repr(v) for k, v in static.items()},
        environment=environment(jax, dev), measurement=measurement,
    )
    if compile_target is not None and (line := compile_target.describe()) is not None:
        explanation.notes.append(line)
    if attribution.temp_source != "buffer assignment":
        explanation.notes.append("XLA's buffer assignment was not available: temporaries are estimated "
                                 "from kernel outputs")
    explanation.notes += measurement.captured_constants
    return explanation


def describe_arg(value: Any) -> str:
    """`f32[1024,2]` for an array (or ShapeDtypeStruct), a pytree of those, else a short repr."""
    from jaxfuse_lint.verify.shapes import ArgSpec

    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        return str(ArgSpec(str(dtype), tuple(int(d) for d in shape)))
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe_arg(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {describe_arg(v)}" for k, v in value.items()) + "}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --- rendering -------------------------------------------------------------------------------


def _display_path(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


TEXT_WIDTH = 100  # `explain`'s text output fits this many columns (but for the source lines themselves)
KERNEL_COLUMN = 18  # the table's Kernels column: longer lists end in "+N"


def kernel_list(names: Sequence[str], ids: Mapping[str, str], width: int | None = KERNEL_COLUMN) -> str:
    """`K1-K4 K7` for kernels K1, K2, K3, K4 and K7; cut to `width` with `+N` for the rest."""
    numbers = sorted({int(ids[n][1:]) for n in names})
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    parts = [f"K{a}" if a == b else f"K{a}-K{b}" for a, b in runs]
    text = " ".join(parts)
    if width is None or len(text) <= width:
        return text
    shown: list[str] = []
    for i, part in enumerate(parts):
        rest = sum(b - a + 1 for a, b in runs[i:])
        if len(" ".join([*shown, part, f"+{rest}"])) > width:
            return " ".join([*shown, f"+{rest}"])
        shown.append(part)
    return text


def _fit(text: str, width: int = TEXT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrapped(text: str, indent: str, first: str = "", width: int = TEXT_WIDTH) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width, initial_indent=first or indent, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def render_text(explanation: Explanation) -> str:
    a = explanation.attribution
    ids = explanation.kernel_ids()
    out = [explanation.headline(), explanation.summary(), ""]
    rows = explanation.focus_lines()
    kernel_col = max([len("Kernels")] + [len(kernel_list(acc.kernels, ids)) for _, _, acc in rows if acc])
    copies_col = max([len("Copies")] + [len(kernel_list(acc.copies, ids)) for _, _, acc in rows if acc])
    header = f"{'Line':>5}  {'Kernels':<{kernel_col}}  {'Temp':>9}  {'Const':>9}  {'Copies':<{copies_col}}  Source"
    out += [header, "-" * min(len(header), TEXT_WIDTH)]
    for number, text, acc in rows:
        number = explanation.focus_row(number)
        if acc is None:
            out.append(f"{number:>5}  {'':<{kernel_col}}  {'':>9}  {'':>9}  {'':<{copies_col}}  {text}".rstrip())
            continue
        kernels = kernel_list(acc.kernels, ids)
        temp = format_bytes(acc.temp_bytes) if acc.temp_bytes else ""
        const = format_bytes(acc.constant_bytes) if acc.constant_bytes else ""
        copies = kernel_list(acc.copies, ids)
        out.append(f"{number:>5}  {kernels:<{kernel_col}}  {temp:>9}  {const:>9}  {copies:<{copies_col}}  {text}")
    others = explanation.other_lines()
    if others:
        out += ["", "Lines it calls into:"]
        for acc in others:
            where = f"{_display_path(acc.file)}:{source_row(acc.file, acc.line)}"
            extra = []
            if acc.temp_bytes:
                extra.append(f"temp {format_bytes(acc.temp_bytes)}")
            if acc.constant_bytes:
                extra.append(f"const {format_bytes(acc.constant_bytes)}")
            if acc.copies:
                extra.append("copies " + kernel_list(acc.copies, ids))
            tail = f"  ({', '.join(extra)})" if extra else ""
            out.append(_fit(f"  {where} {acc.function}: {kernel_list(acc.kernels, ids)}{tail}  {acc.text.strip()}"))
    out += ["", "Kernels:"]
    for k in a.kernels:
        runs = "×?" if k.launches is None else f"×{k.launches}"
        lines = explanation.kernel_lines_text(k)
        temp = f", writes {format_bytes(k.temp_bytes)} temporary" if k.temp_bytes else ""
        inserted = ", inserted by XLA" if k.inserted else ""
        if k.inferred:
            inserted = ", no location of its own (lines from the data flow)"
        out += _wrapped(f"{k.kind} {k.shape} {k.name} {runs}{temp}{inserted}", " " * 7, f"  {ids[k.name]:<4} ")
        out += _wrapped(lines, " " * 14, "       lines: ")
    if a.constants:
        out += ["", "Folded constants:"]
        for c in a.constants:
            lines = ", ".join(explanation._short_key(key) for key in c.lines) or "no source line"
            out += _wrapped(f"{c.name} {c.shape} {format_bytes(c.nbytes)}  lines: {lines}", " " * 4, "  ")
    out.append("")
    out += _wrapped("A line's temporaries are the buffers written by the kernels its operations run in; "
                    f"lines sharing a kernel share its buffers (temporaries from {a.temp_source}).", "")
    out += [f"note: {n}" for n in explanation.notes]  # whole: a note may name a path
    return "\n".join(out) + "\n"


def render_json(explanation: Explanation) -> str:
    return json.dumps(explanation.to_json(), indent=2, default=str)


def render_html_fragment(explanation: Explanation, *, svg: str | None = None) -> str:
    """The account as an HTML fragment (what a notebook shows; `render_html` wraps it in a page)."""
    a = explanation.attribution
    ids = explanation.kernel_ids()
    esc = html.escape
    style = "border-collapse:collapse;font-family:monospace;font-size:12px"
    cell = "padding:1px 8px;border-bottom:1px solid #ddd;text-align:left;white-space:pre"
    parts = [f"<div class=\"jaxfuse-explain\"><h3 style=\"font-family:sans-serif\">{esc(explanation.headline())}</h3>",
             f"<p style=\"font-family:sans-serif\">{esc(explanation.summary())}</p>"]
    figures = [("kernels", str(len(a.kernels))),
               ("launches per call", "?" if a.launches_per_run is None else str(a.launches_per_run)),
               ("temporaries", format_bytes(a.temp_bytes)), ("folded constants", format_bytes(a.constant_bytes)),
               ("compile time", "n/a" if a.compile_seconds is None else f"{a.compile_seconds:.3f} s")]
    parts.append(f"<table style=\"{style};margin-bottom:8px\">" + "".join(
        f"<tr><th style=\"{cell}\">{esc(k)}</th><td style=\"{cell}\">{esc(v)}</td></tr>" for k, v in figures)
        + "</table>")
    if svg:
        parts.append(f"<div class=\"jaxfuse-graph\" style=\"overflow:auto\">{svg}</div>")
    parts.append(f"<table style=\"{style}\"><tr>" + "".join(
        f"<th style=\"{cell}\">{h}</th>" for h in ("Line", "Kernels", "Temp", "Const", "Copies", "Source")) + "</tr>")
    for number, text, acc in explanation.focus_lines():
        number = explanation.focus_row(number)
        kernels = " ".join(ids[k] for k in acc.kernels) if acc else ""
        temp = format_bytes(acc.temp_bytes) if acc and acc.temp_bytes else ""
        const = format_bytes(acc.constant_bytes) if acc and acc.constant_bytes else ""
        copies = " ".join(ids[k] for k in acc.copies) if acc else ""
        shade = " background:#fff3e0;" if acc and acc.temp_bytes else ""
        parts.append(f"<tr style=\"{shade}\">" + "".join(
            f"<td style=\"{cell}\">{esc(str(v))}</td>" for v in (number, kernels, temp, const, copies, text)) + "</tr>")
    parts.append("</table>")
    others = explanation.other_lines()
    if others:
        parts.append("<p style=\"font-family:sans-serif;font-size:12px\">Lines it calls into:</p>")
        parts.append(f"<table style=\"{style}\"><tr>" + "".join(
            f"<th style=\"{cell}\">{h}</th>" for h in ("Where", "Kernels", "Temp", "Const", "Source")) + "</tr>")
        for acc in others:
            parts.append("<tr>" + "".join(f"<td style=\"{cell}\">{esc(str(v))}</td>" for v in (
                f"{_display_path(acc.file)}:{source_row(acc.file, acc.line)} {acc.function}",
                " ".join(ids[k] for k in acc.kernels),
                format_bytes(acc.temp_bytes) if acc.temp_bytes else "",
                format_bytes(acc.constant_bytes) if acc.constant_bytes else "", acc.text)) + "</tr>")
        parts.append("</table>")
    parts.append(f"<table style=\"{style};margin-top:8px\"><tr>" + "".join(
        f"<th style=\"{cell}\">{h}</th>" for h in ("Kernel", "Kind", "Shape", "Launches", "Temporary", "Lines"))
        + "</tr>")
    for k in a.kernels:
        lines = explanation.kernel_lines_text(k)
        runs = "?" if k.launches is None else str(k.launches)
        parts.append("<tr>" + "".join(f"<td style=\"{cell}\">{esc(str(v))}</td>" for v in (
            f"{ids[k.name]} {k.name}", k.kind + (" (inserted)" if k.inserted else " (lines from data flow)" if k.inferred else ""), k.shape, runs,
            format_bytes(k.temp_bytes) if k.temp_bytes else "", lines)) + "</tr>")
    parts.append("</table>")
    for note in explanation.notes:
        parts.append(f"<p style=\"font-family:sans-serif;font-size:12px\">note: {esc(note)}</p>")
    parts.append("</div>")
    return "\n".join(parts)


def render_html(explanation: Explanation, *, svg: str | None = None) -> str:
    body = render_html_fragment(explanation, svg=svg)
    title = html.escape(explanation.headline())
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\n"
            f"<body>\n{body}\n</body></html>\n")
