"""Argument specs, --dim/--static parsing and jaxtyping annotations (no jax needed except the last)."""
from __future__ import annotations

import pytest

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.shapes import (
    ArgSpec,
    parse_arg_spec,
    parse_dim,
    parse_static,
    specs_from_annotations,
)


@pytest.mark.parametrize(
    "text, dtype, shape",
    [
        ("f32[131072,2]", "float32", (131072, 2)),
        ("c64[8]", "complex64", (8,)),
        ("i32[]", "int32", ()),
        ("bf16[4,4]", "bfloat16", (4, 4)),
        ("bool[3]", "bool", (3,)),
        ("float64[2, 3]", "float64", (2, 3)),
        ("u8[0]", "uint8", (0,)),
    ],
)
def test_specs_parse(text, dtype, shape):
    spec = parse_arg_spec(text)
    assert spec == ArgSpec(dtype, shape)


def test_spec_round_trips_to_short_text():
    assert str(parse_arg_spec("float32[4, 2]")) == "f32[4,2]"
    assert str(parse_arg_spec("bf16[]")) == "bf16[]"


def test_named_and_computed_dims():
    dims = {"n": 64}
    assert parse_arg_spec("f32[n,3]", dims).shape == (64, 3)
    assert parse_arg_spec("c64[n,n,n//2+1]", dims).shape == (64, 64, 33)
    assert parse_arg_spec("f32[2*n-1]", dims).shape == (127,)


@pytest.mark.parametrize(
    "text, message",
    [
        ("f32", "expected DTYPE[DIMS]"),
        ("f33[3]", "unknown dtype `f33`"),
        ("f32[3,x]", "dimension `x` has no size; pass --dim x=SIZE"),
        ("f32[3,,2]", "empty dimension"),
        ("f32[3.5]", "cannot read dimension"),
        ("f32[n-100]", "negative"),
    ],
)
def test_bad_specs_say_what_is_wrong(text, message):
    with pytest.raises(VerifyError, match=message.replace("[", r"\[")):
        parse_arg_spec(text, {"n": 4})


def test_dim_and_static_parsing():
    assert parse_dim("n=1024") == ("n", 1024)
    assert parse_static("n=5") == ("n", 5)
    assert parse_static("unroll=True") == ("unroll", True)
    assert parse_static("axes=(0, 1)") == ("axes", (0, 1))
    assert parse_static("indexing=ij") == ("indexing", "ij")  # a bare word is a string
    for bad in ("n", "n=x", "=3", "n=-1"):
        with pytest.raises(VerifyError):
            parse_dim(bad)
    with pytest.raises(VerifyError, match="NAME=VALUE"):
        parse_static("5")


ANNOTATED = '''
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from jaxtyping import Array, Float, Int
    import jaxtyping as jt

def step(x: Float[Array, "n 3"], idx: Int[Array, "n"], n_steps: int = 5):
    return x

def quoted(x: "Float32[Array, 'n n//2+1']", y: jt.Complex64[Array, ""]):
    return x

def plain(x, y):
    return x

def partly(x: Float[Array, "n"], y):
    return x

def variadic(x: Float[Array, "*batch 3"]):
    return x

class Model:
    @staticmethod
    def apply(x: Float[Array, "4"]):
        return x
'''


def test_jaxtyping_annotations_become_specs():
    assert specs_from_annotations(ANNOTATED, "step") == ["float32[n,3]", "int32[n]"]
    assert specs_from_annotations(ANNOTATED, "quoted") == ["float32[n,n//2+1]", "complex64[]"]
    assert specs_from_annotations(ANNOTATED, "Model.apply") == ["float32[4]"]
    specs = [parse_arg_spec(s, {"n": 8}) for s in specs_from_annotations(ANNOTATED, "quoted")]
    assert specs == [ArgSpec("float32", (8, 5)), ArgSpec("complex64", ())]


def test_jaxtyping_static_parameters_are_skipped_and_missing_ones_reported():
    assert specs_from_annotations(ANNOTATED, "step", skip=("idx",)) == ["float32[n,3]"]
    assert specs_from_annotations(ANNOTATED, "plain") is None
    assert specs_from_annotations(ANNOTATED, "missing") is None
    with pytest.raises(VerifyError, match="parameter `y` of partly has no jaxtyping annotation"):
        specs_from_annotations(ANNOTATED, "partly")
    with pytest.raises(VerifyError, match=r"\*batch"):
        specs_from_annotations(ANNOTATED, "variadic")


def test_shape_dtype_struct():
    jax = pytest.importorskip("jax")
    import numpy as np

    struct = parse_arg_spec("bf16[4,4]").to_shape_dtype_struct()
    assert isinstance(struct, jax.ShapeDtypeStruct)
    assert struct.shape == (4, 4) and struct.dtype == jax.numpy.bfloat16
    assert parse_arg_spec("c64[8]").to_shape_dtype_struct().dtype == np.complex64
    assert parse_arg_spec("f32[131072,2]").nbytes == 1048576
