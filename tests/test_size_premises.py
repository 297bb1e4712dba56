"""The `size` premise (issue 40, item 3): how a size is known, and what a finding assumes where it is not.

- a proven size names its inference and the line it comes from (model/size_origin.py): a stack's
  count, an assert, an unpacking, a slice, a literal shape, a jaxtyping annotation, the calls of a
  nested function, what a helper returns; a recorded run's shapes make it RECORDED;
- where the table's decision depends on a size the code does not show, the finding is in the preview
  tier with an ASSUMED `size` premise that says from which size on the table shows the harm;
- a nested function's parameter takes the shape every call passes, only where every call is seen.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine import check_source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _findings(path: Path, code: str, preview: bool = True) -> dict[int, object]:
    settings = replace(Settings(), preview=preview, select=(code,))
    result = check_source(path.read_text(), str(path), settings)
    return {d.location.row: d for d in result.diagnostics if d.code == code}


def _premises(d) -> list[tuple[str, str, str]]:
    return [(p["premise"], p["status"], p["source"]) if isinstance(p, dict) else (p.premise, p.status, p.source)
            for p in d.premises]


def _size(d, what: str) -> tuple[str, str]:
    (found,) = [(status, source) for premise, status, source in _premises(d)
                if premise.startswith("size(") and what in premise]
    return found


def test_a_proven_size_names_its_inference_and_line():
    found = _findings(FIXTURES / "JF101" / "calibrated_size_premises.py", "JF101")
    expect = {
        20: ("axis -1 of `v * v`", "a `jnp.stack` of 2 arrays on line 19"),
        26: ("axis -1 of `x`", "`assert x.shape[-1] == 2` on line 25"),
        32: ("axis 0 of `v`", "the unpacking `a, b = v` on line 31"),
        37: ("axis -1 of `x[..., :2]`", "the slice `x[..., :2]` on line 37"),
        43: ("axis -1 of `z`", "the shape in `jnp.zeros((x.shape[0], 2))` on line 42"),
        49: ("axis -1 of `v * v`", "every call of `scaled` passes it: `scaled(jnp.stack("),
        61: ("axis -1 of `v * v`", "a `jnp.stack` of 2 arrays on line 55, returned by `pairs`"),
    }
    assert sorted(found) == sorted(expect)
    for row, (subject, source) in expect.items():
        status, text = _size(found[row], subject)
        assert status == "proven" and source in text, (row, text)


def test_an_unshown_size_the_harm_depends_on_is_assumed_with_the_tables_threshold():
    """The rows decide the H200-timed form: undeclared, the finding is preview, its `size` premise
    assumed and saying "harm from 4,194,304 rows"; the harm itself is proven for those sizes."""
    path = FIXTURES / "JF101" / "calibrated_measured_preview.py"
    found = _findings(path, "JF101")
    d = found[29]
    assert "(preview: the rows of `x`: not shown; harm from 4,194,304 rows)" in d.message
    status, text = _size(d, "the rows of `x`")
    assert status == "assumed" and "harm from 4,194,304 rows" in text
    harm = [(s, src) for p, s, src in _premises(d) if p.startswith("harm(")]
    assert harm == [("proven", harm[0][1])] and "with 4,194,304 rows or more" in harm[0][1]
    assert "timed on the NVIDIA H200 (measured 2026-11-26, jax 0.11.2)" in harm[0][1]
    # Declared at 4,194,304 rows: a default finding, citing the H200's timing; at 262,144: silent.
    default = _findings(path, "JF101", preview=False)
    assert sorted(default) == [19]
    assert "timed on the NVIDIA H200" in default[19].message and default[19].fix is not None
    status, text = _size(default[19], "the rows of `x`")
    assert status == "proven" and "jaxtyping annotation `Float32[Array, \"4194304 2\"]`" in text


def test_a_scalar_carry_is_outside_the_short_loop_tables():
    """jax 23637: a one-line scan / fori_loop over a Python float carry. The table's carries start at
    1,024 elements: a scalar's loop is not calibrated, never a default finding."""
    path = FIXTURES / "JF103" / "calibrated_scalar_carry.py"
    assert _findings(path, "JF103", preview=False) == {}
    found = _findings(path, "JF103")
    assert sorted(found) == [16, 24]
    for d in found.values():
        status, text = _size(d, "the carry")
        assert status == "proven" and "scalar" in text
        assert "its size (`1`) is none of the calibrated ones" in d.message


def test_call_sites_prove_a_nested_functions_shape_only_where_every_call_is_seen():
    src = (
        "import jax, jax.numpy as jnp\n"
        "@jax.jit\n"
        "def f(p):\n"
        "    def scaled(v):\n"
        "        return v * jnp.sum(v * v, axis=-1, keepdims=True)\n"
        "    return scaled(jnp.stack([p[:, 0], p[:, 1]], axis=-1))\n"
    )
    settings = replace(Settings(), select=("JF101",))
    (d,) = check_source(src, "m.py", settings).diagnostics
    assert d.location.row == 5
    escaped = src + "    g = jax.vmap(scaled)\n"  # passed: its other calls are not seen
    assert check_source(escaped, "m.py", settings).diagnostics == []
    differ = src.replace("    return scaled(", "    scaled(jnp.stack([p[:, 0], p[:, 1], p[:, 2]], axis=-1))\n"
                                              "    return scaled(")
    assert check_source(differ, "m.py", settings).diagnostics == []


def test_a_recorded_shape_makes_the_size_recorded():
    from jaxfuse_lint.core.profile import FileFacts, text_digest
    from jaxfuse_lint.model.runtime_facts import RuntimeFacts

    src = ("import jax, jax.numpy as jnp\n"
           "@jax.jit\n"
           "def f(x):\n"
           "    return jnp.exp(-jnp.sum(x, axis=-1)) * 2.0\n")
    entry = {"qualname": "f", "line": 2, "api": "jax.jit",
             "signatures": [{"args": [{"name": "x", "dtype": "float32", "weak_type": False,
                                       "shape": [4194304, 2]}], "static": {}}]}
    runtime = RuntimeFacts(FileFacts(text_digest(src), entries=[entry]))
    settings = replace(Settings(), select=("JF101",), preview=True)  # (the recorded dtype is not read here)
    (d,) = check_source(src, "m.py", settings, runtime=runtime).diagnostics
    statuses = {p: s for p, s, _ in _premises(d) if p.startswith("size(")}
    assert statuses == {"size(axis -1 of `x`)": "recorded", "size(the rows of `x`)": "recorded"}
