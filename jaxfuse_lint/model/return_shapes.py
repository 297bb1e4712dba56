"""Return shapes across modules: `from .mesh import kvec_mesh` carries `kvec_mesh`'s known
output sizes into the importing module's shape model.

Like the cross-module traced facts (project/), this goes through the per-file summary
and the project index, so a summary still depends on its own file's text only:

* the summary of a module lists the return shape of each top-level function that the
  module's own shape model knows with some axis size (`shapes`: {name: Shape as JSON});
* the project index turns these into entries of an importer's external map, keyed by
  the import as the importer's model spells it (`"shape:.mesh.kvec_mesh"` for
  `from .mesh import kvec_mesh`, `"shape:..mesh.components"` for `from . import mesh`
  then `mesh.components(...)`), from the importer's prescan, so they are known as soon
  as the imported module's summary is (cached summaries: from the start). A file whose
  map gains entries when an imported module's summary arrives is analysed again, as for
  traced facts.

One hop: a return shape that itself depends on another module's function is not
carried (the summary would then depend on that other file).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

# The external map's key prefix lives in core/, which a warm run imports without libcst.
from jaxfuse_lint.core.external_map import SHAPE_PREFIX as PREFIX
from jaxfuse_lint.model.shape_analysis import ShapeAnalysis
from jaxfuse_lint.model.shapes import Shape

if TYPE_CHECKING:
    from jaxfuse_lint.model.shape_view import ShapeView


def shape_to_json(shape: Shape) -> str:
    return json.dumps([shape.rank, [list(p) for p in shape.left], [list(p) for p in shape.right]])


def shape_from_json(text: str) -> Shape | None:
    try:
        rank, left, right = json.loads(text)
        return Shape.make(rank, {int(a): int(s) for a, s in left}, {int(a): int(s) for a, s in right})
    except (ValueError, TypeError):
        return None


def local_return_shapes(model: "ShapeView") -> dict[str, str]:
    """{top-level function: its return Shape as JSON}, from this module alone."""
    shapes = ShapeAnalysis(model, cross_module=False)
    out = {}
    for fn in model.index.functions:
        if fn.parent is not model.index.scope or fn.is_lambda or not fn.returns:
            continue
        shape = shapes.return_shape(fn)
        if shape is not None and (shape.left or shape.right):  # sizes are what the rules use
            out[fn.name] = shape_to_json(shape)
    return out


def split_external(external: dict[str, str] | None) -> tuple[dict[str, str], dict[str, Shape]]:
    """A file's external map -> (traced functions: why, {callee as written: return Shape})."""
    traced: dict[str, str] = {}
    shapes: dict[str, Shape] = {}
    for key, value in (external or {}).items():
        if key.startswith(PREFIX):
            shape = shape_from_json(value)
            if shape is not None:
                shapes[key[len(PREFIX):]] = shape
        else:
            traced[key] = value
    return traced, shapes
