"""Subscripts a fix writes: one element along an axis, an axis put back as size 1."""
from __future__ import annotations

from typing import Sequence

import libcst as cst

from jaxfuse_lint.codemods._expressions import atom


def subscript(value: cst.BaseExpression, elements: Sequence[cst.BaseSlice]) -> cst.Subscript:
    return cst.Subscript(atom(value), [cst.SubscriptElement(s) for s in elements])


def colon() -> cst.Slice:
    return cst.Slice(lower=None, upper=None)


def lane_index(axis: int | None, i: int) -> list[cst.BaseSlice]:
    """The subscript that takes element i along `axis` (None: the only axis of a rank-1 array).

    positive k: `[:, ..k.., i]`; negative -m: `[..., i, :, ..(m-1)..]`.
    """
    if axis is None:
        return [cst.Index(cst.Integer(str(i)))]
    if axis >= 0:
        return [colon() for _ in range(axis)] + [cst.Index(cst.Integer(str(i)))]
    m = -axis
    return [cst.Index(cst.Ellipsis()), cst.Index(cst.Integer(str(i)))] + [colon() for _ in range(m - 1)]


def new_axis_index(axis: int | None) -> list[cst.BaseSlice]:
    """The subscript that puts back a reduced axis as size 1 (keepdims)."""
    none = cst.Index(cst.Name("None"))
    if axis is None:
        return [none]
    if axis >= 0:
        return [colon() for _ in range(axis)] + [none]
    return [cst.Index(cst.Ellipsis()), none] + [colon() for _ in range(-axis - 1)]
