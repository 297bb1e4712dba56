"""Focused behaviour of each codemod: exact rewrites, and the cases that must get no fix."""
from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from jaxfuse_lint.calibrate.variants import GENERATORS
from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.engine.pipeline import check_source, fix_source

HEADER = "import jax\nimport jax.numpy as jnp\n\n\n"


def _settings(code: str, **changes) -> Settings:
    """The rule alone; a calibrated rule reports its raw pattern (what its codemod rewrites), as the
    fixtures do (tests/fixture_harness.py): these tests are about the fixes, not the tables."""
    extra = (RAW,) if code in GENERATORS else ()
    return replace(Settings(), select=(code,), extra=extra, **changes)


def fix(src: str, code: str, unsafe: bool = False, header: str = HEADER) -> str:
    text = header + textwrap.dedent(src)
    outcome = fix_source(text, "m.py", _settings(code), unsafe=unsafe)
    assert not outcome.errors and not outcome.dropped, (outcome.errors, outcome.dropped)
    compile(outcome.source, "m.py", "exec")
    return outcome.source[len(header):] if outcome.source.startswith(header) else outcome.source


def fixes(src: str, code: str, header: str = HEADER, target: str = "gpu") -> list:
    settings = _settings(code, target=target)
    result = check_source(header + textwrap.dedent(src), "m.py", settings)
    assert not result.errors
    return [d.fix.applicability if d.fix else None for d in result.diagnostics if d.code == code]


def body(line: str, setup: str = "    v = jnp.stack([x, 2 * x], axis=-1)\n") -> str:
    return f"@jax.jit\ndef f(x):\n{setup}    return {line}\n"


# -- JF101 ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("setup,call,expected", [
    ("    v = jnp.zeros((4, 5, 2))\n", "jnp.sum(v, axis=2)", "v[:, :, 0] + v[:, :, 1]"),
    ("    v = jnp.zeros((4, 2, 5))\n", "jnp.sum(v, axis=-2)", "v[..., 0, :] + v[..., 1, :]"),
    ("    v = jnp.zeros((4, 2, 5))\n", "jnp.sum(v, axis=-2, keepdims=True)",
     "(v[..., 0, :] + v[..., 1, :])[..., None, :]"),
    ("    v = jnp.zeros((4, 5, 2))\n", "v.sum(2, keepdims=True)", "(v[:, :, 0] + v[:, :, 1])[:, :, None]"),
    ("    v = jnp.array([1.0, 2.0])\n", "x * jnp.sum(v)", "x * (v[0] + v[1])"),
    ("    v = jnp.array([1.0, 2.0])\n", "x + jnp.sum(v, keepdims=True)", "x + (v[0] + v[1])[None]"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "-jnp.sum(v, axis=-1)", "-(v[..., 0] + v[..., 1])"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "jnp.sum(v, axis=-1).T", "(v[..., 0] + v[..., 1]).T"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "x - jnp.sum(v, axis=-1)", "x - (v[..., 0] + v[..., 1])"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "jnp.sum(v, axis=-1) - x", "v[..., 0] + v[..., 1] - x"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "2 ** jnp.prod(v, axis=-1)", "2 ** (v[..., 0] * v[..., 1])"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "jnp.mean(v, axis=-1)", "(v[..., 0] + v[..., 1]) / 2"),
    ("    v = jnp.stack([x, x], axis=-1)\n", "jnp.min(v, axis=-1)", "jnp.minimum(v[..., 0], v[..., 1])"),
])
def test_jf101_index_forms_and_parentheses(setup, call, expected):
    # x's dtype is unknown (the stacked forms' fixes are unsafe): the rewrite itself is checked here,
    # its applicability in test_jf101_applicability_follows_the_operand_dtype.
    assert fix(body(call, setup), "JF101", unsafe=True) == body(expected, setup)


def test_jf101_compound_operand_is_split_only_with_known_factor_sizes():
    known = body("jnp.sum(v * w, axis=-1)",
                 "    v = jnp.stack([x, x], axis=-1)\n    w = jnp.stack([x, 1 - x], axis=-1)\n")
    assert "v[..., 0] * w[..., 0] + v[..., 1] * w[..., 1]" in fix(known, "JF101", unsafe=True)
    unknown = "@jax.jit\ndef f(x, y):\n    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v * y, axis=-1)\n"
    assert ("    _, y_full = jnp.broadcast_arrays(v, y)\n    return v[..., 0] * y_full[..., 0] + v[..., 1] * y_full[..., 1]\n"
            in fix(unknown, "JF101", unsafe=True))
    # In a lambda the operand could only be indexed as a whole, written once per term: no fix
    # (issue 36: a fix reads like code a person would write, or is not offered).
    in_lambda = "f = jax.jit(lambda x, y: jnp.sum(jnp.stack([x, x], axis=-1) * y, axis=-1))\n"
    assert fixes(in_lambda, "JF101", header="import jax\nimport jax.numpy as jnp\n\n\n") == [None]
    # In a function the factors are broadcast first and split.
    in_def = "@jax.jit\ndef f(x, y):\n    return jnp.sum(jnp.stack([x, x], axis=-1) * y, axis=-1)\n"
    assert "    return x * y_full[..., 0] + x * y_full[..., 1]\n" in fix(in_def, "JF101", unsafe=True)
    reads_underscore = ("@jax.jit\ndef f(x, y):\n    v = jnp.stack([x, x], axis=-1)\n"
                        "    return _(jnp.sum(v * y, axis=-1))\n\n\ndef _(a):\n    return a\n")
    assert "    unused, y_full = jnp.broadcast_arrays(v, y)\n" in fix(reads_underscore, "JF101", unsafe=True)
    # A factor of lower rank cannot be indexed with a positive axis: its broadcast axis is another one.
    lower = ("@jax.jit\ndef f(x):\n    assert x.ndim == 2\n    v = jnp.stack([x, x], axis=1)\n"
             "    w = jnp.ones(2)\n    return jnp.sum(v * w, axis=1)\n")
    out = fix(lower, "JF101", unsafe=True)
    assert "v[..., 0, :] * w" not in out and "return " in out


def test_jf101_no_fix_for_impure_operands_and_unkeepable_arguments():
    impure = ("def noisy(x):\n    print(x)\n    return jnp.stack([x, x], axis=-1)\n\n\n"
              "@jax.jit\ndef f(x):\n    return jnp.sum(noisy(x), axis=-1)\n")
    assert fixes(impure, "JF101") == [None]
    for call in ("jnp.sum(v, axis=-1, dtype=jnp.float32)", "jnp.max(v, axis=-1, initial=0.0)",
                 "jnp.linalg.norm(v, ord=1, axis=-1)", "jnp.mean(v, -1, None)"):
        assert fixes(body(call), "JF101") == [None], call


def test_jf101_repeats_pure_module_functions():
    src = ("def pair(x):\n    return jnp.stack([x, x * x], axis=-1)\n\n\n"
           "@jax.jit\ndef f(x):\n    return jnp.sum(pair(x), axis=-1)\n")
    assert "return pair(x)[..., 0] + pair(x)[..., 1]" in fix(src, "JF101", unsafe=True)


def test_jf101_adds_jnp_only_when_free():
    src = "@jax.jit\ndef f(x):\n    v = jax.numpy.stack([x, x], axis=-1)\n    return jax.numpy.max(v, axis=-1)\n"
    out = fix(src, "JF101", unsafe=True, header="import jax\n\n\n")
    assert out.startswith("import jax\nimport jax.numpy as jnp\n") and "jnp.maximum(v[..., 0], v[..., 1])" in out
    taken = ("import numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    v = jax.numpy.stack([x, x], axis=-1)\n"
             "    return jax.numpy.max(v, axis=-1)\n")
    assert fixes(taken, "JF101", header="import jax\n") == [None]


JAXTYPING = "import jax\nimport jax.numpy as jnp\nfrom jaxtyping import Array, Bool, Float, Float16, Float32, Int8, UInt8\n\n\n"


@pytest.mark.parametrize("param,call,applicability,expected", [
    # bool and narrow ints: jnp.sum/prod count in the default int; the fix casts each term.
    ("Bool[Array, 'n']", "jnp.sum(v, axis=-1)", "safe", "v[..., 0].astype(int) + v[..., 1].astype(int)"),
    ("Int8[Array, 'n']", "jnp.prod(v, axis=-1)", "safe", "v[..., 0].astype(int) * v[..., 1].astype(int)"),
    ("Int8[Array, 'n']", "jnp.mean(v, axis=-1)", "safe",
     "(v[..., 0].astype(jnp.float32) + v[..., 1].astype(jnp.float32)) / 2"),
    ("UInt8[Array, 'n']", "jnp.sum(v, axis=-1)", "unsafe",
     "v[..., 0].astype(jnp.uint32) + v[..., 1].astype(jnp.uint32)"),
    ("Int8[Array, 'n']", "jnp.linalg.norm(v, axis=-1)", "unsafe", None),
    ("Float32[Array, 'n']", "jnp.sum(v, axis=-1)", "safe", "v[..., 0] + v[..., 1]"),
    ("Float[Array, 'n']", "jnp.sum(v, axis=-1)", "safe", "v[..., 0] + v[..., 1]"),
    ("Float[Array, 'n']", "jnp.mean(v, axis=-1)", "unsafe", None),
    ("Float16[Array, 'n']", "jnp.mean(v, axis=-1)", "safe",  # past 88 columns: laid out over lines
     "(\n        (v[..., 0].astype(jnp.float32) + v[..., 1].astype(jnp.float32))\n        / 2\n"
     "    ).astype(jnp.float16)"),
    ("Float16[Array, 'n']", "jnp.linalg.norm(v, axis=-1)", "unsafe", None),
    ("Float32[Array, 'n']", "jnp.linalg.norm(v, axis=-1)", "safe", None),
    ("Bool[Array, 'n']", "jnp.max(v, axis=-1)", "safe", "jnp.maximum(v[..., 0], v[..., 1])"),
    ("Int8[Array, 'n']", "jnp.sum(jnp.logical_not(v), axis=-1)", "safe", None),
])
def test_jf101_applicability_follows_the_operand_dtype(param, call, applicability, expected):
    src = f"@jax.jit\ndef f(x: {param}):\n    v = jnp.stack([x, x], axis=-1)\n    return {call}\n"
    got = fixes(src, "JF101", header=JAXTYPING)
    assert got == [Applicability(applicability)], got
    if expected is not None:
        assert f"return {expected}\n" in fix(src, "JF101", unsafe=True, header=JAXTYPING)


def test_jf101_float16_sums_of_more_terms_compute_in_float32():
    three = "@jax.jit\ndef f(x: Float16[Array, 'n']):\n    v = jnp.stack([x, x, x], axis=-1)\n    return jnp.sum(v, -1)\n"
    assert fixes(three, "JF101", header=JAXTYPING) == [Applicability.SAFE]
    assert ("    return (\n        v[..., 0].astype(jnp.float32)\n        + v[..., 1].astype(jnp.float32)\n"
            "        + v[..., 2].astype(jnp.float32)\n    ).astype(jnp.float16)\n") in fix(three, "JF101", header=JAXTYPING)
    assert fix(three.replace("x, x, x", "x, x"), "JF101", header=JAXTYPING).count("astype") == 0
    mixed = three.replace("Float16[Array, 'n']", "Float[Array, 'n']")  # float16 or bfloat16: no cast spells both
    assert fixes(mixed, "JF101", header=JAXTYPING) == [Applicability.UNSAFE]


def test_jf101_unknown_dtype_is_unsafe_and_says_what_to_declare():
    # With the default settings (its table decides): a form XLA:GPU shows the harm of, a sum over 3
    # stacked columns; 2 columns of `jnp.sum(v, -1)` alone is a form the table keeps silent.
    src = ("@jax.jit\ndef f(x, y, z):\n    v = jnp.stack([x, y, z], axis=-1)\n"
           "    return v * jnp.sum(v, axis=-1, keepdims=True)\n")
    result = check_source(HEADER + src, "m.py", replace(Settings(), select=("JF101",)))
    (d,) = result.diagnostics
    assert d.fix.applicability is Applicability.UNSAFE
    assert "dtype of `v` is unknown" in d.fix.detail and "Float[Array" in d.fix.detail


# -- JF201 ----------------------------------------------------------------------------------------
NP = "import jax\nimport numpy as np\n\n\n"


def test_jf201_rewrites_nested_calls_and_keeps_static_helpers():
    src = "@jax.jit\ndef f(x):\n    return x * np.cos(np.arange(x.shape[0]) * np.pi / np.prod(x.shape))\n"
    out = fix(src, "JF201", unsafe=True, header=NP)  # cos in float32 instead of float64: unsafe
    assert out.startswith("import jax\nimport numpy as np\nimport jax.numpy as jnp\n")
    assert "x * jnp.cos(jnp.arange(x.shape[0]) * np.pi / np.prod(x.shape))" in out


@pytest.mark.parametrize("expr,applicability", [
    ("np.zeros((3, x.shape[0]))", "safe"), ("np.arange(x.shape[0])", "safe"), ("np.arange(12.0)", "safe"),
    ("np.ones(int(np.prod(x.shape)), dtype=np.float32)", "safe"), ("np.full((2, 3), 0.1, dtype=np.float32)", "safe"),
    ("np.full((2, 3), 0.1)", "unsafe"),  # jnp.full of a Python number is weakly typed
    ("np.ones(6).reshape(2, 3)", "safe"), ("np.mgrid[0:3, 0:4][0]", "safe"),
    ("np.arange(0.0, 1.0, 0.1)", "unsafe"), ("np.linspace(0.0, 1.0, 5)", "unsafe"),
    ("np.arange(5) ** 2.3", "unsafe"), ("np.sin(np.arange(5))", "unsafe"), ("np.fft.fftfreq(8)", "unsafe"),
])
def test_jf201_safe_only_where_numpy_and_jnp_agree_bit_for_bit(expr, applicability):
    """NumPy computes in float64 and jax canonicalises to a strong float32; jnp computes in float32 and
    makes Python-scalar results weakly typed: only creation and layout agree exactly."""
    assert fixes(f"@jax.jit\ndef f(x):\n    return x + {expr}\n", "JF201", NP) == [Applicability(applicability)]


def test_jf201_applicability_follows_how_the_array_is_used():
    assert fixes("@jax.jit\ndef f(x):\n    return x + np.random.normal(size=x.shape)\n", "JF201", NP) == [None]
    tested = "@jax.jit\ndef f(x):\n    w = np.ones(3)\n    if w.sum() > 1:\n        return x + w\n    return x\n"
    assert fixes(tested, "JF201", NP) == [None]
    handed = "@jax.jit\ndef f(x):\n    w = np.arange(3)\n    return x + np.asarray(w).tolist()[0]\n"
    # `np.asarray(w).tolist()` is Python values, and `w` goes nowhere else: static metadata, not reported.
    assert fixes(handed, "JF201", NP) == []
    iterated = "@jax.jit\ndef f(x):\n    for i in np.arange(3):\n        x = x + i\n    return x\n"
    assert fixes(iterated, "JF201", NP) == [Applicability.UNSAFE]
    assert "for i in jnp.arange(3):" in fix(iterated, "JF201", unsafe=True, header=NP)


# -- JF203 ----------------------------------------------------------------------------------------
def loop(setup: str, params: str = "i, c", use: str = "c + g", init: str = "x") -> str:
    return (f"@jax.jit\ndef f(x):\n    {setup}\n\n    def step({params}):\n        return {use}\n\n"
            f"    return jax.lax.fori_loop(0, 3, step, {init})\n")


def test_jf203_moves_a_shape_built_value_and_removes_the_outer_binding():
    out = fix(loop("g = jnp.arange(x.size).reshape(x.shape)"), "JF203")
    assert out == ("@jax.jit\ndef f(x):\n    def step(i, c):\n        g = jnp.arange(x.size).reshape(x.shape)\n"
                   "        return c + g\n\n    return jax.lax.fori_loop(0, 3, step, x)\n")


def test_jf203_carry_shadowing_is_safe_only_for_shape_reads_of_the_same_name():
    assert fixes(loop("g = jnp.arange(x.size).reshape(x.shape)", "i, x", "x + g", "x"), "JF203") == [Applicability.SAFE]
    assert fixes(loop("g = jnp.arange(x.size).reshape(x.shape)", "i, x", "x + g", "x + 1"), "JF203") == [
        Applicability.UNSAFE]


def test_jf203_no_fix_when_it_would_not_help_or_would_break():
    # Reads x's values: XLA:CPU hoists it back out, one program either way (its table: no finding at all,
    # even in the preview tier); XLA:GPU runs no such pass: its table shows the harm in some of the forms
    # (preview tier, no fix), and the raw pattern is reported and fixed.
    def by_table(target: str, preview: bool = True) -> list:
        settings = replace(Settings(), select=("JF203",), target=target, preview=preview)
        result = check_source(HEADER + loop("g = jnp.exp(x)"), "m.py", settings)
        assert not result.errors
        return [("(preview: " in d.message, d.fix) for d in result.diagnostics if d.code == "JF203"]

    assert by_table("cpu") == []
    assert by_table("gpu") == [(True, None)] and by_table("gpu", preview=False) == []
    assert fixes(loop("g = jnp.exp(x)"), "JF203", target="gpu") == [Applicability.SAFE]
    local = ("@jax.jit\ndef f(x):\n    g = jnp.arange(x.size).reshape(x.shape)\n\n    def step(i, c):\n"
             "        y = c + g\n        x = y\n        return x\n\n    return jax.lax.fori_loop(0, 3, step, x)\n")
    assert fixes(local, "JF203") == [None]  # `x` is a local of the body: reading it first would fail
    impure = ("def grid(x):\n    print(x)\n    return jnp.arange(x.size)\n\n\n" + loop("g = grid(x)"))
    assert fixes(impure, "JF203") == [None]


def test_jf203_keeps_the_outer_binding_when_it_is_used_elsewhere():
    out = fix(loop("g = jnp.arange(x.size).reshape(x.shape)", init="x + g"), "JF203")
    assert "    g = jnp.arange(x.size).reshape(x.shape)\n\n    def step(i, c):\n        g = jnp.arange" in out


def test_jf203_lambda_body_gets_the_expression_inline():
    src = ("@jax.jit\ndef f(x):\n    g = jnp.arange(x.size) * 2.0\n"
           "    return jax.lax.fori_loop(0, 3, lambda i, c: c * g, x)\n")
    assert fix(src, "JF203") == ("@jax.jit\ndef f(x):\n"
                                 "    return jax.lax.fori_loop(0, 3, lambda i, c: c * (jnp.arange(x.size) * 2.0), x)\n")


# -- JF301 / JF302 / JF202 --------------------------------------------------------------------------
def test_jf301_no_fix_when_the_callable_reads_a_loop_variable_or_a_later_name():
    captured = "def g(xs):\n    for k in xs:\n        xs = jax.jit(lambda v: v + k)(xs)\n    return xs\n"
    assert fixes(captured, "JF301") == [None]
    later = ("def g(xs, n):\n    for _ in range(n):\n        xs = jax.jit(h)(xs)\n    h = 1\n    return xs\n")
    assert fixes(later, "JF301") == [None]


def test_jf301_nested_loops_hoist_to_the_outermost_loop_and_names_stay_fresh():
    src = ("def step(v):\n    return v\n\n\nstep_jit = None\n\n\n"
           "def g(xs, n):\n    for a in range(n):\n        for b in xs:\n            a = jax.jit(step)(b)\n    return xs\n")
    out = fix(src, "JF301")
    assert "def g(xs, n):\n    step_jit_2 = jax.jit(step)\n    for a in range(n):\n        for b in xs:\n" \
           "            a = step_jit_2(b)\n" in out


def test_jf301_moves_a_jit_assignment_out_of_the_loop():
    src = ("def step(v):\n    return v\n\n\n"
           "def g(xs):\n    out = []\n    for x in xs:\n        h = jax.jit(partial(step))\n\n"
           "        out.append(h(x))\n"
           "    return out\n")
    out = fix(src, "JF301", header="from functools import partial\n\nimport jax\n\n\n")
    assert "def g(xs):\n    out = []\n    h = jax.jit(step)\n    for x in xs:\n        out.append(h(x))\n" in out


def test_jf302_and_jf202_fixes_are_unsafe_and_need_module_level_names():
    hoistable = "def g(x):\n    return jax.jit(lambda v: v * 2)(x)\n"
    assert fixes(hoistable, "JF302") == [Applicability.UNSAFE]
    assert fix(hoistable, "JF302") == hoistable  # not applied without --unsafe-fixes
    closes_over = ("def g(x, k):\n    return jax.jit(lambda v: v * k)(x)\n\n\n"
                   "def run(x):\n    for _ in range(3):\n        x = g(x, 2)\n    return x\n")
    assert fixes(closes_over, "JF302") == [None]
    captured = "import numpy as np\nK = np.arange(8.0)\n\n\n@jax.jit\ndef f(x):\n    return x + K\n"
    assert fixes(captured, "JF202") == [Applicability.UNSAFE]
    assert "def f(x):\n    K = jnp.arange(8.0)\n    return x + K\n" in fix(captured, "JF202", unsafe=True)
    loaded = "import numpy as np\nK = np.load('k.npy')\n\n\n@jax.jit\ndef f(x):\n    return x + K\n"
    assert fixes(loaded, "JF202") == [None]


@pytest.mark.parametrize("method", ["_apply", "__call__", "__apply", "___", "match"])
def test_jf302_hoisted_names_are_never_mangled_nor_clashing(method):
    # Python mangles `__x` written inside a class body; the hoisted name is read in a method.
    # Every other spelling of the name is already bound somewhere: module, class body, function,
    # a parameter, an attribute, a builtin.
    src = ("_apply_jit = 'module'\n_call_jit = 'module'\n\n\n"
           "class M:\n    _apply_jit_2 = 'class attribute'\n\n"
           f"    def {method}(self, x, _apply_jit_3=None, _name_jit=None):\n"
           "        self._apply_jit_4 = None\n"
           "        return jax.jit(lambda v: v * 2)(x)\n\n"
           f"    def run(self, xs):\n        return [self.{method}(x) for x in xs]\n")  # runs again: reported
    out = fix(src, "JF302", unsafe=True)
    hoisted = [line.split(" = ")[0] for line in out.splitlines() if line.endswith("= jax.jit(lambda v: v * 2)")]
    assert len(hoisted) == 1, out
    name = hoisted[0]
    assert not (name.startswith("__") and not name.endswith("__")), name
    assert name not in ("_apply_jit", "_apply_jit_2", "_apply_jit_3", "_apply_jit_4", "_call_jit", "_name_jit")
    namespace: dict = {}
    exec(compile(HEADER + out, "m.py", "exec"), namespace)
    attribute = "_M" + method if method.startswith("__") and not method.endswith("__") else method
    assert float(getattr(namespace["M"](), attribute)(1.0)) == 2.0
    assert namespace["_apply_jit"] == "module" and namespace["M"]._apply_jit_2 == "class attribute"


def test_fresh_names_are_identifiers_never_mangled_keywords_or_builtins():
    from jaxfuse_lint.codemods._names import fresh_name, identifier_base
    from jaxfuse_lint.model import SemanticModel
    import libcst as cst

    model = SemanticModel(cst.parse_module("class C:\n    _x_jit = 1\n    def f(self, y_b):\n        return y_b\n"))
    assert identifier_base("__x_jit") == "_x_jit"
    assert identifier_base("__init___jit") == "_init___jit"
    assert identifier_base("match") == "match_" and identifier_base("if") == "if_"
    assert identifier_base("<lambda>_jit") == "_lambda__jit" and identifier_base("1x").isidentifier()
    assert fresh_name(model, "__x_jit") == "_x_jit_2"  # the class body binds `_x_jit`
    assert fresh_name(model, "y_b") == "y_b_2"  # a parameter
    assert fresh_name(model, "len") == "len_2"  # a builtin
    assert fresh_name(model, "z", taken={"z", "z_2"}) == "z_3"
