"""Whether a file is an XLA target config: a `stream_executor.GpuTargetConfigProto` in protobuf
text format, as the files beside this one are.

Read without protobuf or jax (`check` imports neither): the text is tokenized and its nesting
followed with a stack (a file nested a million deep costs no recursion), enough to say that it
is well-formed text format and that its top level holds the `gpu_device_info { ... }` message
every target config has. Whether this jaxlib knows each field is for XLA to say when it compiles.
"""
from __future__ import annotations

import re

# The largest target config read: XLA's are a few KB, a few MB with autotuning results.
MAX_BYTES = 16 * 1024 * 1024
REQUIRED = "gpu_device_info"

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\n\f\v]+|\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<extension>\[[A-Za-z_][A-Za-z0-9_.]*(?:/[A-Za-z_][A-Za-z0-9_./]*)?\])
  | (?P<number>[-+]?(?:[0-9][A-Za-z0-9_.+-]*|\.[0-9][A-Za-z0-9_.+-]*|inf(?:inity)?\b|nan\b))
  | (?P<punct>[{}<>\[\]:,;-])
""", re.VERBOSE)
_CLOSE = {"{": "}", "<": ">"}


class NotATargetConfig(ValueError):
    """Why a file is not an XLA target config (one line)."""


def check_file(path: str) -> None:
    """Raise NotATargetConfig when the file at PATH is not an XLA target config (OSError when it
    cannot be read)."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise NotATargetConfig(f"over {MAX_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotATargetConfig("not UTF-8 text") from None
    check_text(text)


def check_text(text: str) -> None:
    """Raise NotATargetConfig unless TEXT is a GpuTargetConfigProto in text format (see the module)."""
    top: set[str] = set()  # the top level's fields whose value is a message
    stack: list[str] = []  # the closing brackets of the messages (and lists) open here
    # What comes next: a field name ("field"), its separator or message ("after-name"), a value
    # ("value"), or what follows a value in a list ("list-next").
    state = "field"
    line = 1
    pos = 0
    last_name = ""
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise NotATargetConfig(f"line {line}: {text[pos]!r} is not protobuf text format")
        kind, token = m.lastgroup, m.group()
        pos = m.end()
        if kind == "space":
            line += token.count("\n")
            continue
        if state == "field":
            if kind in ("name", "extension"):
                last_name = token
                state = "after-name"
            elif token in (",", ";"):
                pass
            elif stack and token == stack[-1] and token in "}>":
                stack.pop()
                state = "list-next" if stack and stack[-1] == "]" else "field"
            else:
                raise NotATargetConfig(f"line {line}: expected a field name, found {token!r}")
        elif state == "after-name":
            if token == ":":
                state = "value"
            elif token in _CLOSE:
                if not stack:
                    top.add(last_name)
                stack.append(_CLOSE[token])
                state = "field"
            else:
                raise NotATargetConfig(f"line {line}: expected `:` or `{{` after `{last_name}`, found {token!r}")
        elif state in ("value", "list-value"):
            if token in _CLOSE:
                if not stack:
                    top.add(last_name)
                stack.append(_CLOSE[token])
                state = "field"
            elif token == "[" and state == "value":
                stack.append("]")
                state = "list-value"
            elif token == "]" and state == "list-value" and stack[-1] == "]":  # an empty list
                stack.pop()
                state = "field"
            elif kind in ("string", "name", "number") or token == "-":
                if token == "-":
                    continue  # `- inf`: the sign of the value that follows
                while kind == "string":  # adjacent strings are one value
                    m2 = _skip_space(text, pos)
                    nxt = _TOKEN.match(text, m2)
                    if nxt is None or nxt.lastgroup != "string":
                        break
                    line += text.count("\n", pos, nxt.end())
                    pos = nxt.end()
                state = "list-next" if stack and stack[-1] == "]" else "field"
            else:
                raise NotATargetConfig(f"line {line}: expected a value for `{last_name}`, found {token!r}")
        elif state == "list-next":
            if token == ",":
                state = "list-value"
            elif token == "]":
                stack.pop()
                state = "field"
            else:
                raise NotATargetConfig(f"line {line}: expected `,` or `]` in the list of `{last_name}`, "
                                       f"found {token!r}")
    if state != "field":
        raise NotATargetConfig(f"it ends before the value of `{last_name}`")
    if stack:
        raise NotATargetConfig(f"it ends inside a message (a `{stack[-1]}` is missing)")
    if REQUIRED not in top:
        raise NotATargetConfig(f"no `{REQUIRED} {{ ... }}` message at its top level")


def _skip_space(text: str, pos: int) -> int:
    while True:
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup != "space":
            return pos
        pos = m.end()
