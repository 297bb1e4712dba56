"""Argument specs for `verify`: `f32[131072,2]` strings and jaxtyping annotations.

A spec names a dtype and a shape, e.g. `f32[131072,2]`, `c64[8]`, `i32[]`,
`bf16[4,4]`, `bool[3]`. Dimensions may be names (`f32[n,3]`) resolved with
`--dim n=1024`. The same names come from jaxtyping annotations such as
`Float[Array, "n 3"]`, read from the source text so jaxtyping need not be
installed. Nothing here imports jax until a spec is turned into a
`jax.ShapeDtypeStruct`.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from jaxfuse_lint.verify.errors import VerifyError

# Short dtype names (as XLA and the linter's messages spell them) -> numpy names.
DTYPES: dict[str, str] = {
    "bool": "bool", "pred": "bool",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "s8": "int8", "s16": "int16", "s32": "int32", "s64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "c64": "complex64", "c128": "complex128",
}
# Long names are accepted too (`float32[4]`), mapped to themselves.
DTYPES.update({name: name for name in set(DTYPES.values())})

_SHORT_NAME = {
    "bool": "bool", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
}

_SPEC = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*\[(.*)\]\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# jaxtyping's dtype annotations -> the dtype verify feeds. The generic ones
# (Float, Int, Complex, ...) accept several dtypes; the default JAX dtype is used.
JAXTYPING_DTYPES: dict[str, str] = {
    "Float": "float32", "Float16": "float16", "BFloat16": "bfloat16", "Float32": "float32",
    "Float64": "float64", "Inexact": "float32", "Real": "float32", "Num": "float32",
    "Shaped": "float32", "Complex": "complex64", "Complex64": "complex64",
    "Complex128": "complex128", "Int": "int32", "Integer": "int32", "Int8": "int8",
    "Int16": "int16", "Int32": "int32", "Int64": "int64", "UInt": "uint32",
    "UInt8": "uint8", "UInt16": "uint16", "UInt32": "uint32", "UInt64": "uint64",
    "Bool": "bool",
}


@dataclass(frozen=True)
class ArgSpec:
    """One array argument: a numpy dtype name and a concrete shape."""

    dtype: str
    shape: tuple[int, ...]

    def __str__(self) -> str:
        return f"{_SHORT_NAME.get(self.dtype, self.dtype)}[{','.join(map(str, self.shape))}]"

    @property
    def nbytes(self) -> int:
        import numpy as np

        return int(np.prod(self.shape, dtype=np.int64)) * _itemsize(self.dtype)

    def to_shape_dtype_struct(self, device: Any = None) -> Any:
        """A `jax.ShapeDtypeStruct`, placed on `device` when one is given."""
        import jax

        sharding = jax.sharding.SingleDeviceSharding(device) if device is not None else None
        return jax.ShapeDtypeStruct(self.shape, _jnp_dtype(self.dtype), sharding=sharding)


def _itemsize(dtype: str) -> int:
    return _jnp_dtype(dtype).itemsize


def _jnp_dtype(dtype: str) -> Any:
    import numpy as np

    if dtype == "bfloat16":
        import ml_dtypes  # jax's own dependency; numpy has no bfloat16

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype)


def parse_arg_spec(text: str, dims: Mapping[str, int] | None = None) -> ArgSpec:
    """`f32[131072,2]` -> ArgSpec; named dims (`f32[n,3]`) come from `dims`."""
    m = _SPEC.match(text)
    if not m:
        raise VerifyError(
            f"bad argument spec `{text}`: expected DTYPE[DIMS] such as f32[131072,2], i32[] or c64[n,8]"
        )
    dtype_name, body = m.group(1), m.group(2).strip()
    dtype = DTYPES.get(dtype_name.lower())
    if dtype is None:
        raise VerifyError(
            f"bad argument spec `{text}`: unknown dtype `{dtype_name}` "
            f"(known: {', '.join(_SHORT_NAME.values())})"
        )
    shape: list[int] = []
    if body:
        for part in body.split(","):
            shape.append(_resolve_dim(part.strip(), dims or {}, where=f"argument spec `{text}`"))
    return ArgSpec(dtype, tuple(shape))


def _resolve_dim(token: str, dims: Mapping[str, int], where: str) -> int:
    """An integer, a name from --dim, or arithmetic over those (`n+1`, `2*n`, `n//2+1`)."""
    if not token:
        raise VerifyError(f"{where}: empty dimension")
    if token.lstrip("#").isdigit():  # jaxtyping's `#n` marks a broadcastable dim
        return int(token.lstrip("#"))
    token = token.lstrip("#")
    if _NAME.match(token):
        if token not in dims:
            raise VerifyError(f"{where}: dimension `{token}` has no size; pass --dim {token}=SIZE")
        return int(dims[token])
    try:
        tree = ast.parse(token, mode="eval")
    except SyntaxError:
        raise VerifyError(f"{where}: cannot read dimension `{token}`") from None
    value = _eval_dim(tree.body, dims, where, token)
    if value < 0:
        raise VerifyError(f"{where}: dimension `{token}` is negative ({value})")
    return value


def _eval_dim(node: ast.AST, dims: Mapping[str, int], where: str, token: str) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in dims:
            raise VerifyError(f"{where}: dimension `{node.id}` has no size; pass --dim {node.id}=SIZE")
        return int(dims[node.id])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        a = _eval_dim(node.left, dims, where, token)
        b = _eval_dim(node.right, dims, where, token)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if b == 0:
            raise VerifyError(f"{where}: dimension `{token}` divides by zero")
        return a // b
    raise VerifyError(f"{where}: cannot read dimension `{token}` (use integers, names and + - * //)")


def parse_dim(text: str) -> tuple[str, int]:
    """`n=1024` -> ("n", 1024)."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.match(name):
        raise VerifyError(f"bad --dim `{text}`: expected NAME=SIZE such as n=1024")
    try:
        size = int(value)
    except ValueError:
        raise VerifyError(f"bad --dim `{text}`: size `{value}` is not an integer") from None
    if size < 0:
        raise VerifyError(f"bad --dim `{text}`: size must not be negative")
    return name, size


def parse_static(text: str) -> tuple[str, Any]:
    """`name=value` -> (name, Python value); the value is a Python literal or else a string."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.match(name):
        raise VerifyError(f"bad --static `{text}`: expected NAME=VALUE such as n=5 or unroll=True")
    return name, parse_static_value(value)


def parse_static_value(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return value  # a bare word such as `ij` is meant as a string


def parse_dims(items: Sequence[str]) -> dict[str, int]:
    return dict(parse_dim(item) for item in items)


# --- jaxtyping annotations -------------------------------------------------

def find_function_def(tree: ast.Module, func_path: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def of `func` or `Class.method` in a module's source."""
    body: list[ast.stmt] = tree.body
    parts = func_path.split(".")
    for i, part in enumerate(parts):
        found = None
        for node in body:
            is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if is_def and node.name == part:
                found = node  # the last definition wins, as at runtime
        if found is None:
            return None
        if i == len(parts) - 1:
            return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if not isinstance(found, ast.ClassDef):
            return None
        body = found.body
    return None


def specs_from_annotations(
    source: str, func_path: str, *, skip: Sequence[str] = (), where: str = "<source>"
) -> list[str] | None:
    """Spec strings (`f32[n,3]`) read from jaxtyping annotations of the function's parameters.

    Returns None when the first required parameter has no jaxtyping annotation
    (there is nothing to infer); raises VerifyError when only some have one.
    Parameters named in `skip` (static arguments) are left out. Parameters
    with defaults are used while they carry an annotation.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise VerifyError(f"{where}:{exc.lineno}: syntax error: {exc.msg}") from None
    fn = find_function_def(tree, func_path)
    if fn is None:
        return None
    params = [*fn.args.posonlyargs, *fn.args.args]
    n_required = len(params) - len(fn.args.defaults)
    specs: list[str] = []
    for index, param in enumerate(params):
        if param.arg in skip:
            continue
        spec = _spec_from_annotation(param.annotation) if param.annotation is not None else None
        if spec is None:
            if index < n_required:
                if not specs:
                    return None
                raise VerifyError(
                    f"{where}: parameter `{param.arg}` of {func_path} has no jaxtyping annotation; "
                    f"pass every array argument with --arg"
                )
            break
        specs.append(spec)
    return specs or None


def _spec_from_annotation(node: ast.expr) -> str | None:
    """`Float[Array, "n 3"]` -> "float32[n,3]"; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:  # a string annotation: `"Float[Array, 'n 3']"`
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(node, ast.Subscript):
        return None
    base = node.value
    name = base.attr if isinstance(base, ast.Attribute) else base.id if isinstance(base, ast.Name) else None
    if name not in JAXTYPING_DTYPES:
        return None
    index = node.slice
    if not (isinstance(index, ast.Tuple) and len(index.elts) == 2):
        return None
    dims_node = index.elts[1]
    if not (isinstance(dims_node, ast.Constant) and isinstance(dims_node.value, str)):
        return None
    dims = []
    for token in dims_node.value.split():
        if token.startswith("*") or token in ("...", "_") or token.startswith("_"):
            raise VerifyError(
                f"jaxtyping dimension `{token}` in `{ast.unparse(node)}` has no fixed size; pass --arg"
            )
        dims.append(token)
    return f"{JAXTYPING_DTYPES[name]}[{','.join(dims)}]"
