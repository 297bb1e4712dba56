"""Changing a few values of a JSON text and nothing else: the bytes around them stay as they were.

A notebook's fixes change the `source` of a few cells; dumping the whole document again (even
in the layout it seemed to have) changed what no fix touched: CRLF line breaks, `\\/` escapes,
numbers such as `1.5E-7`, non-ASCII characters written raw in one place and escaped in another,
keys given twice. Here each value to change is located in the text (`value_span`: the value
Python's json module would read for that key, the last one of duplicate keys) and only its span
is replaced (`splice`); a new list of strings is written in the layout of the list it replaces
(its separators, its line breaks, its escapes), reusing the original spelling of every string
that did not change (`string_list_like`).

Locating a value never builds the values around it (`skip_value`): a notebook's outputs (images
as base64 strings, megabytes of them) are checked to be valid JSON and stepped over, not decoded.
"""
from __future__ import annotations

import difflib
import json
import re
from typing import Sequence

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
# What Python's json module reads (strict: no control character inside a string; NaN and the
# infinities too), matched without building the value.
_STRING = re.compile(r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"')
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|NaN|-?Infinity")


class SpliceError(ValueError):
    """The text does not hold a value at the path asked for."""


def _skip(text: str, i: int) -> int:
    return _SPACE.match(text, i).end()


def _end_of_value(text: str, i: int) -> int:
    return skip_value(text, i)


def skip_value(text: str, i: int) -> int:
    """Where the JSON value that starts at `i` ends, found without building it (a string is matched,
    not decoded; nothing is kept of an object or array); SpliceError where the text there is not
    one valid JSON value (as `json.loads` reads it)."""
    closers: list[str] = []  # what closes each object or array the value is inside of
    while True:
        c = text[i:i + 1]
        if c == "{" or c == "[":
            i = _skip(text, i + 1)
            close = "}" if c == "{" else "]"
            if text[i:i + 1] == close:
                i += 1
            else:
                closers.append(close)
                if close == "}":
                    i = _key(text, i)
                continue  # the first member's value
        elif c == '"':
            m = _STRING.match(text, i)
            if m is None:
                raise SpliceError(f"no valid JSON string at offset {i}")
            i = m.end()
        else:
            m = _SCALAR.match(text, i)
            if m is None:
                raise SpliceError(f"no JSON value at offset {i}")
            i = m.end()
        # After a value: close what it ends, until a `,` asks for the next one.
        while closers:
            i = _skip(text, i)
            c = text[i:i + 1]
            if c == ",":
                i = _skip(text, i + 1)
                if closers[-1] == "}":
                    i = _key(text, i)
                break
            if c != closers[-1]:
                raise SpliceError(f"no `,` or `{closers[-1]}` at offset {i}")
            closers.pop()
            i += 1
        else:
            return i


def _key(text: str, i: int) -> int:
    """Past an object's key and its `:`, at the start of the value."""
    m = _STRING.match(text, i)
    if m is None:
        raise SpliceError(f"no key at offset {i}")
    i = _skip(text, m.end())
    if text[i:i + 1] != ":":
        raise SpliceError(f"no `:` at offset {i}")
    return _skip(text, i + 1)


def members(text: str, start: int) -> list[tuple[str, int, int]]:
    """(key, start, end) of each value of the object that starts at `start`, in the text's order."""
    if text[start:start + 1] != "{":
        raise SpliceError(f"no JSON object at offset {start}")
    out = []
    i = _skip(text, start + 1)
    if text[i:i + 1] == "}":
        return out
    while True:
        key, i = _DECODER.raw_decode(text, i) if text[i:i + 1] == '"' else (None, i)
        if not isinstance(key, str):
            raise SpliceError(f"no key at offset {i}")
        i = _skip(text, i)
        if text[i:i + 1] != ":":
            raise SpliceError(f"no `:` at offset {i}")
        i = _skip(text, i + 1)
        end = _end_of_value(text, i)
        out.append((key, i, end))
        i = _skip(text, end)
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i:i + 1] == "}":
            return out
        raise SpliceError(f"no `,` or `}}` at offset {i}")


def elements(text: str, start: int) -> list[tuple[int, int]]:
    """(start, end) of each element of the array that starts at `start`."""
    if text[start:start + 1] != "[":
        raise SpliceError(f"no JSON array at offset {start}")
    out = []
    i = _skip(text, start + 1)
    if text[i:i + 1] == "]":
        return out
    while True:
        end = _end_of_value(text, i)
        out.append((i, end))
        i = _skip(text, end)
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
            continue
        if text[i:i + 1] == "]":
            return out
        raise SpliceError(f"no `,` or `]` at offset {i}")


def value_span(text: str, path: Sequence[str | int]) -> tuple[int, int]:
    """Where the value at `path` (keys of objects, indexes of arrays) is in `text`: the value
    `json.loads` gives for it (of duplicate keys, the last one)."""
    start, end = _skip(text, 0), None
    end = _end_of_value(text, start)
    for step in path:
        if isinstance(step, int):
            items = elements(text, start)
            if not 0 <= step < len(items):
                raise SpliceError(f"no element {step}")
            start, end = items[step]
        else:
            found = [(s, e) for key, s, e in members(text, start) if key == step]
            if not found:
                raise SpliceError(f"no key {step!r}")
            start, end = found[-1]
    return start, end


def splice(text: str, replacements: dict[tuple[int, int], str]) -> str:
    """`text` with each (start, end) span replaced (the spans do not overlap)."""
    out, at = [], 0
    for (start, end), new in sorted(replacements.items()):
        out += [text[at:start], new]
        at = end
    out.append(text[at:])
    return "".join(out)


def _style(text: str, sample: str) -> tuple[bool, bool]:
    """(ensure_ascii, escape slashes) for new strings: as `sample` (the value replaced) writes
    them, else as the whole `text` does."""
    for where in (sample, text):
        raw_non_ascii = any(ord(c) > 127 for c in where)
        escaped_non_ascii = re.search(r"\\u00[89a-fA-F][0-9a-fA-F]|\\u0[1-9a-fA-F][0-9a-fA-F]{2}|\\u[1-9a-fA-F]",
                                      where) is not None
        if raw_non_ascii or escaped_non_ascii:
            return not raw_non_ascii, "\\/" in sample or "\\/" in text
    return False, "\\/" in sample or "\\/" in text


def encode_string(value: str, ensure_ascii: bool, escape_slash: bool) -> str:
    encoded = json.dumps(value, ensure_ascii=ensure_ascii)
    return encoded.replace("/", "\\/") if escape_slash else encoded


def string_list_like(text: str, start: int, end: int, values: list[str]) -> str:
    """The JSON for `values` (a list of strings) in the layout of the list at text[start:end]
    (a list, or one string: then the new value is one string too): its separators and line
    breaks, and each unchanged string spelled as it was."""
    old = text[start:end]
    ensure_ascii, escape_slash = _style(text, old)
    if old.startswith('"'):
        joined = "".join(values)
        return old if json.loads(old) == joined else encode_string(joined, ensure_ascii, escape_slash)
    items = elements(text, start)
    tokens = [text[s:e] for s, e in items]
    old_values = [json.loads(t) for t in tokens]
    new_tokens: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_values, values, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            new_tokens += tokens[i1:i2]
        else:
            new_tokens += [encode_string(v, ensure_ascii, escape_slash) for v in values[j1:j2]]
    if not new_tokens:
        return "[]"
    if items:
        opening = text[start + 1:items[0][0]]
        closing = text[items[-1][1]:end - 1]
        between = text[items[0][1]:items[1][0]] if len(items) > 1 else "," + opening
    else:  # an empty list: one line per string, one level deeper than the line the list is on
        newline = "\r\n" if "\r\n" in text else "\n"
        line_start = text.rfind("\n", 0, start) + 1
        indent = _SPACE.match(text, line_start).group().strip("\r\n")
        step = _indent_step(text)
        opening, closing = newline + indent + step, newline + indent
        between = "," + opening
    return "[" + opening + between.join(new_tokens) + closing + "]"


def _indent_step(text: str) -> str:
    """The text's indentation unit: that of its first indented line (one space, Jupyter's, when
    none is)."""
    m = re.search(r"\n([ \t]+)\S", text)
    return m.group(1) if m else " "
