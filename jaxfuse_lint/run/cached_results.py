"""A file's result as the cache keeps it: FileResult <-> JSON, and whether a cache entry has the
shape this version reads (a damaged entry is a miss, never an error later)."""
from __future__ import annotations

from typing import Any

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.engine.pipeline import FileResult
from jaxfuse_lint.project.summary import Summary


def result_to_json(result: FileResult) -> dict[str, Any]:
    diags = []
    for d in result.diagnostics:
        data = d.to_json()
        data["name"] = d.name
        if d.extra:
            data["extra"] = d.extra
        diags.append(data)
    return {"diagnostics": diags, "errors": list(result.errors), "skipped": result.skipped}


def entry_is_valid(filename: str, entry: dict[str, Any]) -> bool:
    """Whether a cache entry has the shape this version reads (every part it is used for
    decodes): a damaged one is a miss, never a KeyError later."""
    try:
        if not (isinstance(entry["jax"], bool) and isinstance(entry["external"], dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in entry["external"].items())):
            return False
        if entry["summary"] is not None:
            Summary.from_json(entry["summary"])
        result_from_json(filename, entry["result"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return False
    return True


def result_from_json(filename: str, data: dict[str, Any]) -> FileResult:
    diags = []
    for item in data["diagnostics"]:
        d = Diagnostic.from_json(item)
        if "name" in item:
            d.name = item["name"]
        diags.append(d)
    return FileResult(filename, diags, None, list(data.get("errors", [])), bool(data.get("skipped")))
