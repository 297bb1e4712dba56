"""Fuzz the stdin path's engine (what editors and the language server call) with deep nesting
and random bytes (issue 27): always a result, never an exception; deep nesting is JF000.
A fixed seed and few examples here; `benchmarks/` can run more (HYPOTHESIS_EXAMPLES)."""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "20"))
OPENERS = ["(", "[", "{", "-", "not ", "lambda: ", "await ", "~", "+", "2**", "a.", "f(", "1 if y else "]
CLOSERS = {"(": ")", "[": "]", "{": "}", "f(": ")"}


@st.composite
def deep(draw) -> bytes:
    opener = draw(st.sampled_from(OPENERS))
    depth = draw(st.integers(min_value=100, max_value=6000))
    sep = draw(st.sampled_from(["", "\n", " ", "\\\n"]))
    inside = "(" if sep == "\n" and opener not in CLOSERS else ""
    text = "import jax\nx = " + inside + (opener + sep) * depth + "1"
    text += (CLOSERS.get(opener, "") + sep) * depth + (")" if inside else "") + "\n"
    return text.encode()


@hsettings(max_examples=EXAMPLES, derandomize=True, deadline=None,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(deep(), st.binary(max_size=300).map(lambda b: b"import jax\n" + b)))
def test_stdin_engine_never_raises(data):
    settings = Settings()
    result = check_source(data, "f.py", settings)
    assert all("\n" not in e for e in result.errors)
    outcome = fix_source(data, "f.py", settings, unsafe=True)
    assert outcome.remaining is not None
    if outcome.changed:
        compile(outcome.source, "f.py", "exec")
