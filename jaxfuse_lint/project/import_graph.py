"""Graph algorithms over the project's import graph (file -> the files it imports): the order
files are analysed in (importers first), and the files upstream of each."""
from __future__ import annotations

import heapq


def canonical_order(graph: list[set[int]], names: list[str]) -> list[int]:
    """analysis_order, independent of the order the files were listed in (ties go by name)."""
    by_name = sorted(range(len(graph)), key=lambda i: names[i])
    new_of = {old: new for new, old in enumerate(by_name)}
    permuted = [{new_of[j] for j in graph[old]} for old in by_name]
    return [by_name[v] for v in analysis_order(permuted)]


def analysis_order(graph: list[set[int]]) -> list[int]:
    """Files ordered so that importers come before what they import, as far as cycles allow
    (Eades, Lin and Smyth's greedy heuristic for a small feedback arc set)."""
    n = len(graph)
    succ = [set(s) - {i} for i, s in enumerate(graph)]
    pred: list[set[int]] = [set() for _ in range(n)]
    for i, s in enumerate(succ):
        for j in s:
            pred[j].add(i)
    out_deg = [len(s) for s in succ]
    in_deg = [len(p) for p in pred]
    alive = [True] * n
    left = n
    head: list[int] = []
    tail: list[int] = []
    sinks = [v for v in range(n) if out_deg[v] == 0]
    sources = [v for v in range(n) if in_deg[v] == 0 and out_deg[v] > 0]
    # Lazy max-heap on out_deg - in_deg for breaking cycles.
    delta = [(-(out_deg[v] - in_deg[v]), v) for v in range(n)]
    heapq.heapify(delta)

    def remove(v: int) -> None:
        nonlocal left
        alive[v] = False
        left -= 1
        for w in succ[v]:
            if alive[w]:
                in_deg[w] -= 1
                heapq.heappush(delta, (-(out_deg[w] - in_deg[w]), w))
                if in_deg[w] == 0:
                    sources.append(w)
        for u in pred[v]:
            if alive[u]:
                out_deg[u] -= 1
                heapq.heappush(delta, (-(out_deg[u] - in_deg[u]), u))
                if out_deg[u] == 0:
                    sinks.append(u)

    while left:
        while sinks or sources:
            while sinks:
                v = sinks.pop()
                if alive[v]:
                    remove(v)
                    tail.append(v)
            while sources:
                v = sources.pop()
                if alive[v] and out_deg[v] > 0:
                    remove(v)
                    head.append(v)
        while left:
            d, v = heapq.heappop(delta)
            if alive[v] and -d == out_deg[v] - in_deg[v]:
                remove(v)
                head.append(v)
                break
    return head + tail[::-1]


def upstream_masks(graph: list[set[int]]) -> list[int]:
    """For each file, a bitmask of the files that can reach it along import edges (itself and
    its whole import cycle included): the files whose summaries decide its external map."""
    n = len(graph)
    comp = [-1] * n
    comps: list[list[int]] = []
    # Tarjan's algorithm, iteratively; components come out sinks first.
    index = [0] * n
    low = [0] * n
    seen = [False] * n
    on_stack = [False] * n
    stack: list[int] = []
    counter = 1
    for root in range(n):
        if seen[root]:
            continue
        work = [(root, iter(sorted(graph[root])))]
        seen[root] = True
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, children = work[-1]
            advanced = False
            for w in children:
                if not seen[w]:
                    seen[w] = True
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                members = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp[w] = len(comps)
                    members.append(w)
                    if w == v:
                        break
                comps.append(members)
    # Sources first (reverse of Tarjan's order): a component's upstream is its own files plus
    # the upstream of every component that imports it.
    masks = [0] * len(comps)
    preds: list[set[int]] = [set() for _ in comps]
    for v in range(n):
        for w in graph[v]:
            if comp[v] != comp[w]:
                preds[comp[w]].add(comp[v])
    for c in reversed(range(len(comps))):
        m = 0
        for v in comps[c]:
            m |= 1 << v
        for p in preds[c]:
            m |= masks[p]
        masks[c] = m
    return [masks[comp[v]] for v in range(n)]
