"""The shapes layout changes give from their operands' shapes: a new axis (`stack`,
`expand_dims`), `transpose`/`swapaxes`/`moveaxis`, `concatenate`, and real FFTs (`rfftn`
halves its last axis)."""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.model.shape_literals import _int_literal
from jaxfuse_lint.model.shapes import Shape, merge
from jaxfuse_lint.model.traced import keyword, positional


# FFTs that keep the shape, and real FFTs that change the size of the last transformed axis.
_FFT_SAME_SHAPE = frozenset({"fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"})
_FFT_REAL = frozenset({"rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn", "hfft", "ihfft"})


def _real_fft(base: Shape, fname: str, e: cst.Call) -> Shape | None:
    """rfft* halves the last transformed axis (n // 2 + 1); irfft* doubles it back (unknown
    size here); every other axis keeps its size."""
    one_axis = fname in ("rfft", "irfft", "hfft", "ihfft")
    axes_e = keyword(e, "axis" if one_axis else "axes") or positional(e, 2)
    if axes_e is None:
        last = -1  # every default transforms the trailing axis last
    elif one_axis:
        last = _int_literal(axes_e)
    elif isinstance(axes_e, (cst.Tuple, cst.List)) and axes_e.elements:
        last = _int_literal(axes_e.elements[-1].value)
    else:
        return None
    if last is None:
        return None
    if base.rank is not None:
        if not -base.rank <= last < base.rank:
            return None
        dims = [base.size(i) for i in range(base.rank)]
        n = dims[last]
        dims[last] = n // 2 + 1 if n is not None and fname in ("rfft", "rfft2", "rfftn", "ihfft") else None
        return Shape.of_dims(dims)
    left = {a: s for a, s in base.left if a != last}
    right = {a: s for a, s in base.right if a != last}
    if last >= 0:
        right = {}  # which from-the-right axis `last` is depends on the rank
    else:
        left = {}
    return Shape.make(None, left, right)


def _transpose(base: Shape | None, axes: list[int | None] | None) -> Shape | None:
    if base is None or base.rank is None:
        return None
    dims = [base.size(i) for i in range(base.rank)]
    if axes is None:
        return Shape.of_dims(list(reversed(dims)))
    if len(axes) != base.rank or any(a is None or not -base.rank <= a < base.rank for a in axes):
        return None
    return Shape.of_dims([dims[a] for a in axes])  # type: ignore[index]


def _swapaxes(base: Shape | None, a: int | None, b: int | None) -> Shape | None:
    if base is None or a is None or b is None:
        return None
    if base.rank is not None:
        if not (-base.rank <= a < base.rank and -base.rank <= b < base.rank):
            return None
        dims = [base.size(i) for i in range(base.rank)]
        dims[a], dims[b] = dims[b], dims[a]
        return Shape.of_dims(dims)
    if (a < 0) != (b < 0):
        return None
    side = dict(base.right if a < 0 else base.left)
    sa, sb = side.pop(a, None), side.pop(b, None)
    if sb is not None:
        side[a] = sb
    if sa is not None:
        side[b] = sa
    return Shape.make(None, side, None) if a >= 0 else Shape.make(None, None, side)


def _moveaxis(base: Shape | None, src: int | None, dst: int | None) -> Shape | None:
    if base is None or src is None or dst is None:
        return None
    if base.rank is None:
        return _moveaxis_unknown_rank(base, src, dst)
    r = base.rank
    if not (-r <= src < r and -r <= dst < r):
        return None
    dims = [base.size(i) for i in range(r)]
    moved = dims.pop(src % r)
    dims.insert(dst % r, moved)
    return Shape.of_dims(dims)


def _moveaxis_unknown_rank(base: Shape, src: int, dst: int) -> Shape | None:
    """Rank unknown: positions counted from the same end as the moved axis stay countable."""
    if src >= 0 and dst >= 0 or src < 0 and dst < 0:
        side = dict(base.left if src >= 0 else base.right)
        # Work in distances from that end: 0, 1, 2... from the left or -1, -2... from the right.
        pos = (lambda a: a) if src >= 0 else (lambda a: -a - 1)
        unpos = (lambda d: d) if src >= 0 else (lambda d: -d - 1)
        reach = max(pos(src), pos(dst))
        dims = [side.get(unpos(d)) for d in range(reach + 1)]
        moved = dims.pop(pos(src))
        dims.insert(pos(dst), moved)
        out = {unpos(d): v for d, v in enumerate(dims) if v is not None}
        out.update({a: v for a, v in side.items() if pos(a) > reach})
        return Shape.make(None, out, None) if src >= 0 else Shape.make(None, None, out)
    # Across ends: the axes on the source's side after it shift by one; the moved axis is
    # known at its destination; the other end's sizes may have included the source axis.
    if src >= 0:
        size = base.size(src)
        left = {a: v for a, v in base.left if a < src}
        left.update({a - 1: v for a, v in base.left if a > src})
        return Shape.make(None, left, {dst: size} if size is not None else None)
    size = base.size(src)
    right = {a: v for a, v in base.right if a > src}
    right.update({a + 1: v for a, v in base.right if a < src})
    return Shape.make(None, {dst: size} if size is not None else None, right)


def _concatenate(shapes: list[Shape | None], axis: int) -> Shape | None:
    """Sizes along `axis` add up (when all known); the other axes agree between operands."""
    known = [s for s in shapes if s is not None]
    if not known:
        return None
    rank = next((s.rank for s in known if s.rank is not None), None)
    if rank is not None and not -rank <= axis < rank:
        return None
    total: int | None = 0
    for s in shapes:
        n = s.size(axis) if s is not None else None
        total = None if n is None or total is None else total + n
    out: Shape | None = None
    for s in known:
        # Every other axis is the same in all operands: collect what any of them knows.
        if rank is not None and s.rank is not None:
            dims = {i: s.size(i) for i in range(rank) if i != axis % rank and s.size(i) is not None}
            part = Shape.make(rank, dims)
        elif axis >= 0:
            part = Shape.make(rank, {a: v for a, v in s.left if a != axis}, None)
        else:
            part = Shape.make(rank, None, {a: v for a, v in s.right if a != axis})
        out = merge(out, part)
    if out is None:
        return None
    if total is not None:
        side = {axis: total}
        out = merge(out, Shape.make(rank, side if axis >= 0 else None, side if axis < 0 else None))
    return out


def _insert_axis(elem: Shape | None, axis: int, n: int) -> Shape | None:
    if elem is not None and elem.rank is not None:
        rank = elem.rank + 1
        if not -rank <= axis < rank:
            return None
        ax = axis % rank
        dims = [elem.size(i) for i in range(elem.rank)]
        dims.insert(ax, n)
        return Shape.of_dims(dims)
    # Element rank unknown: axes on the inserted side of the new axis keep their known
    # sizes; those beyond it shift by one, which is only trackable from the other end.
    left_in = dict(elem.left) if elem is not None else {}
    right_in = dict(elem.right) if elem is not None else {}
    if axis >= 0:
        left = {a: s for a, s in left_in.items() if a < axis}
        left[axis] = n
        # Inserting in front keeps every from-the-right size; elsewhere they may move.
        return Shape.make(None, left, right_in if axis == 0 else {})
    right = {a: s for a, s in right_in.items() if a > axis}
    right.update({a - 1: s for a, s in right_in.items() if a <= axis})
    right[axis] = n
    return Shape.make(None, left_in if axis == -1 else {}, right)
