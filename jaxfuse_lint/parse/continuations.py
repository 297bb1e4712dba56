"""Lines that hold only a backslash, masked for libcst and restored byte for byte.

`\\` alone on a line continues onto the next one: the two make one logical line whose
indentation is the backslash line's (valid Python, e.g. before a decorator). libcst's native
parser rejects some of these and silently drops others from the code it generates (a fix
then deleted the line). So, outside strings, each such line is given to libcst as a comment
line (`mask`): same rows, same columns on every other line, and the same meaning whenever the
line it continues onto is indented as it is (or is inside brackets, or is blank or a
comment). Code generated from the masked text gets its backslash lines back (`restore`). A
backslash line that continues onto a line indented differently is left alone (`mask` gives
its row: the engine reports it rather than analyse it as something else).
"""
from __future__ import annotations

import re

from jaxfuse_lint.core.lines import split_lines

MARKER = "# jaxfuse-lint-continuation"
_LONE = re.compile(r"([ \t\f]*)\\(\r\n|\r|\n)")
_MASKED = re.compile(r"([ \t\f]*)" + re.escape(MARKER) + r"(\r\n|\r|\n)")
_INDENT = re.compile(r"[ \t\f]*")


def mask(text: str) -> tuple[str, int | None]:
    """(the text with its lone backslash lines as comment lines, None), or (text, row) of the
    first one that continues onto a line indented differently (then nothing is masked). Texts
    without such lines, or that cannot be tokenized, or that already hold MARKER, come back as
    they are."""
    if "\\" not in text or MARKER in text:
        return text, None
    if not re.search(r"^[ \t\f]*\\\r?$", text, re.MULTILINE) and "\\\r" not in text:
        return text, None
    layout = _layout(text)
    if layout is None:
        return text, None  # not Python the tokenizer can read: the parsers say why
    in_string, depth = layout
    lines = split_lines(text)
    lone = {i for i, line in enumerate(lines) if _LONE.fullmatch(line) and i + 1 not in in_string}
    out = list(lines)
    i = 0
    while i < len(lines):
        if i not in lone:
            i += 1
            continue
        end = i  # a chain of backslash lines: i..end, continuing onto lines[end + 1]
        while end + 1 in lone:
            end += 1
        if i and lines[i - 1].rstrip("\r\n").endswith("\\"):
            i = end + 1  # inside a logical line a code line began: left alone
            continue
        if end + 1 >= len(lines):
            return text, None  # a backslash at the end of the file: the parsers say why
        follow = lines[end + 1]
        comment_or_blank = not follow.strip() or follow.lstrip().startswith("#")
        if not comment_or_blank and not depth.get(i + 1) and _INDENT.match(follow).group() != _INDENT.match(lines[i]).group():
            return text, i + 1
        for k in range(i, end + 1):
            m = _LONE.fullmatch(lines[k])
            out[k] = m.group(1) + MARKER + m.group(2)
        i = end + 1
    return "".join(out), None


def restore(code: str) -> str:
    """Code generated from a masked text, with its backslash lines back."""
    if MARKER not in code:
        return code
    out = []
    for line in split_lines(code):
        m = _MASKED.fullmatch(line)
        out.append(m.group(1) + "\\" + m.group(2) if m else line)
    return "".join(out)


def _layout(text: str) -> tuple[set[int], dict[int, int]] | None:
    """(the 1-based rows inside a string that began on an earlier row, the bracket depth at the
    start of each row that is inside brackets), from Python's tokenizer; None if it fails."""
    import io
    import tokenize

    in_string: set[int] = set()
    depth: dict[int, int] = {}
    level, row = 0, 1
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            while row < tok.start[0]:
                row += 1
                if level:
                    depth[row] = level
            if tok.type == tokenize.STRING or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                in_string.update(range(tok.start[0] + 1, tok.end[0] + 1))
            elif tok.type == tokenize.OP and tok.string in "([{":
                level += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                level = max(level - 1, 0)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return in_string, depth
