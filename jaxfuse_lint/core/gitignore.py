"""Gitignore patterns (`.gitignore` files, `exclude`, `extend-exclude`, `include`,
`per-file-ignores`), matched in time linear in the pattern and in the path, whatever the pattern.

pathspec reads the lines and combines the patterns as git does (the last match decides, a file
inside an ignored folder stays ignored); each pattern is translated to a regular expression
here. pathspec's own translation backtracks: `*` x 18 then `q`, a line any cloned repository can
carry, took minutes to match one path (every way of sharing the name among the stars is tried),
and so would `*a*a*a*a*b` or `**/a/**/a/**/b`. This translation tries each place once:

- Within a path segment, `C0*C1*...*Ck` (each `Ci` a run of fixed-width tokens: characters,
  `?`, `[...]`; a run of stars is one star) matches when C0 starts the segment, Ck ends it and
  C1..Ck-1 occur in order between: each middle chunk is placed at its earliest occurrence and
  never moved again (`(?>[^/]*?Ci)`, an atomic group), which is never worse than a later one.
- Across segments, `**` splits the pattern into blocks of whole segments; every block but the
  last is placed at the earliest segment boundary where it matches, the same way. A block has
  at most one match from a given boundary (its segments end where the path's do), so nothing
  is tried twice: a match costs at most (path length) x (pattern length) steps.

The meaning is git's (`git check-ignore`), which pathspec's translation follows except in two
places where this one follows git: a bracket expression never matches `/`, and a segment of
stars only (`***`) is `**`. Lines git ignores (an unclosed `[`, a trailing backslash, a lone
`!`) match nothing instead of raising.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import pathspec

# The group that marks a match by a folder pattern: pathspec's GitIgnoreSpec reads it to give a
# file pattern's match priority over a folder pattern's (git lets a file be re-included then).
_DIR_MARK = "(?P<ps_d>/)"
_END = f"(?:{_DIR_MARK}|$)"
_STAR_RUN = re.compile(r"\*+")


class _Unmatchable(ValueError):
    """A line git ignores: it matches nothing."""


def spec(lines: Iterable[str]) -> "pathspec.GitIgnoreSpec":
    """The patterns of LINES as a pathspec GitIgnoreSpec (`match_file(path)`; a folder's path
    ends with `/`)."""
    import pathspec  # only where patterns are matched

    return pathspec.GitIgnoreSpec.from_lines(list(lines), _pattern_class(), backend="simple")


_PATTERN_CLASS = None


def _pattern_class():
    global _PATTERN_CLASS
    if _PATTERN_CLASS is None:
        from pathspec.pattern import RegexPattern

        class LinearGitIgnorePattern(RegexPattern):
            """A gitignore line whose regular expression matches in linear time (see the module)."""

            __slots__ = ()

            @classmethod
            def pattern_to_regex(cls, pattern):
                return translate(pattern)

        _PATTERN_CLASS = LinearGitIgnorePattern
    return _PATTERN_CLASS


def translate(line: str) -> tuple[str | None, bool | None]:
    """(the regular expression, whether a match ignores (True) or re-includes (False)) of one
    gitignore line; (None, None) for a line that matches nothing (blank, a comment, invalid)."""
    if not isinstance(line, str):
        raise TypeError(f"a gitignore pattern is a str, not {type(line).__name__}")
    if not line.endswith("\\ "):
        line = line.rstrip()  # trailing spaces go unless escaped (git's rule; pathspec's too)
    if not line or line.startswith("#") or line == "/":
        return None, None
    include = True
    if line.startswith("!"):
        include, line = False, line[1:]
    segments = line.split("/")
    is_dir = not segments[-1]
    # A segment of stars only is `**` (git: a run of stars bounded by slashes or the ends).
    segments = ["**" if len(s) > 1 and _STAR_RUN.fullmatch(s) else s for s in segments]
    try:
        regex = _regex(segments, is_dir)
    except _Unmatchable:
        return None, None
    return regex, include


def _regex(segments: list[str], is_dir: bool) -> str:
    # The normalisation of pathspec's GitIgnoreSpecPattern (git's rules): a leading `/` anchors;
    # a single segment (`name`, `name/`) matches at any depth; `name/` is `name/**`.
    if not segments[0]:
        del segments[0]
    elif len(segments) == 1 or (len(segments) == 2 and not segments[1]):
        if segments[0] != "**":
            segments.insert(0, "**")
    if not segments:
        raise _Unmatchable("nothing left of the pattern")
    if not segments[-1]:
        segments[-1] = "**"
    segments = [s for i, s in enumerate(segments) if not (s == "**" and i and segments[i - 1] == "**")]
    if segments == ["**"]:
        return _DIR_MARK if is_dir else "."
    if segments == ["**", "*"]:
        return "."
    if segments == ["**", "*", "**"]:
        return _DIR_MARK if is_dir else "/"
    lead = segments[0] == "**"
    trail = segments[-1] == "**"
    # Blocks of whole segments between the `**`s.
    blocks: list[list[str]] = [[]]
    for s in segments[1 if lead else 0:len(segments) - 1 if trail else len(segments)]:
        if s == "**":
            blocks.append([])
        else:
            blocks[-1].append(_segment(s))
    if any(not b for b in blocks):
        raise _Unmatchable("an empty block")  # not reachable after the normalisation above
    out = ["^"]
    for i, block in enumerate(blocks):
        body = "/".join(block)
        gap = "/" if i else ""
        if i < len(blocks) - 1:
            # At its earliest place, never moved (see the module docstring).
            out.append(f"(?>{gap}(?:.+?/)??{body})" if i or lead else body)
        else:
            # The last block: its latest place first, as pathspec's greedy gap finds it (a match
            # that ends the path is a file's match, which outranks a folder's).
            out.append(f"{gap}(?:.+/)?{body}" if i or lead else body)
    out.append((_DIR_MARK if is_dir else "/") if trail else _END)
    return "".join(out)


def _segment(segment: str) -> str:
    """One path segment's glob: `*` (a whole segment: one or more characters, pathspec's
    reading) or chunks of fixed-width tokens between star runs."""
    if segment == "*":
        return "[^/]+"
    chunks: list[list[str]] = [[]]
    for token in _tokens(segment):
        if token == "*":
            if chunks[-1] or len(chunks) == 1:
                chunks.append([])
            continue  # a run of stars is one star
        chunks[-1].append(token)
    if len(chunks) == 1:
        return "".join(chunks[0])
    first, *middle, last = chunks
    out = "".join(first)
    for chunk in middle:
        if chunk:
            out += "(?>[^/]*?" + "".join(chunk) + ")"
    return out + "[^/]*" + "".join(last)


def _tokens(segment: str) -> list[str]:
    """`*`, or the regular expression of one character: a literal, `?` or a bracket expression
    (never `/`). pathspec's reading of brackets: `[!...]` and `[^...]` negate, a `]` first is a
    member, a backslash inside is a member."""
    out: list[str] = []
    i, end = 0, len(segment)
    while i < end:
        char = segment[i]
        i += 1
        if char == "\\":
            if i == end:
                raise _Unmatchable("a trailing backslash")  # git: the line matches nothing
            out.append(re.escape(segment[i]))
            i += 1
        elif char == "*":
            out.append("*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i
            if j < end and segment[j] in "!^":
                j += 1
            if j < end and segment[j] == "]":
                j += 1
            while j < end and segment[j] != "]":
                j += 1
            if j >= end:
                raise _Unmatchable("an unclosed `[`")  # git discards the pattern
            negate = segment[i] in "!^"
            body = segment[i + 1 if negate else i:j].replace("\\", "\\\\")
            out.append("(?!/)[" + ("^" if negate else "") + body + "]")
            i = j + 1
        else:
            out.append(re.escape(char))
    return out
