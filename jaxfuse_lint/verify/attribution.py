"""Per-source-line attribution of a compiled JAX program: a line profiler for fusion.

JAX records, for every operation it traces, the Python stack that made it;
XLA keeps that stack through optimization in each instruction's metadata
(`stack_frame_id` into the module's StackFrames table, or `source_file` /
`source_line` in older versions). This module joins the compiled program back
to those lines:

- **kernels**: every launched kernel (fusions, custom calls, copies,
  transposes, FFTs, async pairs, kernels inside GPU command buffers; counted as
  `jaxfuse_lint.verify.hlo.count_kernels` counts them) with the source lines of
  every operation fused into it. A line "is in" a kernel when any frame of the
  stack of any of the kernel's operations is that line, so a call line
  (`k2 = get_kmesh(rho)`) owns what the called function compiles to, as a
  line profiler's inclusive time does; `own_lines` keeps the innermost frames.
- **temporaries**: the buffers XLA's buffer assignment gives each kernel's
  output that are neither arguments, outputs, constants nor thread-local
  scratch, attributed to every line in the kernel that writes them. Without
  the buffer assignment text the outputs of kernels that do not reach the
  program's result are used instead (`temp_source == "kernel outputs"`).
- **folded constants**: non-scalar constants embedded in the executable,
  attributed to their own metadata lines or else to the lines of the
  operations that read them.
- **inserted copies**: copy and transpose kernels; those XLA inserted with no
  source location are attributed to the lines whose values they move.
- **work without a location** (XLA's expansions, such as the reduce-windows a
  `cumsum` becomes) inherits the lines of the kernel it reads from, else of
  the kernel that reads it (`inferred`).

API (no jax import at module import time):

    attribution = attribute_compiled(lowered, compiled, buffer_assignment=text)  # jax objects
    attribution = attribute_hlo(hlo_text, buffer_assignment=text)                  # from text (any backend)
    compiled, text = compile_with_buffer_assignment(lowered)                      # compile, keep the assignment
    attribution.lines            # [LineAccount]: file, line, function, text, kernels, temp_bytes, ...
    attribution.kernels          # [KernelAccount]: name, kind, lines, own_lines, temp_bytes, launches, ...
    attribution.line(file, 18)   # the LineAccount of one line, or None
    attribution.shared_with(acc.file, acc.line, kernel_name)  # other lines in that kernel
    Attribution.from_json(attribution.to_json()) == attribution  # what a profile stores

Line keys are "file:line" strings. Frames from files under `exclude_dirs`
(by default jaxfuse-lint's own package, which calls `.lower()`) are dropped.
"""
from __future__ import annotations

import glob
import linecache
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

from jaxfuse_lint.verify.hlo import (
    BOOKKEEPING_OPCODES,
    HloModule,
    Instruction,
    SourceFrame,
    count_kernels,
    iter_computation_tree,
    parse_hlo_module,
    shape_bytes,
    shape_elements,
    short_shape,
    trip_count,
)

SCHEMA_VERSION = 1
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Opcodes that only move or re-lay-out data: when XLA inserts them they have no line of their own.
_MOVING_OPCODES = frozenset({"copy", "transpose", "copy-start", "copy-done", "bitcast", "parameter", "tuple",
                             "get-tuple-element", "reshape"})


def line_key(file: str, line: int) -> str:
    return f"{file}:{line}"


@dataclass
class KernelAccount:
    """One launched kernel and the source lines whose operations it runs."""

    name: str
    kind: str  # as counted by the verifier: fusion:kLoop, custom-call:__cublas$gemm, copy, fft, ...
    computation: str
    shape: str
    loop_depth: int
    launches: int | None  # per call of the program; None when a loop's trip count is unknown
    lines: list[str] = field(default_factory=list)  # every frame of every op in it, "file:line"
    own_lines: list[str] = field(default_factory=list)  # innermost frames only
    # The distinct call stacks of its operations, innermost frame first: a view focused on
    # one function labels the kernel with the innermost frame inside that function.
    stacks: list[list[str]] = field(default_factory=list)
    output_bytes: int = 0
    temp_bytes: int = 0  # bytes of temporary buffers this kernel writes
    moves_data: bool = False  # only copies, transposes or re-lays-out data
    inserted: bool = False  # moves data and has no source location of its own: XLA put it there
    inferred: bool = False  # computes, but has no location of its own: lines taken from the data flow


@dataclass
class ConstantAccount:
    name: str
    shape: str
    nbytes: int
    lines: list[str] = field(default_factory=list)  # innermost frames of the ops that read it
    stacks: list[list[str]] = field(default_factory=list)  # their whole call stacks


@dataclass
class LineAccount:
    """What one source line costs in the compiled program."""

    file: str
    line: int
    function: str = ""
    text: str = ""  # the source line, stripped, when it could be read
    kernels: list[str] = field(default_factory=list)  # names of kernels holding its operations
    own_kernels: list[str] = field(default_factory=list)  # ... where it is the innermost frame
    temp_bytes: int = 0
    temp_buffers: list[str] = field(default_factory=list)  # kernels whose temporary output it shares
    constant_bytes: int = 0
    constants: list[str] = field(default_factory=list)
    copies: list[str] = field(default_factory=list)  # copy/transpose kernels moving its values

    @property
    def key(self) -> str:
        return line_key(self.file, self.line)


@dataclass
class Attribution:
    """The per-line account of one compiled program. See the module docstring."""

    module: str
    kernels: list[KernelAccount] = field(default_factory=list)
    lines: list[LineAccount] = field(default_factory=list)
    constants: list[ConstantAccount] = field(default_factory=list)
    temp_bytes: int | None = None  # the program's total, from memory_analysis() or the assignment
    temp_source: str = "buffer assignment"  # or "kernel outputs" (no buffer assignment was available)
    constant_bytes: int = 0
    launches_per_run: int | None = None
    unattributed_kernels: list[str] = field(default_factory=list)  # kernels no source line reached
    backend: str = ""
    compile_seconds: float | None = None
    # The kernel graph (`jaxfuse_lint.verify.graph.KernelGraph.to_json()`), so that a
    # stored account can still be drawn.
    graph: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self._index()

    def _index(self) -> None:
        self._lines = {acc.key: acc for acc in self.lines}
        self._kernels = {k.name: k for k in self.kernels}

    def line(self, file: str, line: int) -> LineAccount | None:
        if not self._lines or len(self._lines) != len(self.lines):
            self._index()
        found = self._lines.get(line_key(file, line))
        if found is None:  # the same file named another way (relative, symlinked)
            real = os.path.realpath(file)
            found = next((a for a in self.lines if a.line == line and os.path.realpath(a.file) == real), None)
        return found

    def kernel(self, name: str) -> KernelAccount | None:
        if len(self._kernels) != len(self.kernels):
            self._index()
        return self._kernels.get(name)

    def lines_in(self, file: str) -> list[LineAccount]:
        real = os.path.realpath(file)
        return [a for a in self.lines if a.file == file or os.path.realpath(a.file) == real]

    def shared_with(self, file: str, line: int, kernel: str) -> list[str]:
        """The other lines whose operations run in `kernel`."""
        k = self.kernel(kernel)
        return [key for key in k.lines if key != line_key(file, line)] if k else []

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "module": self.module,
            "backend": self.backend,
            "temp_bytes": self.temp_bytes,
            "temp_source": self.temp_source,
            "constant_bytes": self.constant_bytes,
            "launches_per_run": self.launches_per_run,
            "compile_seconds": self.compile_seconds,
            "unattributed_kernels": list(self.unattributed_kernels),
            "kernels": [asdict(k) for k in self.kernels],
            "constants": [asdict(c) for c in self.constants],
            "lines": [asdict(a) for a in self.lines],
            "graph": self.graph,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attribution:
        if data.get("schema", SCHEMA_VERSION) > SCHEMA_VERSION:
            raise ValueError(f"attribution schema {data.get('schema')} is newer than this jaxfuse-lint reads")
        return cls(
            module=data.get("module", ""),
            backend=data.get("backend", ""),
            temp_bytes=data.get("temp_bytes"),
            temp_source=data.get("temp_source", "buffer assignment"),
            constant_bytes=data.get("constant_bytes", 0),
            launches_per_run=data.get("launches_per_run"),
            compile_seconds=data.get("compile_seconds"),
            unattributed_kernels=list(data.get("unattributed_kernels", [])),
            kernels=[KernelAccount(**k) for k in data.get("kernels", [])],
            constants=[ConstantAccount(**c) for c in data.get("constants", [])],
            lines=[LineAccount(**a) for a in data.get("lines", [])],
            graph=data.get("graph"),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attribution) and self.to_json() == other.to_json()


# --- buffer assignment --------------------------------------------------------

@dataclass(frozen=True)
class BufferValue:
    """One value in XLA's buffer assignment: which instruction defines it, and how big it is."""

    allocation: int
    temporary: bool  # in an allocation that is not an argument, output, constant or thread-local
    instruction: str
    size: int
    value_id: int


_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*)$")
_VALUE = re.compile(
    r"^\s*value: <(\d+) ([^\s{>]+)(\{[^}]*\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=\d+\)(?:: (.*))?$")
_NOT_TEMPORARY = ("parameter", "maybe-live-out", "constant", "thread-local", "output shape")


def parse_buffer_assignment(text: str) -> list[BufferValue]:
    """The values of the `BufferAssignment:` section of XLA's `*buffer-assignment.txt` dump."""
    values: list[BufferValue] = []
    section = text.split("BufferAssignment:", 1)[1] if "BufferAssignment:" in text else text
    allocation, temporary = -1, False
    for line in section.splitlines():
        m = _ALLOCATION.match(line)
        if m:
            allocation = int(m.group(1))
            tags = m.group(3)
            temporary = not any(tag in tags for tag in _NOT_TEMPORARY)
            continue
        v = _VALUE.match(line)
        if v and (v.group(5) or "").startswith("("):
            continue  # a tuple's table of pointers to its elements, not data
        if v and allocation >= 0 and "(phi)" not in line:
            values.append(BufferValue(allocation, temporary, v.group(2), int(v.group(4)), int(v.group(1))))
    return values


def buffer_assignment_temp_bytes(text: str) -> int:
    """Total size of the temporary allocations in a buffer-assignment dump."""
    total = 0
    section = text.split("BufferAssignment:", 1)[1] if "BufferAssignment:" in text else text
    for line in section.splitlines():
        m = _ALLOCATION.match(line)
        if m and not any(tag in m.group(3) for tag in _NOT_TEMPORARY):
            total += int(m.group(2))
    return total


# --- attribution ---------------------------------------------------------------

def attribute_hlo(
    hlo_text: str | HloModule,
    *,
    buffer_assignment: str | None = None,
    temp_bytes: int | None = None,
    exclude_dirs: Sequence[str] = (_PACKAGE_DIR,),
    read_source_lines: bool = True,
    backend: str = "",
) -> Attribution:
    """Attribute an optimized HLO module (`compiled.as_text()`) to its source lines.

    `buffer_assignment` is the text of XLA's `*buffer-assignment.txt` dump for the
    same module (see `compile_with_buffer_assignment`); `temp_bytes` the program's
    total temporary bytes (`memory_analysis().temp_size_in_bytes`).
    """
    module = hlo_text if isinstance(hlo_text, HloModule) else parse_hlo_module(hlo_text)
    excluded = tuple(os.path.abspath(d) + os.sep for d in exclude_dirs)
    frames_seen: dict[str, SourceFrame] = {}
    outside = _outside_stacks(module)

    def stack(ins: Instruction) -> list[SourceFrame]:
        frames = module.source_stack(ins)
        if _frame_keys(frames) in outside:
            return []  # made where the program was lowered (a captured constant): its readers' lines count
        kept = _below_entry(frames, ins)
        kept = [f for f in kept if not os.path.abspath(f.file).startswith(excluded)]
        for f in kept:
            frames_seen.setdefault(line_key(f.file, f.line), f)
        return kept

    counted = count_kernels(module)
    multipliers = _launch_multipliers(module)
    kernels: list[KernelAccount] = []
    owner: dict[str, str] = {}  # instruction name -> the kernel that writes its buffer
    for k in counted.kernels:
        ins = module.computations[k.computation].by_name[k.name]
        ops = list(_kernel_ops(module, ins))
        all_lines: dict[str, None] = {}
        own: dict[str, None] = {}
        stacks: dict[tuple[str, ...], None] = {}
        for op in ops:
            if op.opcode in ("constant", "parameter"):
                continue  # operands, not work: their metadata names whoever created the value
            frames = stack(op)
            if frames:
                own.setdefault(line_key(frames[0].file, frames[0].line))
                stacks.setdefault(tuple(line_key(f.file, f.line) for f in frames))
            for f in frames:
                all_lines.setdefault(line_key(f.file, f.line))
        mult = multipliers.get(k.computation)
        account = KernelAccount(
            name=k.name, kind=k.kind, computation=k.computation, shape=short_shape(k.shape),
            loop_depth=k.loop_depth, launches=mult, lines=list(all_lines), own_lines=list(own),
            stacks=[list(st) for st in stacks],
            output_bytes=shape_bytes(ins.shape),
        )
        kernels.append(account)
        owner[k.name] = k.name
        for done in _done_ops(module, k.computation, k.name):
            owner[done] = k.name

    by_name = {k.name: k for k in kernels}
    # Copies and transposes XLA inserted carry no location: they belong to the lines whose values they move.
    for k in kernels:
        ins = module.computations[k.computation].by_name[k.name]
        k.moves_data = _only_moves_data(module, ins)
        if not k.lines and k.moves_data:
            k.inserted = True
            k.lines = _neighbour_lines(module, k.computation, ins, stack, by_name)
    # Work XLA created without a location (an expanded cumsum's reduce-windows, a split
    # reduction's second pass) continues what feeds it: the kernel inherits the lines of the
    # kernel it reads from, else of the kernel that reads it. Repeated so chains propagate.
    for _ in range(len(kernels)):
        changed = False
        for k in kernels:
            if k.lines or k.moves_data:
                continue
            ins = module.computations[k.computation].by_name[k.name]
            source = _related_kernel(module, k.computation, ins, by_name)
            if source is not None:
                k.inferred = True
                k.lines, k.own_lines = list(source.lines), list(source.own_lines)
                k.stacks = [list(st) for st in source.stacks]
                changed = True
        if not changed:
            break

    temp_source = "buffer assignment"
    if buffer_assignment is not None:
        seen_values: set[int] = set()
        for value in parse_buffer_assignment(buffer_assignment):
            if not value.temporary or value.value_id in seen_values:
                continue
            seen_values.add(value.value_id)
            name = owner.get(value.instruction)
            if name is not None:
                by_name[name].temp_bytes += value.size
        if temp_bytes is None:
            temp_bytes = buffer_assignment_temp_bytes(buffer_assignment)
    else:
        temp_source = "kernel outputs"
        results = _result_instructions(module)
        for k in kernels:
            if k.name not in results:
                k.temp_bytes = k.output_bytes

    constants = _constants(module, stack)

    lines: dict[str, LineAccount] = {}

    def account(key: str) -> LineAccount:
        if key not in lines:
            frame = frames_seen.get(key)
            file, _, number = key.rpartition(":")
            text = ""
            if read_source_lines:
                text = linecache.getline(file, int(number)).strip()
            lines[key] = LineAccount(file=file, line=int(number), function=frame.function if frame else "",
                                     text=text)
        return lines[key]

    for k in kernels:
        for key in k.lines:
            acc = account(key)
            if k.moves_data:
                acc.copies.append(k.name)
            if k.inserted:
                continue
            acc.kernels.append(k.name)
            if key in k.own_lines:
                acc.own_kernels.append(k.name)
            if k.temp_bytes:
                acc.temp_bytes += k.temp_bytes
                acc.temp_buffers.append(k.name)
    for c in constants:
        for key in c.lines:
            acc = account(key)
            acc.constant_bytes += c.nbytes
            acc.constants.append(c.name)

    ordered = sorted(lines.values(), key=lambda a: (a.file, a.line))
    from jaxfuse_lint.verify.graph import kernel_graph

    return Attribution(
        graph=kernel_graph(module, module.name).to_json(),
        module=module.name,
        kernels=kernels,
        lines=ordered,
        constants=constants,
        temp_bytes=temp_bytes,
        temp_source=temp_source,
        constant_bytes=sum(c.nbytes for c in constants),
        launches_per_run=counted.launches_per_run,
        unattributed_kernels=[k.name for k in kernels if not k.lines],
        backend=backend,
    )


def attribute_compiled(
    lowered: Any,
    compiled: Any,
    *,
    buffer_assignment: str | None = None,
    exclude_dirs: Sequence[str] = (_PACKAGE_DIR,),
    compile_seconds: float | None = None,
) -> Attribution:
    """Attribute a program from its jax `Lowered` and `Compiled` objects.

    Pass the buffer assignment (from `compile_with_buffer_assignment`) for exact
    per-buffer temporaries; without it temporaries are estimated from kernel outputs.
    `lowered` may be None: only the compiled program is read.
    """
    del lowered  # the compiled module's metadata already carries every location kept
    memory = compiled.memory_analysis()
    temp = getattr(memory, "temp_size_in_bytes", None) if memory is not None else None
    backend = ""
    try:
        backend = compiled.runtime_executable().local_devices()[0].platform
    except Exception:  # noqa: BLE001 - only a label
        backend = ""
    result = attribute_hlo(
        compiled.as_text(), buffer_assignment=buffer_assignment,
        temp_bytes=int(temp) if temp is not None else None, exclude_dirs=exclude_dirs, backend=backend,
    )
    result.compile_seconds = compile_seconds
    return result


def compile_with_buffer_assignment(lowered: Any) -> tuple[Any, str | None]:
    """`lowered.compile()`, asking XLA to dump its buffer assignment; (compiled, text or None).

    The dump goes to a temporary directory that is removed afterwards. If this
    jax does not accept compiler options, the program is compiled plainly and
    the text is None.
    """
    with tempfile.TemporaryDirectory(prefix="jaxfuse_ba_") as directory:
        try:
            compiled = lowered.compile(compiler_options={
                "xla_dump_to": directory,
                "xla_dump_hlo_as_text": True,
                # Only the optimized module's dumps: not every pass, not the generated code.
                "xla_dump_hlo_pass_re": "^$",
            })
        except Exception:  # noqa: BLE001 - an older jax/xla without these options
            return lowered.compile(), None
        texts = sorted(glob.glob(os.path.join(directory, "*after_optimizations-buffer-assignment.txt")))
        if not texts:
            texts = sorted(glob.glob(os.path.join(directory, "*buffer-assignment.txt")))
        if not texts:
            return compiled, None
        with open(texts[-1], encoding="utf-8", errors="replace") as fh:
            return compiled, fh.read()


# --- helpers -----------------------------------------------------------------------

_JIT_NAME = re.compile(r"^(?:p?jit|pmap|xla_pmap)\((.+?)\)(?:/|$)")


def _frame_keys(frames: list[SourceFrame]) -> tuple[str, ...]:
    return tuple(line_key(f.file, f.line) for f in frames)


def _outside_stacks(module: HloModule) -> set[tuple[str, ...]]:
    """The call stacks outside the jitted function: of each op traced inside it (a frame of the
    function its `jit(NAME)/` op name names), the frames outside that frame — where `.lower()` or
    `f(x)` was called. An op whose whole stack is one of them was not made by a line of the
    function: a NumPy array captured as a constant is lowered with the stack of the `.lower()`
    call (a frame of click's core.py, say), and belongs to the lines that read it."""
    out: set[tuple[str, ...]] = set()
    for comp in module.computations.values():
        for ins in comp.instructions:
            m = _JIT_NAME.match(ins.metadata().get("op_name", ""))
            if not m:
                continue
            frames = module.source_stack(ins)
            inside = _below_entry(frames, ins)
            if 0 < len(inside) < len(frames) and _is_entry(inside[-1].function, m.group(1)):
                out.add(_frame_keys(frames[len(inside):]))
    return out


def _is_entry(function: str, name: str) -> bool:
    return function == name or function.endswith("." + name)


def _below_entry(frames: list[SourceFrame], ins: Instruction) -> list[SourceFrame]:
    """Drop the frames outside the jitted function (the line that called `.lower()` or `f(x)`).

    The op's name starts with `jit(NAME)/`; the outermost frame of a function
    called NAME is the jitted function's own line, and what is outside it was
    not traced.
    """
    m = _JIT_NAME.match(ins.metadata().get("op_name", ""))
    if not m or not frames:
        return frames
    name = m.group(1)
    for i in range(len(frames) - 1, -1, -1):
        if _is_entry(frames[i].function, name):
            return frames[: i + 1]
    return frames


_CALLED_KEYS = ("calls", "to_apply", "called_computations", "branch_computations", "body", "condition")


def _kernel_ops(module: HloModule, ins: Instruction) -> Iterable[Instruction]:
    """The instruction and every instruction of the computations it runs (fused bodies, reducers)."""
    yield ins
    seen: set[str] = set()
    pending = [c for key in _CALLED_KEYS for c in ins.called(key)]
    while pending:
        name = pending.pop()
        if name in seen or name not in module.computations:
            continue
        seen.add(name)
        for op in module.computations[name].instructions:
            yield op
            pending.extend(c for key in _CALLED_KEYS for c in op.called(key))


def _done_ops(module: HloModule, computation: str, start: str) -> list[str]:
    """`*-done` (and `*-update`) instructions completing the async op `start`."""
    return [
        ins.name for ins in module.computations[computation].instructions
        if (ins.opcode.endswith("-done") or ins.opcode.endswith("-update")) and ins.operands[:1] == [start]
    ]


def _launch_multipliers(module: HloModule) -> dict[str, int | None]:
    """How many times each computation runs per call (None when a trip count is unknown)."""
    multipliers: dict[str, int | None] = {}
    for comp, parent, via, role in iter_computation_tree(module):
        if parent is None:
            multipliers[comp] = 1
            continue
        base = multipliers.get(parent)
        ins = module.computations[parent].by_name[via]
        n = trip_count(ins) if role in ("body", "condition") else 1
        if base is None or n is None:
            multipliers[comp] = None
        else:
            multipliers[comp] = base * (n + 1 if role == "condition" else n)
    return multipliers


def _only_moves_data(module: HloModule, ins: Instruction) -> bool:
    ops = [op for op in _kernel_ops(module, ins)]
    return all(op.opcode in _MOVING_OPCODES or op.opcode in BOOKKEEPING_OPCODES for op in ops)


def _neighbour_lines(module: HloModule, computation: str, ins: Instruction, stack, by_name) -> list[str]:
    """Lines of what reads this instruction's result (through tuples, calls and loops),
    else of what it reads."""
    found: dict[str, None] = {}
    visited: set[tuple[str, str, int | None]] = set()

    def users_of(comp_name: str, name: str, depth: int, element: int | None = None) -> None:
        """`element`: the tuple element `name` stands for, when it is a tuple holding our value."""
        if (comp_name, name, element) in visited or depth > 8 or comp_name not in module.computations:
            return
        visited.add((comp_name, name, element))
        comp = module.computations[comp_name]
        for user in comp.instructions:
            if name not in user.operands:
                continue
            if user.name in by_name and by_name[user.name].lines and not by_name[user.name].inserted:
                for key in by_name[user.name].lines:
                    found.setdefault(key)
                continue
            frames = stack(user) if user.opcode not in ("while", "call", "conditional") else []
            if frames:
                found.setdefault(line_key(frames[0].file, frames[0].line))
            elif user.opcode == "tuple":
                users_of(comp_name, user.name, depth + 1, user.operands.index(name))
            elif user.opcode == "get-tuple-element":
                if element is None or int(user.attribute("index") or 0) == element:
                    users_of(comp_name, user.name, depth + 1)
            elif user.opcode == "bitcast":
                users_of(comp_name, user.name, depth + 1, element)
            elif user.opcode in ("call", "while"):
                index = user.operands.index(name)
                targets = user.called("to_apply") or user.called("calls") if user.opcode == "call" \
                    else user.called("body")
                for target in targets:
                    body = module.computations.get(target)
                    for param in body.instructions if body else []:
                        if param.opcode != "parameter":
                            continue
                        if user.opcode == "while":
                            users_of(target, param.name, depth + 1, element)
                        elif param.parameter_number == index:
                            users_of(target, param.name, depth + 1, element)
                if not found and user.opcode == "while":
                    for f in stack(user)[:1]:
                        found.setdefault(line_key(f.file, f.line))

    users_of(computation, ins.name, 0)
    if not found:
        comp = module.computations[computation]
        for operand in ins.operands:
            producer = comp.by_name.get(operand)
            if producer is None:
                continue
            if producer.name in by_name:
                for key in by_name[producer.name].lines:
                    found.setdefault(key)
            else:
                frames = stack(producer)
                if frames:
                    found.setdefault(line_key(frames[0].file, frames[0].line))
    return list(found)


def _related_kernel(module: HloModule, computation: str, ins: Instruction, by_name) -> KernelAccount | None:
    """The located kernel whose output `ins` reads (through bookkeeping), else one that reads `ins`."""
    comp = module.computations[computation]
    pending, seen = list(ins.operands), set()
    while pending:
        name = pending.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if name in by_name and by_name[name].lines and not by_name[name].inserted:
            return by_name[name]
        producer = comp.by_name.get(name)
        if producer is not None and name not in by_name and (
                producer.opcode in ("bitcast", "get-tuple-element", "tuple") or producer.opcode.endswith("-done")):
            pending.extend(producer.operands)
    for user in comp.instructions:
        if ins.name in user.operands and user.name in by_name and by_name[user.name].lines \
                and not by_name[user.name].inserted:
            return by_name[user.name]
    return None


def _result_instructions(module: HloModule) -> set[str]:
    """Instructions whose buffers are the program's result (the ENTRY root, through tuples)."""
    entry = module.entry
    result: set[str] = set()
    pending = [entry.root.name]
    while pending:
        name = pending.pop()
        if name in result:
            continue
        result.add(name)
        ins = entry.by_name.get(name)
        if ins is not None and ins.opcode in ("tuple", "bitcast", "get-tuple-element"):
            pending.extend(ins.operands)
    return result


def _constants(module: HloModule, stack) -> list[ConstantAccount]:
    """Non-scalar constants: bytes embedded in the executable, with the lines that use them."""
    out: list[ConstantAccount] = []
    callers: dict[str, list[tuple[str, Instruction]]] = {}
    for comp in module.computations.values():
        for ins in comp.instructions:
            for key in _CALLED_KEYS:
                for called in ins.called(key):
                    callers.setdefault(called, []).append((comp.name, ins))
    for comp in module.computations.values():
        for ins in comp.instructions:
            if ins.opcode != "constant" or shape_elements(ins.shape) <= 1:
                continue
            stacks: dict[tuple[str, ...], None] = {}
            own = stack(ins)
            if own:
                stacks.setdefault(tuple(line_key(f.file, f.line) for f in own))
            else:
                for user in comp.instructions:
                    if ins.name in user.operands:
                        for st in _reader_stacks(module, user, user.operands.index(ins.name), stack):
                            stacks.setdefault(st)
            keys = list(dict.fromkeys(st[0] for st in stacks if st))
            out.append(ConstantAccount(ins.name, short_shape(ins.shape), ins.nbytes, keys, [list(st) for st in stacks]))
    return out


def _reader_stacks(module: HloModule, user: Instruction, operand_index: int, stack) -> list[tuple[str, ...]]:
    """Call stacks of the ops that read operand `operand_index` of `user` (inside a fusion, the
    ops reading the matching parameter)."""

    def keys(ins: Instruction) -> tuple[str, ...]:
        return tuple(line_key(f.file, f.line) for f in stack(ins))

    called = user.called("calls") if user.opcode == "fusion" else []
    if called and called[0] in module.computations:
        body = module.computations[called[0]]
        found: dict[tuple[str, ...], None] = {}
        for p in body.instructions:
            if p.parameter_number != operand_index:
                continue
            for reader in body.instructions:
                if p.name in reader.operands and keys(reader):
                    found.setdefault(keys(reader))
        if found:
            return list(found)
    return [keys(user)] if keys(user) else []
