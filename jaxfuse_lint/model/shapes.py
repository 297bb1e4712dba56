"""Shape: what is known of one array's shape, and how such facts combine.

A Shape knows some axis sizes, counted from the left, from the right, or both
when the rank is known. Two shapes broadcast (elementwise arithmetic) or merge (two
facts about the same array). The shape analysis that finds them is model/shape_analysis.py.

Known approximation: when an operand of unknown rank is broadcast against one
of known rank, the result is assumed to have the known rank (operands are
rarely broadcast *up* by a partner of unknown rank). Rules document this.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    rank: int | None = None
    left: tuple[tuple[int, int], ...] = ()  # (axis >= 0, size)
    right: tuple[tuple[int, int], ...] = ()  # (axis < 0, size)

    @staticmethod
    def make(rank: int | None, left: dict[int, int] | None = None, right: dict[int, int] | None = None) -> "Shape":
        left = dict(left or {})
        right = dict(right or {})
        if rank is not None:
            for a, s in list(left.items()):
                if a < rank:
                    right.setdefault(a - rank, s)
            for a, s in list(right.items()):
                if -a <= rank:
                    left.setdefault(rank + a, s)
            left = {a: s for a, s in left.items() if a < rank}
            right = {a: s for a, s in right.items() if -a <= rank}
        return Shape(rank, tuple(sorted(left.items())), tuple(sorted(right.items())))

    @staticmethod
    def of_dims(dims: list[int | None]) -> "Shape":
        return Shape.make(len(dims), {i: d for i, d in enumerate(dims) if d is not None})

    def size(self, axis: int) -> int | None:
        if axis >= 0:
            v = dict(self.left).get(axis)
            if v is None and self.rank is not None and axis < self.rank:
                v = dict(self.right).get(axis - self.rank)
            return v
        v = dict(self.right).get(axis)
        if v is None and self.rank is not None and -axis <= self.rank:
            v = dict(self.left).get(self.rank + axis)
        return v

    def total(self) -> int | None:
        """The number of elements, when every axis size is known."""
        if self.rank is None:
            return None
        n = 1
        for axis in range(self.rank):
            size = self.size(axis)
            if size is None:
                return None
            n *= size
        return n

    def normalize_axis(self, axis: int) -> int | None:
        if self.rank is None:
            return axis
        if -self.rank <= axis < self.rank:
            return axis
        return None


SCALAR = Shape.make(0)


def broadcast(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None and b is None:
        return None
    if a is not None and a.rank == 0:
        return b
    if b is not None and b.rank == 0:
        return a
    if a is None or b is None:
        known = a if b is None else b
        # See the module docstring: the unknown partner is assumed not to raise the rank.
        return _broadcast_with_unknown(known)
    if a.rank is not None and b.rank is not None:
        rank = max(a.rank, b.rank)
        right = {}
        for k in range(1, rank + 1):
            da = a.size(-k) if k <= a.rank else 1
            db = b.size(-k) if k <= b.rank else 1
            d = _broadcast_dim(da, db)
            if d is not None:
                right[-k] = d
        return Shape.make(rank, None, right)
    # At least one rank unknown: only the right-aligned sizes are reliable.
    right = {}
    for k in range(1, 8):
        da = a.size(-k) if a.rank is None or k <= a.rank else 1
        db = b.size(-k) if b.rank is None or k <= b.rank else 1
        d = _broadcast_dim(da, db)
        if d is not None:
            right[-k] = d
    rank = a.rank if b.rank is None else b.rank
    return Shape.make(rank, None, right)


def _broadcast_with_unknown(known: Shape) -> Shape:
    # Sizes > 1 survive broadcasting against anything compatible; size 1 may be stretched.
    left = {a: s for a, s in known.left if s != 1}
    right = {a: s for a, s in known.right if s != 1}
    return Shape.make(known.rank, left, right)


def _broadcast_dim(da: int | None, db: int | None) -> int | None:
    if da is None:
        return db if db is not None and db != 1 else None
    if db is None:
        return da if da != 1 else None
    if da == 1:
        return db
    return da


def merge(a: Shape | None, b: Shape | None) -> Shape | None:
    """Two facts about the same array."""
    if a is None:
        return b
    if b is None:
        return a
    rank = a.rank if a.rank is not None else b.rank
    left = dict(b.left)
    left.update(dict(a.left))
    right = dict(b.right)
    right.update(dict(a.right))
    return Shape.make(rank, left, right)
