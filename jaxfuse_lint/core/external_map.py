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
