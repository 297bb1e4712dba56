"""Decoded JSON read with its types checked: a value of the wrong type is a ValueError where it is
read (for the cache: a miss), never a wrong result or a traceback later. The cache's entries
(run/cache.py) are read through these; `bool` is not an `int` here, as it is not in JSON."""
from __future__ import annotations

from typing import Any


def typed(value: Any, kind: type, what: str) -> Any:
    if type(value) is not kind:
        raise ValueError(f"{what}: {kind.__name__} expected")
    return value


def optional(value: Any, kind: type, what: str) -> Any:
    return None if value is None else typed(value, kind, what)


def positive(value: Any, what: str) -> int:
    if type(value) is not int or value < 1:
        raise ValueError(f"{what}: a positive integer expected")
    return value


def str_list(value: Any, what: str) -> list[str]:
    if type(value) is not list or any(type(v) is not str for v in value):
        raise ValueError(f"{what}: a list of strings expected")
    return value


def str_map(value: Any, what: str) -> dict[str, str]:
    if type(value) is not dict or any(type(v) is not str for v in value.values()):
        raise ValueError(f"{what}: an object of strings expected")
    return value


def str_tuple(value: Any, size: int, what: str) -> tuple[str, ...]:
    if type(value) is not list or len(value) != size or any(type(v) is not str for v in value):
        raise ValueError(f"{what}: {size} strings expected")
    return tuple(value)
