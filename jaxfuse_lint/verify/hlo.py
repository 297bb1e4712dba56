"""Kernels, loops and constants read from optimized HLO text.

The optimized module (`compiled.as_text()`) says what will run: every
instruction left in ENTRY (and in the while bodies, conditional branches and
calls it reaches) that is not pure bookkeeping launches one kernel. Fusion and
reduction sub-computations are the *inside* of a kernel and are never entered.

Counted as kernels: fusions (by kind, e.g. `fusion:kLoop`,
`fusion:kCustom(__triton_gemm)`), custom-calls (by target, e.g.
`custom-call:__cublas$gemm`), and every other leftover operation by its opcode
(`fft`, `copy`, `sort`, `scatter`, `dot`, ...). An async `*-start`/`*-done` pair
is one kernel, counted at the start. GPU command buffers wrap kernels in `call`
instructions, so calls are entered. Kernels inside a while body or condition
are reported separately, and where XLA recorded the trip count
(`known_trip_count` in the while's backend_config) the launches of one run are
computed: body kernels run n times, condition kernels n + 1 times.

The text format is parsed directly (rather than through jaxlib's private
bindings) so GPU modules can be tested on a CPU-only machine, from text.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

# Instructions that move no data on the device: no kernel is launched for them.
BOOKKEEPING_OPCODES = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
    "add-dependency", "opt-barrier", "domain", "partition-id", "replica-id",
    "get-dimension-size", "set-dimension-size",
})
CONTROL_OPCODES = frozenset({"while", "conditional", "call"})

ELEMENT_BYTES = {
    "pred": 1, "s2": 1, "s4": 1, "u2": 1, "u4": 1, "s8": 1, "u8": 1,
    "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3": 1, "f8e4m3b11fnuz": 1, "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1, "f8e3m4": 1, "f8e8m0fnu": 1, "f4e2m1fn": 1,
    "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
    "s32": 4, "u32": 4, "f32": 4,
    "s64": 8, "u64": 8, "f64": 8, "c64": 8,
    "c128": 16, "token": 0, "opaque": 0,
}

_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s")
_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_ARRAY_SHAPE = re.compile(r"([a-z][a-z0-9]*)\[([0-9,]*)\]")
_TRIP_COUNT = re.compile(r'"known_trip_count"\s*:\s*\{\s*"n"\s*:\s*"?(\d+)"?')
_BACKEND_KIND = re.compile(r'"kind"\s*:\s*"([^"]+)"')
_METADATA_FIELD = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^\s,}]+))')
_TABLE_ROW = re.compile(r'^(\d+)\s+(.*)$')
_TABLE_FIELD = re.compile(r'(\w+)=(\d+)')
# `key=` patterns of Instruction.attribute, compiled once per key.
_ATTRIBUTE_KEYS: dict[str, "re.Pattern[str]"] = {}
_LOCATION_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


@dataclass
class Instruction:
    name: str
    shape: str
    opcode: str
    operands: list[str]
    attributes: str
    is_root: bool = False
    # The raw text between the opcode's parentheses (for parameter(0), constant(...)).
    operand_text: str = ""

    def attribute(self, key: str) -> str | None:
        """The raw value of `key=...` (a %name, a {list} or a "string"); None if absent."""
        memo = self.__dict__.setdefault("_attribute_memo", {})
        if key in memo:
            return memo[key]
        pattern = _ATTRIBUTE_KEYS.get(key)
        if pattern is None:
            pattern = _ATTRIBUTE_KEYS[key] = re.compile(rf"(?:^|,\s*){re.escape(key)}=")
        m = pattern.search(self.attributes)
        if not m:
            value = None
        else:
            rest = self.attributes[m.end():]
            if rest.startswith("{"):
                value = rest[: _balanced_end(rest, 0, "{", "}") + 1]
            elif rest.startswith('"'):
                value = rest[1:rest.index('"', 1)]
            else:
                value = re.split(r"[,\s]", rest, maxsplit=1)[0]
        memo[key] = value  # (an instruction's attributes never change: asked again per kernel walk)
        return value

    def metadata(self) -> dict[str, str]:
        """`metadata={op_name="..." source_file="..." source_line=12 stack_frame_id=3}` as a dict."""
        raw = self.attribute("metadata")
        if not raw:
            return {}
        return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
                for m in _METADATA_FIELD.finditer(raw.strip("{}"))}

    def called(self, key: str) -> list[str]:
        """Computation names in `key=%c` or `key={%a, %b}`."""
        value = self.attribute(key)
        if value is None:
            return []
        return [name.lstrip("%") for name in re.findall(r"%?[\w.\-]+", value.strip("{}"))]

    @property
    def nbytes(self) -> int:
        return shape_bytes(self.shape)

    @property
    def parameter_number(self) -> int | None:
        if self.opcode != "parameter":
            return None
        m = re.match(r"\s*(\d+)", self.operand_text)
        return int(m.group(1)) if m else None


@dataclass
class Computation:
    name: str
    instructions: list[Instruction]
    is_entry: bool = False

    def __post_init__(self) -> None:
        self.by_name = {ins.name: ins for ins in self.instructions}

    @property
    def root(self) -> Instruction:
        for ins in self.instructions:
            if ins.is_root:
                return ins
        return self.instructions[-1]


@dataclass(frozen=True)
class SourceFrame:
    """One frame of the Python call stack that traced an operation."""

    file: str
    line: int
    function: str = ""


@dataclass
class HloModule:
    name: str
    computations: dict[str, Computation]
    entry_name: str
    # Newer XLA prints each op's Python stack once, in tables before the
    # computations (FileNames, FunctionNames, FileLocations, StackFrames), and
    # refers to it by `stack_frame_id` in the op's metadata.
    stack_frames: dict[int, tuple[SourceFrame, int]] = field(default_factory=dict)

    @property
    def entry(self) -> Computation:
        return self.computations[self.entry_name]

    def source_stack(self, ins: Instruction) -> list[SourceFrame]:
        """The Python frames that traced `ins`, innermost first ([] when XLA kept none).

        Reads `stack_frame_id` (newer XLA) or `source_file`/`source_line` (older XLA,
        which keeps only the innermost user frame).
        """
        meta = ins.metadata()
        frame_id = meta.get("stack_frame_id")
        if frame_id and frame_id.isdigit() and self.stack_frames:
            stack: list[SourceFrame] = []
            current, seen = int(frame_id), set()
            while current in self.stack_frames and current not in seen:
                seen.add(current)
                frame, parent = self.stack_frames[current]
                stack.append(frame)
                current = parent
            return stack
        source_file, source_line = meta.get("source_file"), meta.get("source_line")
        if source_file and source_line and source_line.isdigit():
            return [SourceFrame(source_file, int(source_line), "")]
        return []


def parse_hlo_module(text: str) -> HloModule:
    """Parse HLO text (as printed by `compiled.as_text()`)."""
    computations: dict[str, Computation] = {}
    module_name = ""
    entry_name = None
    current: list[Instruction] | None = None
    current_name = ""
    current_is_entry = False
    tables: dict[str, dict[int, str]] = {}
    table: dict[int, str] | None = None
    for line in text.splitlines():
        if line.startswith("HloModule "):
            module_name = line.split()[1].rstrip(",")
            continue
        if current is None and line.strip() in _LOCATION_TABLES:
            table = tables.setdefault(line.strip(), {})
            continue
        if current is None and table is not None:
            row = _TABLE_ROW.match(line.strip())
            if row:
                table[int(row.group(1))] = row.group(2)
                continue
            table = None
        if current is None:
            stripped = line.rstrip()
            if stripped.endswith("{") and not line[:1].isspace() and "->" in line:
                m = _HEADER.match(line)
                if m:
                    current, current_name = [], m.group(2)
                    current_is_entry = bool(m.group(1))
            continue
        if line.strip() == "}":
            computations[current_name] = Computation(current_name, current, current_is_entry)
            if current_is_entry:
                entry_name = current_name
            current = None
            continue
        ins = _parse_instruction(line)
        if ins is not None:
            current.append(ins)
    if entry_name is None:
        raise ValueError("no ENTRY computation in HLO text")
    return HloModule(module_name, computations, entry_name, _stack_frames(tables))


def _stack_frames(tables: dict[str, dict[int, str]]) -> dict[int, tuple[SourceFrame, int]]:
    """Frame id -> (frame, parent frame id) from the printed location tables."""
    if "StackFrames" not in tables:
        return {}
    files = {k: _unquote(v) for k, v in tables.get("FileNames", {}).items()}
    functions = {k: _unquote(v) for k, v in tables.get("FunctionNames", {}).items()}
    locations: dict[int, SourceFrame] = {}
    for key, row in tables.get("FileLocations", {}).items():
        fields = dict(_TABLE_FIELD.findall(row))
        locations[key] = SourceFrame(
            files.get(int(fields.get("file_name_id", 0)), "?"),
            int(fields.get("line", 0)),
            functions.get(int(fields.get("function_name_id", 0)), ""),
        )
    raw = {key: dict(_TABLE_FIELD.findall(row)) for key, row in tables["StackFrames"].items()}
    # XLA prints a frame's parent as (parent id + 1), 1 meaning "no parent", in the
    # versions that print ids from 1 with a root frame 1 pointing at "itself"; others
    # print the parent id with 0 meaning none. A frame naming itself is only possible
    # in the first convention, so it tells them apart.
    shifted = any(int(f.get("parent_frame_id", 0)) == key for key, f in raw.items())
    frames: dict[int, tuple[SourceFrame, int]] = {}
    for key, f in raw.items():
        location = locations.get(int(f.get("file_location_id", 0)))
        if location is None:
            continue
        parent = int(f.get("parent_frame_id", 0)) - (1 if shifted else 0)
        frames[key] = (location, parent)
    return frames


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


def _balanced_end(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index of the bracket closing the one at `start` (quotes are skipped)."""
    depth = 0
    in_string = False
    i = start
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(text) - 1


def _parse_instruction(line: str) -> Instruction | None:
    m = _INSTRUCTION.match(line)
    if not m:
        return None
    is_root, name, rest = bool(m.group(1)), m.group(2), m.group(3)
    if rest.startswith("("):  # tuple shape: may hold spaces and /*index=N*/ comments
        end = _balanced_end(rest, 0, "(", ")")
        shape, rest = rest[: end + 1], rest[end + 1:].lstrip()
    else:
        shape, _, rest = rest.partition(" ")
    om = re.match(r"([\w\-]+)\(", rest)
    if not om:
        return None
    opcode = om.group(1)
    open_at = om.end() - 1
    close_at = _balanced_end(rest, open_at, "(", ")")
    inside = rest[open_at + 1: close_at]
    attributes = rest[close_at + 1:].lstrip(", ").strip()
    operands = []
    if opcode not in ("constant", "parameter"):
        for part in _split_top_level(inside):
            token = part.strip().split()[-1] if part.strip() else ""
            if token.startswith("%") or re.match(r"^[\w.\-]+$", token):
                operands.append(token.lstrip("%"))
    return Instruction(name, shape, opcode, operands, attributes, is_root, inside)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape such as `f32[64,64,33]{2,1,0}` or a tuple of them."""
    total = 0
    for dtype, dims in _ARRAY_SHAPE.findall(re.sub(r"\{[^}]*\}", "", shape)):
        count = 1
        for d in filter(None, dims.split(",")):
            count *= int(d)
        total += count * ELEMENT_BYTES.get(dtype, 4)
    return total


def shape_elements(shape: str) -> int:
    m = _ARRAY_SHAPE.search(shape)
    if not m:
        return 0
    count = 1
    for d in filter(None, m.group(2).split(",")):
        count *= int(d)
    return count


def short_shape(shape: str) -> str:
    """`f32[64,64,33]{2,1,0}` -> `f32[64,64,33]` (layouts dropped)."""
    return re.sub(r"\{[^{}]*\}", "", shape).strip()


# --- kernels ---------------------------------------------------------------

@dataclass(frozen=True)
class Kernel:
    """One launched kernel: where it sits and what it is."""

    computation: str
    name: str
    kind: str
    shape: str
    loop_depth: int  # 0: runs once per call; >0: inside that many nested while loops


@dataclass
class KernelCount:
    kernels: list[Kernel] = field(default_factory=list)
    # Launches in one execution; None when a loop's trip count is unknown.
    launches_per_run: int | None = 0
    loops: list[dict] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.kernels)

    @property
    def loop_body(self) -> int:
        return sum(1 for k in self.kernels if k.loop_depth > 0)

    @property
    def by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(k.kind for k in self.kernels).items()))

    def to_json(self) -> dict:
        return {
            "total": self.total,
            "loop_body": self.loop_body,
            "launches_per_run": self.launches_per_run,
            "by_kind": self.by_kind,
            "loops": self.loops,
            "kernels": [
                {"computation": k.computation, "name": k.name, "kind": k.kind,
                 "shape": short_shape(k.shape), "loop_depth": k.loop_depth}
                for k in self.kernels
            ],
        }


def kernel_kind(ins: Instruction, module: HloModule | None = None) -> str | None:
    """The kind of kernel `ins` launches, or None when it launches none."""
    op = ins.opcode
    if op in BOOKKEEPING_OPCODES or op in CONTROL_OPCODES:
        return None
    if op.endswith("-done") or op.endswith("-update"):
        return None  # the matching *-start was counted
    if op == "async-start":
        wrapped = ins.called("calls")
        if module is not None and wrapped and wrapped[0] in module.computations:
            inner = kernel_kind(module.computations[wrapped[0]].root, module)
            if inner:
                return f"{inner} (async)"
        return "async"
    if op.endswith("-start"):
        return op[: -len("-start")]
    if op == "fusion":
        kind = ins.attribute("kind") or "kUnknown"
        if kind == "kCustom":
            m = _BACKEND_KIND.search(ins.attribute("backend_config") or "")
            if m:
                return f"fusion:kCustom({m.group(1)})"
        return f"fusion:{kind}"
    if op == "custom-call":
        return f"custom-call:{ins.attribute('custom_call_target') or '?'}"
    return op


def branch_computations(ins: Instruction) -> list[str]:
    """A conditional's branches: `branch_computations={...}` or the older true/false pair."""
    return ins.called("branch_computations") or [*ins.called("true_computation"), *ins.called("false_computation")]


def call_targets(ins: Instruction) -> list[str]:
    return ins.called("to_apply") or ins.called("calls")


def trip_count(ins: Instruction) -> int | None:
    m = _TRIP_COUNT.search(ins.attribute("backend_config") or "")
    return int(m.group(1)) if m else None


def count_kernels(module: HloModule) -> KernelCount:
    """Walk from ENTRY through while/conditional/call, never into fusions or reducers."""
    result = KernelCount()
    result.launches_per_run = _walk(module, module.entry_name, 0, result, set())
    return result


def _walk(module: HloModule, comp_name: str, depth: int, out: KernelCount, stack: set[str]) -> int | None:
    """Append the kernels of one computation; return its launches per execution."""
    if comp_name in stack or comp_name not in module.computations:
        return 0  # a malformed (recursive or dangling) reference: count nothing twice
    stack = stack | {comp_name}
    launches: int | None = 0
    for ins in module.computations[comp_name].instructions:
        kind = kernel_kind(ins, module)
        if kind is not None:
            out.kernels.append(Kernel(comp_name, ins.name, kind, ins.shape, depth))
            launches = _add(launches, 1)
        elif ins.opcode == "while":
            n = trip_count(ins)
            body = ins.called("body")
            cond = ins.called("condition")
            before = len(out.kernels)
            body_launches = _walk(module, body[0], depth + 1, out, stack) if body else 0
            cond_launches = _walk(module, cond[0], depth + 1, out, stack) if cond else 0
            out.loops.append({
                "while": ins.name, "computation": comp_name, "trip_count": n,
                "kernels": len(out.kernels) - before,
            })
            if n is None or body_launches is None or cond_launches is None:
                launches = None
            else:
                launches = _add(launches, n * body_launches + (n + 1) * cond_launches)
        elif ins.opcode == "conditional":
            branches = branch_computations(ins)
            # One branch runs per call: its launches are at most the largest branch's.
            counts = [_walk(module, b, depth, out, stack) for b in branches]
            launches = None if any(c is None for c in counts) else _add(launches, max(counts, default=0))
        elif ins.opcode == "call":
            for c in call_targets(ins):
                launches = _add(launches, _walk(module, c, depth, out, stack))
    return launches


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def constant_bytes(module: HloModule) -> int:
    """Bytes of non-scalar constants anywhere in the module (kernel bodies included).

    These are arrays XLA embeds in the executable: on GPU they occupy device
    memory for the executable's lifetime. Scalars (and splat broadcasts, which
    XLA keeps as a scalar constant plus a broadcast) cost nothing.
    """
    total = 0
    for comp in module.computations.values():
        for ins in comp.instructions:
            if ins.opcode == "constant" and shape_elements(ins.shape) > 1:
                total += ins.nbytes
    return total


def iter_computation_tree(module: HloModule) -> Iterator[tuple[str, str | None, str | None, str]]:
    """(computation, parent computation, instruction in parent, role) for every
    computation reached the way kernels are counted; ENTRY has parent None."""
    seen: set[str] = set()

    def visit(name: str, parent: str | None, via: str | None, role: str):
        if name in seen or name not in module.computations:
            return
        seen.add(name)
        yield name, parent, via, role
        for ins in module.computations[name].instructions:
            if ins.opcode == "while":
                for body in ins.called("body"):
                    yield from visit(body, name, ins.name, "body")
                for cond in ins.called("condition"):
                    yield from visit(cond, name, ins.name, "condition")
            elif ins.opcode == "conditional":
                for i, b in enumerate(branch_computations(ins)):
                    yield from visit(b, name, ins.name, f"branch {i}")
            elif ins.opcode == "call":
                for c in call_targets(ins):
                    yield from visit(c, name, ins.name, "call")

    yield from visit(module.entry_name, None, None, "entry")
