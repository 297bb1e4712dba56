"""Shared by the measured rules (JF501-JF503): findings that only a recorded run can give.

They read `model.runtime` (model/runtime_facts.py), the facts a profile from
`jaxfuse-lint record` holds for exactly the text being checked, and report
nothing without one."""
from __future__ import annotations

from typing import Any, Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.scopes import Function


def matched_entries(model: SemanticModel) -> Iterator[tuple[Function, dict[str, Any]]]:
    """(function, entry) for every recorded jit entry point defined in this text."""
    runtime = model.runtime
    if runtime is None:
        return
    for fn in model.index.functions:
        for entry in runtime.entries_of(model, fn):
            yield fn, entry


def name_node(fn: Function) -> cst.CSTNode:
    """Where a finding about a whole function points: its name (the lambda itself)."""
    return fn.node.name if isinstance(fn.node, cst.FunctionDef) else fn.node


def entry_label(entry: dict[str, Any]) -> str:
    return f"`{entry.get('api', 'jax.jit')}({entry.get('qualname', '?').replace('.<locals>', '')})`"


def nbytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def entry_names(model: SemanticModel) -> dict[str, str]:
    """{entry id: label} for the entries the file's facts mention."""
    runtime = model.runtime
    out: dict[str, str] = {}
    if runtime is None:
        return out
    for record in runtime.facts.functions:
        out.setdefault(record.get("entry") or "", f"`{record.get('api', 'jax.jit')}("
                       f"{(record.get('entry_name') or '?').replace('.<locals>', '')})`")
    for entry in runtime.facts.entries:
        out[entry["id"]] = entry_label(entry)
    return out
