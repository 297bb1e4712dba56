"""The dtype facet of the semantic model, checked against what jax itself computes.

The model never imports jax; these tests do, to hold the encoded promotion lattice and the
per-function rules to jax's own answers (jax.eval_shape: no compilation, fast).
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.dtypes import ALL_NAMES, DType, describe, promote_pair

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

NODES = [DType(n) for n in ALL_NAMES if not n.endswith("64") or n in ("float64", "complex64", "complex128")]
WEAK = [DType("int32", True), DType("float32", True), DType("complex64", True)]


def _jax_arg(d: DType):
    if d.weak:
        return {"int": int, "float": float, "complex": complex}[d.kind]
    return jnp.dtype(d.name)


def test_promotion_lattice_matches_jax_without_x64():
    for a, b in itertools.product(NODES + WEAK, repeat=2):
        mine = promote_pair(DType(_canon(a.name), a.weak), DType(_canon(b.name), b.weak), False)
        try:
            dt, weak = jax.dtypes.result_type(_jax_arg(a), _jax_arg(b), return_weak_type_flag=True)
        except Exception:
            assert mine is None, (a, b, mine)
            continue
        assert mine == DType(str(jnp.dtype(dt)), bool(weak)), (a, b)


def _canon(name):
    return {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}.get(name, name)


def test_promotion_lattice_matches_jax_with_x64():
    names = [n for n in ALL_NAMES] + ["int*", "float*", "complex*"]
    code = textwrap.dedent("""
        import itertools, json, sys
        import jax, jax.numpy as jnp
        names = json.loads(sys.argv[1])
        weak = {"int*": int, "float*": float, "complex*": complex}
        out = {}
        for a, b in itertools.product(names, repeat=2):
            try:
                dt, w = jax.dtypes.result_type(weak.get(a, a), weak.get(b, b), return_weak_type_flag=True)
                out[a + "," + b] = [str(jnp.dtype(dt)), bool(w)]
            except Exception:
                out[a + "," + b] = None
        print(json.dumps(out))
    """)
    env = dict(os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    table = json.loads(res.stdout)

    def node(n):
        if n.endswith("*"):
            return DType({"int*": "int64", "float*": "float64", "complex*": "complex128"}[n], True)
        return DType(n)

    for key, want in table.items():
        a, b = key.split(",")
        mine = promote_pair(node(a), node(b), True)
        if want is None:
            assert mine is None, key
        else:
            assert mine == DType(want[0], want[1]), key


# -- expressions: the model's answer vs jax.eval_shape of the same function ----------------------
PARAMS = {"a": "int8", "b": "float16", "c": "bool", "u": "uint8", "f": "float32", "i": "int32", "z": "complex64",
          "h": "bfloat16"}

EXPRESSIONS = [
    "a + 1", "a * 2.5", "a + i", "a + u", "u + i", "b + f", "b * 2", "b + a", "c + c", "c & c", "a > 0",
    "c + 1", "c * 1.0", "a / 2", "i / i", "u // 3", "a ** 2", "-a", "~c", "~a", "z + f", "z.real", "f.T",
    "jnp.sin(a)", "jnp.sin(b)", "jnp.exp(i)", "jnp.sqrt(c)", "jnp.abs(z)", "jnp.abs(a)", "jnp.sum(c, axis=-1)",
    "jnp.sum(a, axis=-1)", "jnp.sum(u, -1)", "jnp.sum(b, axis=-1)", "jnp.prod(a, axis=-1)", "jnp.mean(a, -1)",
    "jnp.mean(i, -1)", "jnp.mean(b, -1)", "jnp.mean(c, -1)", "jnp.max(a, axis=-1)", "jnp.linalg.norm(a, axis=-1)",
    "jnp.linalg.norm(z, axis=-1)", "jnp.linalg.norm(b, axis=-1)", "a.sum(-1)", "c.sum(-1)", "a.mean(-1)",
    "u.prod(-1)", "a.astype(jnp.int16)", "b.astype('float32')", "f.astype(int)", "f.astype(jnp.bool_)",
    "jnp.zeros(3)", "jnp.ones((2, 2), dtype=jnp.int8)", "jnp.arange(3)", "jnp.arange(3.0)",
    "jnp.arange(3, dtype=jnp.uint8)", "jnp.linspace(0, 1, 4)", "jnp.full((2,), 1.5)", "jnp.full((2,), 1)",
    "jnp.zeros_like(a)", "jnp.ones_like(b)", "jnp.array([1, 2])", "jnp.array([1, 2.0])", "jnp.asarray(a)",
    "jnp.stack([a, a], axis=-1)", "jnp.stack([a, b])", "jnp.stack([a > 0, a < 0], axis=-1)", "jnp.stack([1.0, 2.0])", "f - a * 2",
    "a * f.sum()", "jnp.where(c, 1, 2)", "jnp.arange(3) * 0.5", "jnp.maximum(i, 2.5)",
    "jnp.concatenate([a, i])", "jnp.where(c, a, b)", "jnp.where(c, a, 0)", "jnp.isnan(b)",
    "jnp.logical_and(c, a > 0)", "jnp.maximum(a, u)", "jnp.minimum(b, 1)", "jnp.argmax(f, axis=-1)",
    "jnp.dot(f, f.T)", "jnp.dot(a, a.T)", "jnp.dot(c, c.T)", "a[..., 0] + a[..., 1]", "(a * 100)[:, 0]",
    "jnp.stack([f[:, 0], f[:, 1]], axis=-1).astype(jnp.int8) * 100", "h + b", "h * 2.0", "h + f",
    "jnp.sum(z, axis=-1)", "jnp.real(z)", "jnp.clip(a, 0, 3)", "jnp.floor(b)", "jnp.square(a)",
    "jnp.zeros((2,), jnp.int8)", "jnp.asarray(a, jnp.float32)", "jnp.full((2,), 1, jnp.int16)",
    "jnp.sum(a, -1, jnp.int8)", "a.sum(-1, jnp.int16)", "jnp.arange(0, 4, 1, jnp.uint8)", "jnp.ones_like(a, 'float16')",
    "jnp.mean(u, -1)", "jnp.cumsum(a, -1)", "jnp.cumsum(c, -1)", "c.cumsum(-1)", "jnp.reshape(a, (-1,))", "jnp.where(a > 0, 1.0, 0.0)",
]


def _model_dtype(src: str, expr_text: str, x64: bool = False):
    module = cst.parse_module(src)
    model = SemanticModel(module, recorded_dtypes={"f_": PARAMS})
    fn = next(f for f in model.index.functions if f.name == "f_")
    return model.dtype(fn.returns[0], fn, x64=x64)


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_model_agrees_with_jax(expr):
    src = f"import jax\nimport jax.numpy as jnp\ndef f_({', '.join(PARAMS)}):\n    return {expr}\n"
    fact = _model_dtype(src, expr)
    assert fact is not None, f"{expr}: unknown"
    assert len(fact) == 1, describe(fact)
    ns: dict = {}
    exec(src, ns)
    args = [jax.ShapeDtypeStruct((3, 2), jnp.dtype(PARAMS[p])) for p in PARAMS]
    got = jax.eval_shape(ns["f_"], *args)
    want = DType(str(got.dtype), bool(got.weak_type))
    assert next(iter(fact)) == want, f"{expr}: model {describe(fact)}, jax {want}"


@pytest.mark.parametrize("expr", ["undefined_name", "a.foo()", "some_function(a)", "jnp.unknown_fn(a)"])
def test_unknown_stays_unknown(expr):
    src = f"import jax.numpy as jnp\ndef f_({', '.join(PARAMS)}):\n    return {expr}\n"
    assert _model_dtype(src, expr) is None


def test_jaxtyping_annotations():
    src = textwrap.dedent("""
        import jax.numpy as jnp
        from jaxtyping import Array, Bool, Float, Int8, Float32, Integer
        def f_(x: Float[Array, "n 2"], y: Int8[Array, "n"], m: Bool[Array, "n"], w: Float32[Array, "2"],
               k: Integer[Array, "n"]):
            return x, y, m, w, k, x * 2, y + 1, jnp.sum(y), jnp.sum(m)
    """)
    model = SemanticModel(cst.parse_module(src))
    fn = next(f for f in model.index.functions if f.name == "f_")
    ret = fn.returns[0]
    got = [describe(model.dtype(el.value, fn)) for el in ret.elements]
    assert got == [
        "one of bfloat16, float16, float32", "int8", "bool", "float32", "one of int16, int32, int8, uint16, uint32, uint8",
        "one of bfloat16, float16, float32", "int8", "int32", "int32",
    ]


def test_x64_defaults():
    src = "import jax.numpy as jnp\ndef f_(a):\n    return jnp.arange(3) + 1.5\n"
    module = cst.parse_module(src)
    model = SemanticModel(module)
    fn = model.index.functions[0]
    assert describe(model.dtype(fn.returns[0], fn)) == "weak float32"
    assert describe(model.dtype(fn.returns[0], fn, x64=True)) == "weak float64"


def test_recorded_dtypes_hook_and_names():
    src = textwrap.dedent("""
        import jax.numpy as jnp
        def g(x, flag):
            v = jnp.stack([x[:, 0] > 0, x[:, 1] > 0], axis=-1)
            w = v if flag else x > 1
            return v, w, x
    """)
    model = SemanticModel(cst.parse_module(src), recorded_dtypes={"g": {"x": "float16"}})
    fn = model.index.functions[0]
    got = [describe(model.dtype(el.value, fn)) for el in fn.returns[0].elements]
    assert got == ["bool", "bool", "float16"]
    assert SemanticModel(cst.parse_module(src)).dtype(fn.returns[0].elements[2].value, fn) is None


def test_recorded_profile_records_give_the_union_of_their_dtypes():
    """The runtime profile's argument records (record's format: dtype + weak_type per signature)."""
    src = "import jax.numpy as jnp\ndef g(x, y):\n    return x, y, x + y\n"
    records = {"g": {"x": [{"name": "x", "dtype": "float32", "weak_type": False},
                           {"name": "x", "dtype": "float16", "weak_type": False}],
                     "y": [{"name": "y", "dtype": "float32", "weak_type": True}]}}
    model = SemanticModel(cst.parse_module(src), recorded_dtypes=records)
    fn = model.index.functions[0]
    got = [describe(model.dtype(el.value, fn)) for el in fn.returns[0].elements]
    assert got == ["one of float16, float32", "weak float32", "one of float16, float32"]
    unknown = SemanticModel(cst.parse_module(src), recorded_dtypes={"g": {"x": [{"dtype": "float8_e4m3"}]}})
    assert unknown.dtype(unknown.index.functions[0].returns[0].elements[0].value, unknown.index.functions[0]) is None
