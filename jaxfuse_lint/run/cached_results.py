"""A file's result as the cache keeps it: FileResult <-> JSON, and whether a cache entry has the
shape this version reads (a damaged entry is a miss, never an error later)."""
from __future__ import annotations

from typing import Any

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.core.json_types import str_list, str_map, typed
from jaxfuse_lint.engine.pipeline import FileResult
from jaxfuse_lint.project.summary import Summary


def _diagnostics_to_json(diagnostics: list[Diagnostic]) -> list[dict[str, Any]]:
    out = []
    for d in diagnostics:
        data = d.to_json()
        data["name"] = d.name
        if d.extra:
            data["extra"] = d.extra
        out.append(data)
    return out


def result_to_json(result: FileResult) -> dict[str, Any]:
    return {"diagnostics": _diagnostics_to_json(result.diagnostics), "errors": list(result.errors),
            "skipped": result.skipped, "undecided": _diagnostics_to_json(result.undecided)}


def entry_is_valid(filename: str, entry: dict[str, Any]) -> bool:
    """Whether a cache entry has the shape this version reads (every part it is used for
    decodes, each value of its type): a damaged one is a miss, never a KeyError later."""
    try:
        if not (type(entry["jax"]) is bool and typed(entry["filename"], str, "filename") == filename):
            return False
        str_map(entry["external"], "external")
        if entry["summary"] is not None:
            Summary.from_json(entry["summary"])
        result_from_json(filename, entry["result"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False
    return True


def result_from_json(filename: str, data: dict[str, Any]) -> FileResult:
    """A result as result_to_json wrote it for FILENAME: ValueError if any value has the wrong
    type, or a diagnostic is of another file."""
    typed(data, dict, "result")
    return FileResult(filename, _diagnostics_from_json(filename, data["diagnostics"]), None,
                      str_list(data.get("errors", []), "errors"), typed(data.get("skipped", False), bool, "skipped"),
                      _diagnostics_from_json(filename, data.get("undecided", [])))


def _diagnostics_from_json(filename: str, items: Any) -> list[Diagnostic]:
    diags = []
    for item in typed(items, list, "diagnostics"):
        d = Diagnostic.from_json(item)
        if d.filename != filename:
            raise ValueError(f"a diagnostic of {d.filename!r} in the result of {filename!r}")
        if "name" in item:
            d.name = typed(item["name"], str, "name")
        diags.append(d)
    return diags
