"""The kernel graph of an optimized HLO module, as Graphviz DOT (graph_render.py draws it as SVG).

The notebook's advice reads off this picture: boxes are kernels, arrows between
boxes are device arrays passed from one kernel to the next (temporaries), so
fewer boxes and fewer arrows is better. While bodies and conditions, called
computations and conditional branches are drawn as clusters; a dashed arrow is
a loop-carried value coming back from the previous iteration. Ellipses are the
function's arguments and output; notes are non-scalar constants baked into the
executable. Values are traced through the bookkeeping that launches nothing
(tuples, get-tuple-element, bitcasts, loop and call parameters), so an arrow
always joins the kernel that writes an array to the one that reads it.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from jaxfuse_lint.verify.hlo import (
    HloModule,
    Instruction,
    branch_computations,
    call_targets,
    count_kernels,
    iter_computation_tree,
    kernel_kind,
    shape_bytes,
    shape_elements,
    short_shape,
    trip_count,
)
from jaxfuse_lint.verify.report import format_bytes


@dataclass(frozen=True)
class _Source:
    node: str
    loop_carried: bool = False


class _GraphBuilder:
    def __init__(self, module: HloModule) -> None:
        self.module = module
        self.parents: dict[str, tuple[str, Instruction, str]] = {}
        self.children: dict[str, list[tuple[str, Instruction, str]]] = {}
        for comp, parent, via, role in iter_computation_tree(module):
            if parent is not None and via is not None:
                ins = module.computations[parent].by_name[via]
                self.parents[comp] = (parent, ins, role)
                self.children.setdefault(parent, []).append((comp, ins, role))
        self.constants: dict[str, Instruction] = {}

    @staticmethod
    def node_id(comp: str, name: str) -> str:
        return "n_" + re.sub(r"[^A-Za-z0-9_]", "_", f"{comp}__{name}")

    def sources(self, comp: str, name: str, path: tuple[int, ...], seen: set, carried: bool = False) -> list[_Source]:
        """The kernels (or arguments, constants) whose output `name` in `comp` is.

        `path` indexes into tuples (get-tuple-element of a tuple-shaped value);
        `carried` marks a value reaching a loop body from the previous iteration.
        """
        key = (comp, name, path, carried)
        if key in seen or comp not in self.module.computations:
            return []
        seen.add(key)
        ins = self.module.computations[comp].by_name.get(name)
        if ins is None:
            return []
        if kernel_kind(ins, self.module) is not None:
            return [_Source(self.node_id(comp, name), carried)]
        op = ins.opcode
        if op == "constant":
            if shape_elements(ins.shape) <= 1:
                return []
            node = self.node_id(comp, name)
            self.constants[node] = ins
            return [_Source(node, carried)]
        if op == "get-tuple-element":
            index = int(ins.attribute("index") or 0)
            return self.sources(comp, ins.operands[0], (index, *path), seen, carried)
        if op == "tuple":
            if not path:
                return [s for o in ins.operands for s in self.sources(comp, o, (), seen, carried)]
            return self._operand(comp, ins, path[0], path[1:], seen, carried)
        if op in ("bitcast", "opt-barrier", "add-dependency", "domain"):
            return self._operand(comp, ins, 0, path, seen, carried)
        if op.endswith("-done"):  # the result of an async pair comes from its *-start kernel
            return self._operand(comp, ins, 0, (), seen, carried)
        if op == "while":
            return self._roots(ins.called("body"), path, seen, carried)
        if op == "call":
            return self._roots(call_targets(ins), path, seen, carried)
        if op == "conditional":
            return self._roots(branch_computations(ins), path, seen, carried)
        if op == "parameter":
            return self._parameter(comp, ins, path, seen, carried)
        return []

    def _operand(self, comp: str, ins: Instruction, i: int, path: tuple[int, ...], seen: set,
                 carried: bool) -> list[_Source]:
        if i >= len(ins.operands):
            return []
        return self.sources(comp, ins.operands[i], path, seen, carried)

    def _roots(self, computations: list[str], path: tuple[int, ...], seen: set, carried: bool) -> list[_Source]:
        """What the computations return (a while body's result is the loop's result)."""
        return [
            s for c in computations if c in self.module.computations
            for s in self.sources(c, self.module.computations[c].root.name, path, seen, carried)
        ]

    def _parameter(self, comp: str, ins: Instruction, path: tuple[int, ...], seen: set,
                   carried: bool) -> list[_Source]:
        number = ins.parameter_number or 0
        if comp == self.module.entry_name:
            return [_Source(f"arg{number}", carried)]
        if comp not in self.parents:
            return []
        parent, via, role = self.parents[comp]
        if role in ("body", "condition"):
            # The loop state: the initial value, or the body's result of the previous iteration.
            initial = self._operand(parent, via, 0, path, seen, carried)
            return initial + self._roots(via.called("body"), path, seen, True)
        if role == "call":
            return self._operand(parent, via, number, path, seen, carried)
        if role.startswith("branch"):
            # A conditional's operand 0 is the predicate (or branch index); branch k gets operand k + 1.
            return self._operand(parent, via, int(role.split()[1]) + 1, path, seen, carried)
        return []


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


@dataclass
class GraphNode:
    id: str
    kind: str  # "argument", "output", "kernel" or "constant"
    lines: list[str]  # the label, one entry per line
    cluster: str | None = None  # the cluster (loop body, call, branch) it is drawn in
    instruction: str = ""  # the HLO instruction of a kernel or constant


@dataclass
class GraphCluster:
    id: str
    label: str
    parent: str | None


@dataclass
class GraphEdge:
    source: str
    target: str
    lines: list[str]  # the array passed: shape, bytes
    loop_carried: bool = False


@dataclass
class KernelGraph:
    """The kernel graph as data, for DOT (`to_dot`) and for the pure-Python SVG writer."""

    name: str
    title: list[str]
    nodes: list[GraphNode]
    clusters: list[GraphCluster]
    edges: list[GraphEdge]

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> KernelGraph:
        return cls(
            name=data.get("name", ""),
            title=list(data.get("title", [])),
            nodes=[GraphNode(**n) for n in data.get("nodes", [])],
            clusters=[GraphCluster(**c) for c in data.get("clusters", [])],
            edges=[GraphEdge(**e) for e in data.get("edges", [])],
        )

    def with_notes(self, notes: dict[str, list[str]], title: list[str] | None = None) -> KernelGraph:
        """A copy with label lines added to kernels and constants, by instruction name."""
        return KernelGraph(
            name=self.name,
            title=list(title) if title is not None else list(self.title),
            nodes=[GraphNode(n.id, n.kind, [*n.lines, *notes.get(n.instruction, [])], n.cluster, n.instruction)
                   if n.instruction else n for n in self.nodes],
            clusters=list(self.clusters),
            edges=list(self.edges),
        )

    def to_dot(self) -> str:
        lines = [
            f'digraph "{_escape(self.name or "hlo")}" {{',
            "  rankdir=TB;",
            '  node [fontname="Helvetica", fontsize=10];',
            '  edge [fontname="Helvetica", fontsize=9];',
            "  labelloc=t;",
            f'  label="{_dot_label(self.title)}";',
        ]
        for node in self.nodes:
            if node.kind in ("argument", "output"):
                lines.append(f'  {node.id} [shape=ellipse, label="{_dot_label(node.lines)}"];')

        def emit(cluster: str | None, indent: str) -> None:
            for node in self.nodes:
                if node.kind == "kernel" and node.cluster == cluster:
                    lines.append(f'{indent}{node.id} [shape=box, style="rounded,filled", fillcolor="#e8e8e8", '
                                 f'label="{_dot_label(node.lines)}"];')
            for child in self.clusters:
                if child.parent == cluster:
                    lines.append(f"{indent}subgraph {child.id} {{")
                    lines.append(f'{indent}  label="{_escape(child.label)}"; style=rounded; color="#888888";')
                    emit(child.id, indent + "  ")
                    lines.append(f"{indent}}}")

        emit(None, "  ")
        for node in self.nodes:
            if node.kind == "constant":
                lines.append(f'  {node.id} [shape=note, label="{_dot_label(node.lines)}"];')
        for edge in self.edges:
            style = ', style=dashed, constraint=false' if edge.loop_carried else ""
            lines.append(f'  {edge.source} -> {edge.target} [label="{_dot_label(edge.lines)}"{style}];')
        lines.append("}")
        return "\n".join(lines) + "\n"


def argument_label(hlo_name: str, number: int) -> str:
    """The user's name of an argument from its HLO parameter's name: `x` for `x.1` (XLA numbers
    every instruction name); `argument 0` where the name is a generic one (`Arg_0.1`, `p0`)."""
    import re

    base = re.sub(r"\.\d+$", "", hlo_name)
    if not base or re.fullmatch(r"(?:Arg_|arg|p|param_?|parameter_?)\d*", base):
        return f"argument {number}"
    return base


def _dot_label(lines: list[str]) -> str:
    return "\\n".join(_escape(line) for line in lines)


def kernel_graph(module: HloModule, title: str, kernel_notes: dict[str, list[str]] | None = None) -> KernelGraph:
    """The kernel graph of `module`; `kernel_notes` adds label lines to kernels, by instruction name
    (explain labels each kernel with the source lines it runs)."""
    builder = _GraphBuilder(module)
    kernels = count_kernels(module)
    notes = kernel_notes or {}
    nodes: list[GraphNode] = []
    clusters: list[GraphCluster] = []
    entry = module.entry
    params = [ins for ins in entry.instructions if ins.opcode == "parameter"]
    for ins in sorted(params, key=lambda i: i.parameter_number or 0):
        nodes.append(GraphNode(f"arg{ins.parameter_number}", "argument",
                               [argument_label(ins.name, ins.parameter_number or 0), short_shape(ins.shape)]))
    nodes.append(GraphNode("output", "output", ["output", short_shape(entry.root.shape)]))

    edges: set[tuple[str, str, str, bool]] = set()

    def add_operand_edges(comp: str, ins: Instruction, target: str) -> None:
        computation = module.computations[comp]
        for operand in ins.operands:
            producer = computation.by_name.get(operand)
            label = short_shape(producer.shape) if producer is not None else ""
            if producer is not None and shape_bytes(producer.shape):
                label += f"\n{format_bytes(shape_bytes(producer.shape))}"
            for source in builder.sources(comp, operand, (), set()):
                edges.add((source.node, target, label, source.loop_carried))

    def emit(comp: str, cluster: str | None) -> None:
        for ins in module.computations[comp].instructions:
            kind = kernel_kind(ins, module)
            if kind is None:
                continue
            node = builder.node_id(comp, ins.name)
            nodes.append(GraphNode(node, "kernel", [kind, short_shape(ins.shape), ins.name, *notes.get(ins.name, [])],
                                   cluster, ins.name))
            add_operand_edges(comp, ins, node)
        for child, via, role in builder.children.get(comp, []):
            if role == "body":
                n = trip_count(via)
                label = f"while body ({via.name}, {'×' + str(n) if n is not None else 'trip count unknown'})"
            elif role == "condition":
                label = f"while condition ({via.name})"
            else:
                label = f"{role} ({via.name})"
            cluster_id = f"cluster_{re.sub(r'[^A-Za-z0-9_]', '_', child)}"
            clusters.append(GraphCluster(cluster_id, label, cluster))
            emit(child, cluster_id)

    emit(module.entry_name, None)
    output_label = f"{short_shape(entry.root.shape)}\n{format_bytes(shape_bytes(entry.root.shape))}"
    for source in builder.sources(module.entry_name, entry.root.name, (), set()):
        edges.add((source.node, "output", output_label, False))
    for node, ins in builder.constants.items():
        nodes.append(GraphNode(node, "constant", ["constant", short_shape(ins.shape), format_bytes(ins.nbytes),
                                                  *notes.get(ins.name, [])], None, ins.name))
    # A value passed through a loop unchanged arrives both ways; the plain arrow says it.
    edges = {e for e in edges if not (e[3] and (e[0], e[1], e[2], False) in edges)}
    return KernelGraph(
        name=module.name,
        title=[title, f"{kernels.total} kernels"],
        nodes=nodes,
        clusters=clusters,
        edges=[GraphEdge(a, b, label.split("\n") if label else [""], carried)
               for a, b, label, carried in sorted(edges)],
    )


def kernel_graph_dot(module: HloModule, title: str, kernel_notes: dict[str, list[str]] | None = None) -> str:
    """DOT text for the kernel graph of `module`."""
    return kernel_graph(module, title, kernel_notes).to_dot()
