"""Splitting source text into lines the way Python and the engine count them."""
from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """Lines with their terminators (`str.splitlines` would also split on \\f, \\v, \\x1c...)."""
    lines = []
    start = 0
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == "\n" or c == "\r":
            end = i + 2 if c == "\r" and i + 1 < n and text[i + 1] == "\n" else i + 1
            lines.append(text[start:end])
            start = i = end
            continue
        i += 1
    if start < n:
        lines.append(text[start:])
    return lines
