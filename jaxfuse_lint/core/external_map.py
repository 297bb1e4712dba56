"""The vocabulary of a file's external map: what the project index (project/) tells one
file's model (model/) about the other modules of the project.

The map is {key: value} of strings (`SemanticModel(external_traced=...)`): a function's
name -> why another module traces it, and `shape:<callee>` -> an imported function's
return shape (model/return_shapes.py). The project layer writes it, the model reads it;
the format lives here, below both, and imports neither libcst nor the model, so that a
run whose files all come from the cache (which builds the index but no model) loads
neither.
"""
from __future__ import annotations

# `shape:<callee>` entries of a file's external map carry other modules' return shapes
# (model/return_shapes.py reads them).
SHAPE_PREFIX = "shape:"

# A reason's detail (and the phrase made from it) may end with a line that tells the traced
# module how its function's parameters arrive: "params-traced" (every positional parameter
# without a default is a tracer: `jax.jit(other.f)`, `lax.scan(other.body, ...)`), with the
# transform's literal `static=1,2` / `names=a,b`. SemanticModel reads it (model/traced.py).
PARAMS_TRACED = "\nparams-traced"
# The word added to the marker line of a function whose route from some module ends in a
# compiled program (`jax.jit`, or called from code under it); without it the other modules
# only trace it eagerly (`jax.jacrev`, `jax.vmap`, `custom_vjp` outside jit).
COMPILED_MARKER = "compiled"

# `calls:<function>` entries: how often the project's other modules call one of this module's
# top-level functions (or `Class.method`s), "<many|once|unknown>\n<phrase>" (model/call_frequency.py
# reads them; JF302's evidence).
CALLS_PREFIX = "calls:"

# A word of the marker line, `calls=2|1+cutoff|*`: the argument patterns (positional count, then
# `+keyword` for each keyword; `*` where a call unpacks `*args`/`**kwargs`) of the calls through
# which the module the reason comes from runs the function (a jitted name's calls, the call from
# its traced code). The traced module checks them against the function's signature: where none
# matches (a stale script calling it with the wrong number of arguments), the route is assumed,
# not shown (model/evidence.py). No such word: the calls are not known (an entry point).
CALL_PATTERNS_PREFIX = "calls="


def call_pattern(positional: int, keywords: list[str], unpacks: bool) -> str:
    """One call's pattern for a `calls=` word."""
    return "*" if unpacks else "+".join([str(positional), *keywords])


def merge_calls(markers: list[str]) -> str | None:
    """The `calls=` word for several reasons' marker lines: their patterns together when every one
    has some, else None (one route whose calls are not known may be any call)."""
    patterns: list[str] = []
    for marker in markers:
        words = [w for w in marker.split() if w.startswith(CALL_PATTERNS_PREFIX)]
        if not words:
            return None
        for p in words[0][len(CALL_PATTERNS_PREFIX):].split("|"):
            if p and p not in patterns:
                patterns.append(p)
    return CALL_PATTERNS_PREFIX + "|".join(sorted(patterns)) if patterns else None
