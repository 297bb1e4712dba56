"""The editor's incremental parser (reparse.py) gives, for every edit, the module a full parse
gives: the same code and a structurally equal tree; it re-parses only a few statements for an
edit in the middle of a file, and falls back to a full parse where it cannot be sure."""
from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.parse.reparse import IncrementalParser

ROOT = Path(__file__).resolve().parent.parent

SAMPLE = '''"""A module."""
# a comment before the imports

import jax
import jax.numpy as jnp


def first(x):
    return x + 1
    # an indented comment after the body


# a comment of `second`
@jax.jit
def second(x):
    if x.ndim:
        y = x * 2  # trailing
    else:
        y = x
    return y


class Model:
    """Docs."""

    scale = 2.0

    def __call__(self, x):
        return x * self.scale


value = first(1)
other = [
    1,
    2,
]
# a footer comment
'''

REAL_FILES = [
    ROOT / "jaxfuse_lint" / "model" / "shape_calls.py",
    ROOT / "jaxfuse_lint" / "model" / "staging.py",
    ROOT / "fixtures" / "JF201" / "positives.py",
    ROOT / "jaxfuse_lint" / "codemods" / "jf203_recompute_in_loop.py",
]

SNIPPETS = ["x", " ", "\n", "\n\n", "# note\n", "    # indented\n", "(", ")", "'", '"""', ":", "\t",
            "def h():\n    return 1\n", "@jax.jit\n", "    pass\n", "\\\n", "y = 2\n", "if x:\n", "else:\n"]


def assert_same_as_full_parse(parser: IncrementalParser, text: str) -> bool:
    """...and whether the parser spliced (rather than parsed the whole text)."""
    try:
        expected = cst.parse_module(text)
    except Exception as exc:
        with pytest.raises(type(exc)):
            parser.parse(text)
        return False
    got = parser.parse(text)
    if expected.code != text:
        # libcst itself does not give this text back (a backslash continuation that opens an
        # indented line): there is no full parse to be the same as.
        return False
    assert got.code == text
    assert got.deep_equals(expected), "the spliced module differs from a full parse"
    return parser.last_reparsed is not None


def random_edit(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    kind = rng.random()
    if kind < 0.35:  # type something somewhere
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(SNIPPETS) + text[at:]
    if kind < 0.6:  # delete a few characters
        at = rng.randrange(len(text) + 1)
        return text[:at] + text[at + rng.randint(1, 12):]
    if kind < 0.8 and lines:  # delete or duplicate a line
        i = rng.randrange(len(lines))
        if rng.random() < 0.5:
            return "".join(lines[:i] + lines[i + 1:])
        return "".join(lines[:i + 1] + lines[i:])
    if lines:  # append a comment to a line (what the benchmark does)
        i = rng.randrange(len(lines))
        line = lines[i].rstrip("\r\n")
        ending = lines[i][len(line):]
        lines[i] = f"{line}  # edit {i}{ending}"
        return "".join(lines)
    return text + "x = 1\n"


@pytest.mark.parametrize("seed", range(6))
def test_random_edits_of_a_sample_parse_as_a_full_parse_does(seed):
    rng = random.Random(seed)
    parser = IncrementalParser()
    text = SAMPLE
    assert_same_as_full_parse(parser, text)
    spliced = 0
    for _ in range(60):
        candidate = random_edit(rng, text)
        spliced += assert_same_as_full_parse(parser, candidate)
        try:
            cst.parse_module(candidate)
            text = candidate  # keep going from valid texts; invalid ones were checked above
        except Exception:
            pass
    assert spliced >= 10  # the incremental path was exercised, not only the fallback


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: p.name)
def test_random_edits_of_real_files_parse_as_a_full_parse_does(path):
    rng = random.Random(path.name)
    parser = IncrementalParser()
    text = path.read_text()
    assert_same_as_full_parse(parser, text)
    spliced = 0
    for _ in range(25):
        candidate = random_edit(rng, text)
        spliced += assert_same_as_full_parse(parser, candidate)
        if rng.random() < 0.7:
            try:
                cst.parse_module(candidate)
                text = candidate
            except Exception:
                pass
    # The incremental path was exercised (how often depends on where the random edits fall in
    # this text, which changes as the file does: a third of them is typical).
    assert spliced >= 4


@pytest.mark.parametrize("variant", ["crlf", "tabs", "no-trailing-newline", "cr-less-footer"])
def test_line_endings_indentation_and_the_end_of_the_file(variant):
    text = SAMPLE
    if variant == "crlf":
        text = text.replace("\n", "\r\n")
    elif variant == "tabs":
        text = text.replace("    ", "\t")
    elif variant == "no-trailing-newline":
        text = text.rstrip("\n")
    else:
        text = text.replace("# a footer comment\n", "")
    parser = IncrementalParser()
    assert_same_as_full_parse(parser, text)
    rng = random.Random(variant)
    for _ in range(40):
        candidate = random_edit(rng, text)
        assert_same_as_full_parse(parser, candidate)


def test_an_edit_in_the_middle_reparses_a_few_statements():
    text = (ROOT / "jaxfuse_lint" / "model" / "shape_calls.py").read_text()
    parser = IncrementalParser()
    parser.parse(text)
    assert parser.last_reparsed is None  # the first version: a full parse
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    lines[middle] = lines[middle].rstrip("\n") + "  # typed\n"
    edited = "".join(lines)
    module = parser.parse(edited)
    assert module.code == edited
    reparsed, total = parser.last_reparsed
    assert reparsed <= 4 < total


def test_unchanged_statements_are_reused():
    parser = IncrementalParser()
    first = parser.parse(SAMPLE)
    second = parser.parse(SAMPLE.replace("return x * self.scale", "return x * self.scale * 2"))
    assert parser.last_reparsed is not None
    reused = [i for i, (a, b) in enumerate(zip(first.body, second.body)) if a is b]
    assert reused == [0, 1, 2, 3, 7]  # `Model` and one statement of margin on each side are new


def test_a_syntax_error_leaves_the_last_good_text_as_the_base():
    parser = IncrementalParser()
    parser.parse(SAMPLE)
    broken = SAMPLE.replace("return x * self.scale", "return (x * self.scale")
    with pytest.raises(cst.ParserSyntaxError):
        parser.parse(broken)
    fixed = SAMPLE.replace("return x * self.scale", "return (x * self.scale)")
    module = parser.parse(fixed)
    assert module.code == fixed and module.deep_equals(cst.parse_module(fixed))
    assert parser.last_reparsed is not None  # spliced against the last text that parsed


# -- a large file parsed in pieces (issue 42, item 4: a 2 MB file held 900 MB in libcst's parser) ------

FIXTURE_FILES = sorted(p for p in (ROOT / "fixtures").glob("JF*/*.py"))


@pytest.mark.parametrize("piece", [40, 300, 2000])
def test_a_text_parsed_in_pieces_is_the_module_a_full_parse_gives(piece):
    """Every fixture, and all of them joined into one module (cuts in every kind of place:
    decorators, strings, comments, `else:` at the margin), in pieces of a few lines to a few
    statements: the same code and a structurally equal tree."""
    from jaxfuse_lint.parse.reparse import parse_in_pieces

    texts = [p.read_text() for p in FIXTURE_FILES]
    texts.append("\n\n".join(t for t in texts if _parses(t)))
    texts.append(SAMPLE.replace("\n", "\r\n") * 3)
    for text in texts:
        try:
            full = cst.parse_module(text)
        except Exception:
            with pytest.raises(Exception):
                parse_in_pieces(text, piece)
            continue
        pieces = parse_in_pieces(text, piece)
        assert pieces.code == text
        assert pieces.deep_equals(full)


def test_no_parse_of_a_large_text_takes_the_whole_of_it(monkeypatch):
    """What the pieces are for: libcst never parses more than a few pieces at once."""
    from jaxfuse_lint.parse import reparse

    text = "\n\n".join(t for t in (p.read_text() for p in FIXTURE_FILES) if _parses(t))
    parsed: list[int] = []
    real = cst.parse_module

    def recording(source, *args, **kwargs):
        parsed.append(len(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(reparse.cst, "parse_module", recording)
    assert reparse.parse_in_pieces(text, 2000).deep_equals(real(text))
    assert len(text) > 100_000 and max(parsed) < 8 * 2000 and len(parsed) > len(text) // 4000


def test_a_syntax_error_in_a_large_text_is_libcsts_own():
    from jaxfuse_lint.parse.reparse import parse_in_pieces

    text = "\n\n".join(p.read_text() for p in FIXTURE_FILES[:40])
    lines = text.splitlines(keepends=True)
    broken = "".join(lines[: len(lines) // 2] + ["def broken(:\n"] + lines[len(lines) // 2:])
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(broken)
    with pytest.raises(cst.ParserSyntaxError) as in_pieces:
        parse_in_pieces(broken, 500)
    assert str(in_pieces.value) == str(whole.value)


def _parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True
