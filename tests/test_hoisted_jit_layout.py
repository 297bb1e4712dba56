"""The jit hoisted to module level (JF302, and JF301 out of a function) is laid out per PEP 8:
two blank lines from the functions around it, the def keeps its own comment, and in a notebook
it goes at the top of the def's own cell, not at the end of the cell before."""
from __future__ import annotations

import json

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import fix_source

CRAMPED = '''import jax

def step(v):
    return v + 1
# applies it once
def apply_once(x):
    return jax.jit(lambda v: v * 2 + 1)(x)
'''


def test_two_blank_lines_around_the_hoisted_line_and_the_comment_stays_on_the_def():
    fixed = fix_source(CRAMPED, "m.py", Settings(), unsafe=True).source
    assert fixed.endswith('''def step(v):
    return v + 1


_apply_once_jit = jax.jit(lambda v: v * 2 + 1)


# applies it once
def apply_once(x):
    return _apply_once_jit(x)
''')


def test_in_a_notebook_the_hoisted_line_opens_the_defs_cell():
    cells = ["import jax\n\ndef step(v):\n    return v + 1", "def apply_once(x):\n    return jax.jit(lambda v: v * 2 + 1)(x)"]
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                     "source": text} for i, text in enumerate(cells)],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    fixed = json.loads(fix_source(json.dumps(nb, indent=1), "nb.ipynb", Settings(), unsafe=True).source)
    assert fixed["cells"][0]["source"] == cells[0]
    assert fixed["cells"][1]["source"] == ("_apply_once_jit = jax.jit(lambda v: v * 2 + 1)\n\n\n"
                                           "def apply_once(x):\n    return _apply_once_jit(x)")
