"""Draw a kernel graph as SVG: with Graphviz's `dot` when it is installed, else in pure Python.

The pure-Python path lays the graph out with grandalf (a Sugiyama layered
layout, the algorithm `dot` uses) and writes the SVG here: boxes for kernels,
ellipses for the arguments and the output, notes for folded constants,
clusters (loop bodies, command buffers, branches) as rounded frames around
their kernels, and a dashed arrow for a value carried into the next loop
iteration. Loop-carried arrows take no part in the layering, as with
`constraint=false` in DOT, so layers follow the data flow of one iteration.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from html import escape

from jaxfuse_lint.verify.graph import GraphNode, KernelGraph, kernel_graph
from jaxfuse_lint.verify.hlo import HloModule

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
FONT_SIZE = 10
CHAR_WIDTH = 6.1  # of FONT at FONT_SIZE, generously: labels must fit their boxes
LINE_HEIGHT = 13
PAD = 8
CLUSTER_PAD = 10
FILL = {"kernel": "#e8e8e8", "argument": "#ffffff", "output": "#ffffff", "constant": "#fff4cc"}


def graph_svg(graph: KernelGraph, *, prefer_graphviz: bool = True) -> str:
    """SVG text for `graph`: Graphviz's rendering when `dot` is on PATH, else the pure-Python one."""
    if prefer_graphviz:
        dot = shutil.which("dot")
        if dot:
            proc = subprocess.run([dot, "-Tsvg"], input=graph.to_dot(), capture_output=True, text=True)
            if proc.returncode == 0 and "<svg" in proc.stdout:
                return proc.stdout[proc.stdout.index("<svg"):]
    return layout_svg(graph)


def write_graph_files(graph: KernelGraph, directory: str, stem: str) -> list[str]:
    """Write `stem.dot` and `stem.svg` into `directory`; return the paths written."""
    from jaxfuse_lint.core.writer import write_atomic

    os.makedirs(directory, exist_ok=True)
    dot_path = os.path.join(directory, f"{stem}.dot")
    svg_path = os.path.join(directory, f"{stem}.svg")
    write_atomic(dot_path, graph.to_dot())
    write_atomic(svg_path, graph_svg(graph))
    return [dot_path, svg_path]


def write_graph(module: HloModule, directory: str, stem: str, title: str) -> list[str]:
    """Write `stem.dot` and `stem.svg` (drawn by Graphviz's `dot` when installed, else laid out
    in pure Python); return the paths."""
    return write_graph_files(kernel_graph(module, title), directory, stem)


@dataclass
class _Box:
    node: GraphNode
    w: float
    h: float
    x: float = 0.0  # centre
    y: float = 0.0


class _View:
    def __init__(self, w: float, h: float) -> None:
        self.w, self.h = w, h
        self.xy = (0.0, 0.0)


def layout_svg(graph: KernelGraph) -> str:
    """Lay `graph` out with grandalf and write it as SVG (no Graphviz needed)."""
    from grandalf.graphs import Edge, Graph, Vertex
    from grandalf.layouts import SugiyamaLayout

    boxes = {n.id: _box(n) for n in graph.nodes}
    vertices = {nid: Vertex(nid) for nid in boxes}
    for nid, v in vertices.items():
        v.view = _View(boxes[nid].w, boxes[nid].h)
    laid_edges = []
    for e in graph.edges:
        if e.loop_carried or e.source not in vertices or e.target not in vertices or e.source == e.target:
            continue
        laid_edges.append(Edge(vertices[e.source], vertices[e.target], data=e))
    layout_graph = Graph(list(vertices.values()), laid_edges)

    # grandalf decides the layers (ranks) and the order within each layer; each
    # connected component is layered alone.
    rank: dict[str, int] = {}
    order: dict[str, float] = {}
    for component in layout_graph.C:
        sugiyama = SugiyamaLayout(component)
        sugiyama.init_all()
        sugiyama.draw()
        levels = sorted({round(v.view.xy[1], 3) for v in component.sV})
        for v in component.sV:
            rank[v.data] = levels.index(round(v.view.xy[1], 3))
            order[v.data] = v.view.xy[0]
    _place(graph, boxes, rank, order)

    clusters = _cluster_frames(graph, boxes)
    title_h = LINE_HEIGHT * len(graph.title) + PAD
    frames = [b for b in clusters.values()]
    min_x = min([b.x - b.w / 2 for b in boxes.values()] + [f[0] for f in frames] + [0.0]) - PAD
    min_y = min([b.y - b.h / 2 for b in boxes.values()] + [f[1] for f in frames] + [0.0]) - PAD - title_h
    max_x = max([b.x + b.w / 2 for b in boxes.values()] + [f[2] for f in frames]
                + [min_x + CHAR_WIDTH * max(len(t) for t in graph.title) + 2 * PAD]) + PAD
    max_y = max([b.y + b.h / 2 for b in boxes.values()] + [f[3] for f in frames]) + PAD
    width, height = max_x - min_x, max_y - min_y

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="{min_x:.1f} {min_y:.1f} {width:.1f} {height:.1f}" font-family="{FONT}" '
        f'font-size="{FONT_SIZE}">',
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
        "markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M 0 0 L 10 5 L 0 10 z\" fill=\"#444\"/>"
        "</marker></defs>",
        f'<title>{escape(graph.title[0])}</title>',
    ]
    for i, line in enumerate(graph.title):
        y = min_y + PAD + LINE_HEIGHT * (i + 1)
        weight = ' font-weight="bold"' if i == 0 else ""
        out.append(f'<text x="{min_x + PAD:.1f}" y="{y:.1f}"{weight}>{escape(line)}</text>')
    for cluster in graph.clusters:
        if cluster.id not in clusters:
            continue
        x0, y0, x1, y1 = clusters[cluster.id]
        out.append(f'<g class="cluster"><rect x="{x0:.1f}" y="{y0:.1f}" width="{x1 - x0:.1f}" '
                   f'height="{y1 - y0:.1f}" rx="8" fill="none" stroke="#888888"/>'
                   f'<text x="{x0 + 6:.1f}" y="{y0 + LINE_HEIGHT:.1f}" fill="#555555">'
                   f'{escape(cluster.label)}</text></g>')
    for e in graph.edges:
        if e.source not in boxes or e.target not in boxes:
            continue
        points = _route(boxes[e.source], boxes[e.target])
        dash = ' stroke-dasharray="5,4"' if e.loop_carried else ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<g class="edge"><polyline points="{path}" fill="none" stroke="#444"{dash} '
                   f'marker-end="url(#arrow)"/>')
        mid = points[len(points) // 2] if len(points) > 2 else (
            (points[0][0] + points[-1][0]) / 2, (points[0][1] + points[-1][1]) / 2)
        for i, line in enumerate(t for t in e.lines if t):
            out.append(f'<text x="{mid[0] + 4:.1f}" y="{mid[1] + LINE_HEIGHT * i:.1f}" font-size="{FONT_SIZE - 1}" '
                       f'fill="#555555">{escape(line)}</text>')
        out.append("</g>")
    for box in boxes.values():
        out.append(_node_svg(box))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _box(node: GraphNode) -> _Box:
    longest = max((len(line) for line in node.lines), default=1)
    w = longest * CHAR_WIDTH + 2 * PAD
    h = len(node.lines) * LINE_HEIGHT + PAD
    if node.kind in ("argument", "output"):
        w, h = w * 1.25, h + PAD
    return _Box(node, w, h)


def _node_svg(box: _Box) -> str:
    n = box.node
    x0, y0 = box.x - box.w / 2, box.y - box.h / 2
    fill = FILL.get(n.kind, "#ffffff")
    if n.kind in ("argument", "output"):
        shape = (f'<ellipse cx="{box.x:.1f}" cy="{box.y:.1f}" rx="{box.w / 2:.1f}" ry="{box.h / 2:.1f}" '
                 f'fill="{fill}" stroke="#333"/>')
    elif n.kind == "constant":
        fold = 8
        shape = (f'<path d="M {x0:.1f} {y0:.1f} H {x0 + box.w - fold:.1f} L {x0 + box.w:.1f} {y0 + fold:.1f} '
                 f'V {y0 + box.h:.1f} H {x0:.1f} Z" fill="{fill}" stroke="#333"/>')
    else:
        shape = (f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{box.w:.1f}" height="{box.h:.1f}" rx="5" '
                 f'fill="{fill}" stroke="#333"/>')
    first = box.y - (len(n.lines) - 1) * LINE_HEIGHT / 2 + FONT_SIZE / 3
    bold = ' font-weight="bold"'
    texts = [
        f'<text x="{box.x:.1f}" y="{first + i * LINE_HEIGHT:.1f}" text-anchor="middle"'
        f'{bold if i == 0 else ""}>{escape(line)}</text>'
        for i, line in enumerate(n.lines)
    ]
    return f'<g class="node {n.kind}" id="{escape(n.id)}">{shape}{"".join(texts)}</g>'


def _route(a: _Box, b: _Box) -> list[tuple[float, float]]:
    """Down the page: bottom of `a` to top of `b`; back up (a loop-carried value): round the right side."""
    if b.y > a.y:
        return [(a.x, a.y + a.h / 2), (b.x, b.y - b.h / 2)]
    if b.y == a.y:
        left, right = (a, b) if a.x < b.x else (b, a)
        start, end = (a.x + a.w / 2, a.y), (b.x - b.w / 2, b.y)
        return [start, end] if a is left else [(a.x - a.w / 2, a.y), (b.x + b.w / 2, b.y)]
    side = max(a.x + a.w / 2, b.x + b.w / 2) + 16
    return [(a.x + a.w / 2, a.y), (side, a.y), (side, b.y), (b.x + b.w / 2, b.y)]


def _place(graph: KernelGraph, boxes: dict[str, _Box], rank: dict[str, int], order: dict[str, float]) -> None:
    """Set every box's centre: rows by rank; each cluster in a column band of its own, so
    that a cluster's frame holds its kernels and nothing else."""
    rows = max(rank.values(), default=0) + 1
    row_h = [0.0] * rows
    for nid, box in boxes.items():
        row_h[rank.get(nid, 0)] = max(row_h[rank.get(nid, 0)], box.h)
    row_y, y = [], 0.0
    for h in row_h:
        row_y.append(y + h / 2)
        y += h + 2.5 * LINE_HEIGHT + 2 * CLUSTER_PAD  # room for edge labels and cluster titles
    for nid, box in boxes.items():
        box.y = row_y[rank.get(nid, 0)]

    children: dict[str | None, list[str]] = {}
    for c in graph.clusters:
        children.setdefault(c.parent, []).append(c.id)
    labels = {c.id: c.label for c in graph.clusters}
    members: dict[str | None, list[str]] = {}
    for n in graph.nodes:
        members.setdefault(n.cluster, []).append(n.id)

    def place(group: str | None, x0: float) -> float:
        """Lay out `group` from x0; return the width used."""
        pad = CLUSTER_PAD if group is not None else 0.0
        x = x0 + pad
        # The group's own boxes: side by side within each row, in grandalf's order.
        by_row: dict[int, list[str]] = {}
        for nid in members.get(group, []):
            by_row.setdefault(rank.get(nid, 0), []).append(nid)
        widths = {r: sum(boxes[nid].w for nid in row) + 2 * PAD * (len(row) - 1) for r, row in by_row.items()}
        own_width = max(widths.values(), default=0.0)
        for r, row in by_row.items():
            row.sort(key=lambda nid: order.get(nid, 0.0))
            cursor = x + (own_width - widths[r]) / 2  # rows centred in the group's band
            for nid in row:
                boxes[nid].x = cursor + boxes[nid].w / 2
                cursor += boxes[nid].w + 2 * PAD
        x += own_width + (2 * PAD if own_width else 0.0)
        for child in children.get(group, []):
            x += place(child, x) + 2 * PAD
        if children.get(group):
            x -= 2 * PAD
        width = x - x0 + pad
        if group is not None:
            width = max(width, CHAR_WIDTH * len(labels[group]) + 12)
        return width

    place(None, 0.0)


def _cluster_frames(graph: KernelGraph, boxes: dict[str, _Box]) -> dict[str, tuple[float, float, float, float]]:
    """Each cluster's frame: around its kernels and its sub-clusters, padded, with room for its label."""
    children: dict[str | None, list[str]] = {}
    for c in graph.clusters:
        children.setdefault(c.parent, []).append(c.id)
    members: dict[str, list[_Box]] = {}
    for box in boxes.values():
        if box.node.cluster is not None:
            members.setdefault(box.node.cluster, []).append(box)
    frames: dict[str, tuple[float, float, float, float]] = {}
    labels = {c.id: c.label for c in graph.clusters}

    def frame(cid: str) -> tuple[float, float, float, float] | None:
        rects: list[tuple[float, float, float, float]] = [
            (b.x - b.w / 2, b.y - b.h / 2, b.x + b.w / 2, b.y + b.h / 2) for b in members.get(cid, [])
        ]
        for child in children.get(cid, []):
            inner = frame(child)
            if inner is not None:
                rects.append(inner)
        if not rects:
            return None
        x0 = min(r[0] for r in rects) - CLUSTER_PAD
        y0 = min(r[1] for r in rects) - CLUSTER_PAD - LINE_HEIGHT
        x1 = max(max(r[2] for r in rects) + CLUSTER_PAD, x0 + CHAR_WIDTH * len(labels[cid]) + 12)
        y1 = max(r[3] for r in rects) + CLUSTER_PAD
        frames[cid] = (x0, y0, x1, y1)
        return frames[cid]

    for root in children.get(None, []):
        frame(root)
    return frames
