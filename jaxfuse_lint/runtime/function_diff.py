"""Top-level functions of two versions of a module: which ones a fix changed, and putting originals back.

`--fix --verify` (runtime/fix_rollback.py) and `verify --profile` (runtime/verify_profile.py)
measure the functions a fix changed; a function whose fix does not prove out gets its
original text back here, while the other functions of the file keep their fixes.
"""
from __future__ import annotations

from typing import Iterable

import libcst as cst


def top_level_functions(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """Top-level functions and methods (as `Class.method`) by name."""
    out: dict[str, cst.FunctionDef] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            out[stmt.name.value] = stmt
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            for inner in stmt.body.body:
                if isinstance(inner, cst.FunctionDef):
                    out[f"{stmt.name.value}.{inner.name.value}"] = inner
    return out


def changed_functions(original: str, fixed: str) -> list[str]:
    before, after = top_level_functions(cst.parse_module(original)), top_level_functions(cst.parse_module(fixed))
    mod = cst.parse_module("")
    return [name for name, node in after.items()
            if name in before and mod.code_for_node(node) != mod.code_for_node(before[name])]


class _Restore(cst.CSTTransformer):
    def __init__(self, originals: dict[str, cst.FunctionDef], names: set[str]) -> None:
        super().__init__()
        self.originals, self.names, self.cls = originals, names, []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.cls.append(node.name.value)

    def leave_ClassDef(self, original, updated):
        self.cls.pop()
        return updated

    def leave_FunctionDef(self, original, updated):
        name = ".".join(self.cls + [original.name.value])
        if name in self.names and name in self.originals:
            return self.originals[name]
        return updated


def restore_functions(original: str, fixed: str, names: Iterable[str]) -> str:
    """The fixed text with the named functions put back as they were."""
    originals = top_level_functions(cst.parse_module(original))
    return cst.parse_module(fixed).visit(_Restore(originals, set(names))).code
