"""The machinery of the adversarial fix-safety suite (tests/test_fix_safety.py) and of its larger
sweep (benchmarks/fix_safety_sweep.py).

A *case* is a small module with one jitted function, the inputs to call it with, and the rule whose
fix it exercises. `check_case` runs `fix_source` on it (safe fixes, then safe and unsafe), runs the
original and each fixed module under `jax.jit` on the same inputs, and compares what came out:
raised exception, shape, dtype, weak type flag, and values (bitwise for bool and ints; for floats
NaN and infinities in the same places and finite values within a rounding tolerance). A safe fix
may differ by rounding only; an unsafe fix only in the ways its rule documents (`allowed`).

The generators (`jf101_cases`, ...) are hypothesis strategies over the source patterns each rule
rewrites: dtypes (bool, int8/16/32, uint8/32, float16/bfloat16/32, complex64), shapes with size-1
axes and broadcasting factors, negative axes, keepdims, NaN/inf inputs, and the spellings users
write (`jnp.sum(v, axis=-1)`, `v.sum(-1)`, `jnp.sum(v, -1, keepdims=True)`, ...).
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
from hypothesis import strategies as st

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.engine.pipeline import check_source, fix_source

DTYPES = ("bool", "int8", "int16", "int32", "uint8", "uint32", "float16", "bfloat16", "float32", "complex64")
JAXTYPING = {"bool": "Bool", "int8": "Int8", "int16": "Int16", "int32": "Int32", "uint8": "UInt8",
             "uint32": "UInt32", "float16": "Float16", "bfloat16": "BFloat16", "float32": "Float32",
             "complex64": "Complex64"}

HEADER = textwrap.dedent("""\
    from __future__ import annotations

    import math
    from typing import TYPE_CHECKING

    import jax
    import jax.numpy as jnp
    import numpy as np

    if TYPE_CHECKING:
        from jaxtyping import Array, Bool, BFloat16, Complex64, Float16, Float32, Int8, Int16, Int32, Shaped
        from jaxtyping import UInt8, UInt32


""")


@dataclass
class Case:
    code: str
    body: str                      # the module after HEADER: one `@jax.jit def f(...)`
    args: list                     # numpy inputs
    note: str = ""                 # what was generated, for failure messages
    power: int = 1                 # the result's magnitude is about max|input| ** power (for tolerances)
    kind: str = ""                 # the reduction / construct (for the unsafe oracle)
    dtype: str = ""                # the operand's runtime dtype

    @property
    def source(self) -> str:
        return HEADER + self.body


@dataclass
class Result:
    error: str | None = None
    leaves: list = field(default_factory=list)  # (shape, dtype, weak, values)


_NAMESPACES: dict[str, dict] = {}


def run_source(source: str, args: list) -> Result:
    """Run `f` of the module under jax.jit (compiled once per source and input signature)."""
    import jax

    ns = _NAMESPACES.get(source)
    if ns is None:
        ns = {"__name__": "fix_safety_case"}
        try:
            exec(compile(source, "<case>", "exec"), ns)
        except Exception as exc:  # a fix that breaks the module shows up as an error
            return Result(error=f"{type(exc).__name__} at import")
        if len(_NAMESPACES) > 4096:
            _NAMESPACES.clear()
        _NAMESPACES[source] = ns
    fn = ns["f"]
    try:
        out = fn(*[jax.numpy.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        leaves = jax.tree.leaves(out)
        res = Result()
        for leaf in leaves:
            arr = np.asarray(leaf)
            weak = bool(getattr(leaf, "weak_type", False))
            res.leaves.append((arr.shape, str(leaf.dtype) if hasattr(leaf, "dtype") else str(arr.dtype), weak, arr))
        return res
    except Exception as exc:
        return Result(error=type(exc).__name__)


def _eps(dtype: str) -> float:
    import jax.numpy as jnp

    return float(jnp.finfo(jnp.dtype(dtype)).eps)


def differences(before: Result, after: Result, case: Case) -> set[str]:
    """What changed: error, structure, shape, dtype, weak, values, rounding."""
    if before.error:
        # The original does not accept this input (JF405's and JF402's originals fail at trace time):
        # a fix may only make it work, not raise something else... or anything: nothing worked before.
        return set()
    if after.error:
        return {"error"}
    if len(before.leaves) != len(after.leaves):
        return {"structure"}
    out: set[str] = set()
    scale = max([1.0] + [float(np.nanmax(np.abs(a[np.isfinite(a)]))) for a in case.args
                         if isinstance(a, np.ndarray) and a.dtype.kind in "fc" and np.isfinite(a).any()])
    for (sb, db, wb, vb), (sa, da, wa, va) in zip(before.leaves, after.leaves):
        if sb != sa:
            out.add("shape")
            continue
        if db != da:
            out.add("dtype")
            continue
        if wb != wa:
            out.add("weak")
        if vb.dtype.kind in "biu" or db == "bool":
            if not np.array_equal(vb, va):
                out.add("values")
            continue
        b = vb.astype(np.complex128 if vb.dtype.kind == "c" else np.float64)
        a = va.astype(b.dtype)
        for part_b, part_a in ((b.real, a.real), (b.imag, a.imag)) if b.dtype.kind == "c" else ((b, a),):
            nan_b, nan_a = np.isnan(part_b), np.isnan(part_a)
            if not np.array_equal(nan_b, nan_a):
                out.add("values")
                continue
            inf_b, inf_a = np.isinf(part_b), np.isinf(part_a)
            if not np.array_equal(inf_b, inf_a) or not np.array_equal(part_b[inf_b], part_a[inf_a]):
                out.add("values")
                continue
            fin = np.isfinite(part_b)
            if not fin.any():
                continue
            diff = np.abs(part_b[fin] - part_a[fin])
            if not diff.any():
                continue
            eps = _eps(db)
            tol = 8 * eps * scale ** max(case.power, 1) + 8 * eps * np.abs(part_b[fin])
            out.add("rounding" if (diff <= tol).all() else "values")
    return out


def settings_for(code: str) -> Settings:
    """The rule alone; a calibrated rule (its findings follow a table) reports its raw pattern, as the
    calibration harness does: what is checked here is its codemod's rewrite, wherever it may be offered."""
    from jaxfuse_lint.calibrate.variants import GENERATORS
    from jaxfuse_lint.core.calibration import RAW

    settings = replace(Settings(), select=(code,))
    return replace(settings, extra=settings.extra + (RAW,)) if code in GENERATORS else settings


@dataclass
class Checked:
    case: Case
    flagged: bool
    safe_fixed: bool
    unsafe_fixed: bool
    safe_diff: set[str]
    unsafe_diff: set[str]
    unsafe_messages: list[str]
    problems: list[str]


def check_case(case: Case, allowed_unsafe: Callable[[Case, list[str]], set[str]]) -> Checked:
    """Fix the case's module, run before and after, and say what is wrong (problems)."""
    source = case.source
    settings = settings_for(case.code)
    found = check_source(source, "case.py", settings)
    diags = [d for d in found.diagnostics if d.code == case.code]
    problems: list[str] = []
    safe = fix_source(source, "case.py", settings, unsafe=False)
    unsafe = fix_source(source, "case.py", settings, unsafe=True)
    for outcome in (safe, unsafe):
        if outcome.errors or outcome.dropped:
            problems.append(f"fix failed: {outcome.errors or outcome.dropped}")
    messages = [d.fix.described for d in diags if d.fix is not None and d.fix.applicability is Applicability.UNSAFE]
    before = run_source(source, case.args)
    safe_diff: set[str] = set()
    unsafe_diff: set[str] = set()
    if safe.source != source:
        safe_diff = differences(before, run_source(safe.source, case.args), case)
        bad = safe_diff - {"rounding"}
        if bad:
            problems.append(f"SAFE fix changed {sorted(bad)}:\n{_diff(source, safe.source)}")
    if unsafe.source != safe.source:
        unsafe_diff = differences(before, run_source(unsafe.source, case.args), case)
        allowed = allowed_unsafe(case, messages) | {"rounding"}
        bad = unsafe_diff - allowed
        if bad:
            problems.append(f"UNSAFE fix changed {sorted(bad)}, documented only {sorted(allowed)} "
                            f"({messages}):\n{_diff(source, unsafe.source)}")
    return Checked(case, bool(diags), safe.source != source, unsafe.source != safe.source, safe_diff, unsafe_diff,
                   messages, problems)


def _diff(a: str, b: str) -> str:
    import difflib

    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "before", "after", n=1))


# -- inputs ----------------------------------------------------------------------------------------
def make_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], specials: bool) -> np.ndarray:
    import jax.numpy as jnp

    if dtype == "bool":
        return rng.random(shape) > 0.5
    np_dtype = jnp.dtype(dtype)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(np_dtype)
        # Full range: sums and products overflow where the fix could change the accumulator.
        return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(np_dtype)
    if dtype.startswith("complex"):
        vals = rng.normal(0, 4, size=shape) + 1j * rng.normal(0, 4, size=shape)
    else:
        vals = rng.normal(0, 4, size=shape)
    if specials and vals.size:
        pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 60000.0 if dtype == "float16" else 1e30])
        mask = rng.random(shape) < 0.2
        vals = np.where(mask, rng.choice(pool, size=shape), vals)
    return np.asarray(vals).astype(np_dtype)


# -- JF101: reductions over small axes -------------------------------------------------------------
REDUCTIONS = ("sum", "mean", "prod", "max", "min", "norm")


@st.composite
def jf101_cases(draw) -> Case:
    kind = draw(st.sampled_from(REDUCTIONS + ("dot",)))
    dtype = draw(st.sampled_from(DTYPES))
    if kind == "norm" and dtype == "bool":
        dtype = "float32"  # jnp.linalg.norm rejects bool (both before and after would raise)
    evidence = draw(st.sampled_from(["annotation", "astype", "unknown", "compare"] if dtype == "bool"
                                    else ["annotation", "astype", "unknown"]))
    n = draw(st.integers(1, 4))
    rank = draw(st.integers(1, 3))
    dims = [draw(st.sampled_from([1, 2, 3])) for _ in range(rank)]
    axis_pos = draw(st.integers(0, rank - 1))
    dims[axis_pos] = n
    seed = draw(st.integers(0, 2**31 - 1))
    specials = draw(st.booleans())
    rng = np.random.default_rng(seed)
    if kind == "dot":
        return _dot_case(draw, dtype, evidence, n, dims, rng, specials)
    negative = draw(st.booleans())
    axis = axis_pos - rank if negative else axis_pos
    keepdims = draw(st.sampled_from([None, False, True]))
    factor = draw(st.sampled_from(["none", "scalar", "broadcast", "self"]))
    spelling = draw(st.sampled_from(["function-kw", "function-pos", "method-pos", "method-kw"]))
    if kind == "norm":
        spelling = "function-kw"
    no_axis = rank == 1 and draw(st.booleans()) and keepdims is None
    dim_text = " ".join(["n"] if False else [str(d) for d in dims])

    # The input and how its dtype is (or is not) visible to the model.
    if evidence == "annotation":
        param = f'x: {JAXTYPING[dtype]}[Array, "{dim_text}"]'
        lines = ["v = x"]
        x = make_array(rng, dtype, tuple(dims), specials)
    elif evidence == "astype":
        param = f'x: Shaped[Array, "{dim_text}"]'
        lines = [f"v = x.astype(jnp.{dtype})"]
        x = make_array(rng, "float32", tuple(dims), specials).astype(np.float32)
        x = np.where(np.isfinite(x), x * (40 if dtype.startswith(("int", "uint")) else 1), x).astype(np.float32)
        if dtype.startswith(("int", "uint")) or dtype == "bool":
            x = np.nan_to_num(x, nan=0.0, posinf=7.0, neginf=-7.0).astype(np.float32)
    elif evidence == "compare":
        param = f'x: Float32[Array, "{dim_text}"]'
        lines = ["v = x > 0"]
        x = make_array(rng, "float32", tuple(dims), specials)
    else:
        param = f'x: Shaped[Array, "{dim_text}"]'
        lines = ["v = x"]
        x = make_array(rng, dtype, tuple(dims), specials)
    args = [x]
    operand = "v"
    power = n if kind == "prod" else 1
    if factor == "scalar":
        operand = "v * 2" if dtype != "bool" else "v & True"
    elif factor == "self" and dtype != "bool":
        operand = "v * v"
        power = 2 * n if kind == "prod" else 2
    elif factor == "broadcast" and dtype != "bool":
        wdims = [1 if draw(st.booleans()) else d for d in dims]
        wdims = wdims[draw(st.integers(0, rank - 1)):] if draw(st.booleans()) else wdims  # a lower rank too
        wtext = " ".join(str(d) for d in wdims) or ""
        param += f', w: {JAXTYPING[dtype]}[Array, "{wtext}"]' if evidence == "annotation" else \
            f', w: Shaped[Array, "{wtext}"]'
        w = make_array(rng, dtype if evidence != "astype" else "float32", tuple(wdims), specials)
        if evidence == "astype":
            lines.append(f"w = w.astype(jnp.{dtype})")
            w = np.nan_to_num(w, nan=0.0, posinf=3.0, neginf=-3.0).astype(np.float32)
        args.append(w)
        operand = "v * w"
        power = 2 * n if kind == "prod" else 2

    call = _reduction_text(kind, operand, None if no_axis else axis, keepdims, spelling)
    body = (f"@jax.jit\ndef f({param}):\n" + "".join(f"    {ln}\n" for ln in lines) + f"    return {call}\n")
    note = f"{kind} {dtype} ({evidence}) dims={dims} axis={axis} keepdims={keepdims} {spelling} operand={operand}"
    return Case("JF101", body, args, note, power, kind, dtype)


def _reduction_text(kind, operand, axis, keepdims, spelling) -> str:
    kd = "" if keepdims is None else f", keepdims={keepdims}"
    if kind == "norm":
        ax = "" if axis is None else f", axis={axis}"
        return f"jnp.linalg.norm({operand}{ax}{kd})"
    if spelling.startswith("method"):
        base = operand if operand == "v" else f"({operand})"
        if axis is None:
            return f"{base}.{kind}({kd.lstrip(', ')})"
        if spelling == "method-pos":
            return f"{base}.{kind}({axis}{kd})"
        return f"{base}.{kind}(axis={axis}{kd})"
    if axis is None:
        return f"jnp.{kind}({operand}{kd})"
    if spelling == "function-pos":
        return f"jnp.{kind}({operand}, {axis}{kd})"
    return f"jnp.{kind}({operand}, axis={axis}{kd})"


def _dot_case(draw, dtype, evidence, n, dims, rng, specials) -> Case:
    mdims = dims[:-1] + [n] if dims else [n]
    mtext = " ".join(str(d) for d in mdims)
    ann = JAXTYPING[dtype] if evidence == "annotation" else "Shaped"
    spelling = draw(st.sampled_from(["function", "method"]))
    call = "jnp.dot(m, w)" if spelling == "function" else "m.dot(w)"
    body = (f'@jax.jit\ndef f(m: {ann}[Array, "{mtext}"], w: {ann}[Array, "{n}"]):\n'
            f"    return {call}\n")
    m = make_array(rng, dtype, tuple(mdims), specials)
    w = make_array(rng, dtype, (n,), specials)
    return Case("JF101", body, [m, w], f"dot {dtype} ({evidence}) m={mdims} n={n} {spelling}", 2, "dot", dtype)


def _x64() -> bool:
    import jax

    return bool(jax.config.jax_enable_x64)


def jf101_allowed(case: Case, messages: list[str]) -> set[str]:
    """What JF101's documentation says an unsafe fix may change, for this case's runtime dtype."""
    text = " ".join(messages)
    allowed: set[str] = set()
    narrow_float = case.dtype in ("float16", "bfloat16")
    if "weakly typed" in text or ("is unknown" in text and case.dtype not in ("float32", "complex64")):
        allowed |= {"weak"}  # e.g. `v[0] / 1` of bool is weakly typed; jnp.mean's float32 is not
    if case.kind == "dot":
        # Float dots: the backend's matmul precision and accumulation order, and complex infinities
        # (a complex dot and the explicit complex products handle inf * 0 differently). Integer dots: exact.
        allowed |= {"values"} if not case.dtype.startswith(("int", "uint")) else set()
        return allowed
    if case.kind in ("sum", "prod"):
        if case.dtype == "bool" or case.dtype in ("int8", "int16", "uint8"):
            allowed |= {"dtype", "values"}  # `+` stays in the operand's dtype (documented)
        if case.dtype in ("int32", "uint32") and _x64():
            allowed |= {"dtype", "values"}  # jnp.sum widens to 64 bits with x64; `.astype(jnp.uint32)` does not
        if narrow_float:
            allowed |= {"values"}  # rounding after each step
    if case.kind == "mean":
        if case.dtype in ("bool", "int8", "int16", "int32", "uint8", "uint32"):
            allowed |= {"dtype", "values"}
        if narrow_float:
            allowed |= {"values"}
    if case.kind == "norm":
        if case.dtype.startswith(("int", "uint")) or narrow_float:
            allowed |= {"values", "dtype"}
    return allowed


def _x_param(draw, dims_text: str, dtypes=DTYPES) -> tuple[str, str]:
    dtype = draw(st.sampled_from(dtypes))
    known = draw(st.booleans())
    ann = JAXTYPING[dtype] if known else "Shaped"
    return f'x: {ann}[Array, "{dims_text}"]', dtype


# -- JF201: NumPy arrays built inside traced code -----------------------------------------------------
_NUMPY_EXPRESSIONS = (
    "np.zeros(x.shape)", "np.ones((x.shape[0], 1))", "np.full(x.shape, 0.1)", "np.full(x.shape, 3)",
    "np.arange(x.shape[-1])", "np.arange(x.size).reshape(x.shape)", "np.arange(12.0)[: x.shape[-1]]",
    "np.eye(x.shape[-1])[0]", "np.array([1, 2, 3])[: x.shape[-1]]", "np.ones(x.shape, dtype=np.float16)",
    "np.arange(x.shape[-1], dtype=np.int8)", "np.linspace(0.0, 1.0, x.shape[-1])", "np.arange(x.size).reshape(x.shape) ** 2.3",
    "np.sin(np.arange(x.shape[-1]))", "np.arange(x.shape[-1]) * 0.5", "np.fft.fftfreq(x.shape[-1], d=0.1)",
    "np.linspace(1e4, 1e4 + 1, x.shape[-1]) - 1e4", "np.exp(np.arange(x.shape[-1]) * 10.0)",
)


@st.composite
def jf201_cases(draw) -> Case:
    dims = [draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 3, 4]))]
    param, dtype = _x_param(draw, " ".join(map(str, dims)),
                            ("int8", "int32", "uint8", "float16", "bfloat16", "float32", "complex64"))
    expr = draw(st.sampled_from(_NUMPY_EXPRESSIONS))
    op = draw(st.sampled_from(["+", "*"]))
    body = f"@jax.jit\ndef f({param}):\n    return x {op} {expr}\n"
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = make_array(rng, dtype, tuple(dims), draw(st.booleans()))
    return Case("JF201", body, [x], f"{expr} {op} on {dtype}", 2, "numpy", dtype)


def jf201_allowed(case: Case, messages: list[str]) -> set[str]:
    """JF201's unsafe fixes: computed values (float64 vs float32) and weak types (so dtypes downstream)."""
    text = " ".join(messages)
    return {"values", "weak", "dtype"} if "unsafe" in text or "check those uses" in text else set()


# -- JF102: meshgrids of fftfreq vectors ------------------------------------------------------------------
@st.composite
def jf102_cases(draw) -> Case:
    n0, n1 = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    dtype = draw(st.sampled_from(["float16", "bfloat16", "float32", "int8", "complex64"]))
    d = draw(st.sampled_from([None, "2", "0.5", "d", "1.0 / x.shape[0]"]))
    kinds = [draw(st.sampled_from(["fftfreq", "rfftfreq"])), draw(st.sampled_from(["fftfreq", "rfftfreq"]))]
    indexing = draw(st.sampled_from(['"ij"', '"xy"', None]))
    scale = draw(st.sampled_from(["", "2 * jnp.pi * "]))
    darg = "" if d is None else f", {d}"
    lines = [f"kx = {scale}jnp.fft.{kinds[0]}(x.shape[0]{darg})", f"ky = jnp.fft.{kinds[1]}(x.shape[1]{darg})"]
    ind = "" if indexing is None else f", indexing={indexing}"
    lines.append(f"gx, gy = jnp.meshgrid(kx, ky{ind})")
    param = f'x: {JAXTYPING[dtype]}[Array, "{n0} {n1}"], d=0.25'
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = make_array(rng, dtype, (n0, n1), False)
    body = (f"@jax.jit\ndef f({param}):\n" + "".join(f"    {ln}\n" for ln in lines[:3])
            + "    return gx + gy, gx * x[:1, :1]\n")  # the product shows the grid's dtype and weak type
    return Case("JF102", body, [x], f"{kinds} d={d} indexing={indexing} scale={scale!r} x {dtype}", 1, "grid", dtype)


def jf102_allowed(case: Case, messages: list[str]) -> set[str]:
    """JF102's unsafe fixes (spacing of unknown dtype): dtype and weak type if the spacing is an array."""
    return {"dtype", "weak", "values"} if "spacing" in " ".join(messages) else set()


# -- JF103: short lax loops --------------------------------------------------------------------------------
@st.composite
def jf103_cases(draw) -> Case:
    dtype = draw(st.sampled_from(["float16", "float32", "int8", "int32", "uint8", "complex64", "bfloat16"]))
    trips = draw(st.integers(1, 4))
    start = draw(st.integers(0, 2))
    init = draw(st.sampled_from(["x", "jnp.zeros_like(x)", "x * 2", "x.astype(jnp.float32)", "x[0]"]))
    body = draw(st.sampled_from(["c * 2 + x", "c * c + 1", "jnp.sin(c) + i", "c + i * x", "c - x"]))
    form = draw(st.sampled_from(["fori", "scan"]))
    if form == "fori":
        loop = f"jax.lax.fori_loop({start}, {start + trips}, lambda i, c: {body}, {init})"
    else:
        loop = f"jax.lax.scan(lambda c, i: ({body}, None), {init}, jnp.arange({trips}), length={trips})[0]"
    src = f'@jax.jit\ndef f(x: {JAXTYPING[dtype]}[Array, "3"]):\n    return {loop}\n'
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = make_array(rng, dtype, (3,), draw(st.booleans()))
    return Case("JF103", src, [x], f"{form} {trips} {init} {body} {dtype}", 2 ** trips, "loop", dtype)


def jf103_allowed(case: Case, messages: list[str]) -> set[str]:
    return set()  # JF103 has no unsafe fix


# -- JF405: products of static shapes -------------------------------------------------------------------
@st.composite
def jf405_cases(draw) -> Case:
    dtype = draw(st.sampled_from(["int8", "uint8", "int32", "float16", "float32", "bool"]))
    spelling = draw(st.sampled_from(["jnp.prod(jnp.array(x.shape))", "jnp.array(x.shape).prod()",
                                     "jnp.prod(x.shape)"]))
    use = draw(st.sampled_from(["sink", "sink-then-arith", "branch"]))
    lines = [f"n = {spelling}"]
    if use == "sink":
        lines.append("return x.reshape(n)")
    elif use == "sink-then-arith":
        lines.append("return x.reshape(n) * 1, y * n")
    else:
        lines += ["if flag:", "    return x.reshape(n), y", "return x, y * n"]
    src = ("@partial(jax.jit, static_argnames='flag')\n"
           f'def f(x: Float32[Array, "2 3"], y: {JAXTYPING[dtype]}[Array, "3"], flag=False):\n'
           + "".join(f"    {ln}\n" for ln in lines))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = make_array(rng, "float32", (2, 3), False)
    y = make_array(rng, dtype, (3,), False)
    return Case("JF405", "from functools import partial\n\n\n" + src, [x, y], f"{use} {spelling} y {dtype}", 1,
                "prod", dtype)


def jf405_allowed(case: Case, messages: list[str]) -> set[str]:
    """JF405's unsafe fix: the product becomes a weakly typed, exact Python int."""
    return {"dtype", "weak", "values"} if "also used as a number" in " ".join(messages) else set()


# -- JF203: loop-invariant values recomputed in the loop body ----------------------------------------
_JF203_VALUES = (
    "jnp.arange(x.shape[0]) * 0.5", "jnp.zeros(x.shape, x.dtype) + 1", "jnp.ones(x.shape) * 2.0",
    "jnp.arange(x.shape[-1], dtype=x.dtype)", "jnp.full(x.shape, 3, x.dtype)", "jnp.indices(x.shape)[0] / 4",
)


@st.composite
def jf203_cases(draw) -> Case:
    dtype = draw(st.sampled_from(["float16", "bfloat16", "float32", "int32", "int8", "complex64"]))
    value = draw(st.sampled_from(_JF203_VALUES))
    carry = draw(st.sampled_from(["c", "x"]))  # "x": the carry shadows the name the value reads
    init = draw(st.sampled_from(["x", "x * 2", "x.astype(jnp.float32)", "jnp.ones_like(x) * 0.5"]))
    step = draw(st.sampled_from([f"{carry} * 2 + k", f"{carry} + k * i", f"k - {carry}"]))
    if carry == "x":
        init_line = f"    x = {init}\n" if init != "x" else ""
        loop = "jax.lax.fori_loop(0, 3, step, x)"
    else:
        init_line = ""
        loop = f"jax.lax.fori_loop(0, 3, step, {init})"
    ann = JAXTYPING[dtype] if draw(st.booleans()) else "Shaped"
    body = (f'@jax.jit\ndef f(x: {ann}[Array, "3 4"]):\n{init_line}    k = {value}\n\n'
            f"    def step(i, {carry}):\n        return {step}\n\n    return {loop}\n")
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = make_array(rng, dtype, (3, 4), False)
    if dtype.startswith("int"):
        x = (x % 5).astype(x.dtype)
    return Case("JF203", body, [x], f"{value} carry={carry} init={init} {step} {dtype}", 8, "recompute", dtype)


def jf203_allowed(case: Case, messages: list[str]) -> set[str]:
    """JF203's unsafe fixes: a shadowing carry whose dtype may differ (weak init promoted by lax), or
    costly values (nothing changes but speed)."""
    text = " ".join(messages)
    return {"dtype", "weak", "values", "error"} if "rebound inside the loop body" in text else set()


# -- JF301: jit hoisted out of Python loops -------------------------------------------------------------
@st.composite
def jf301_cases(draw) -> Case:
    dtype = draw(st.sampled_from(["float16", "float32", "int8", "int32", "bool", "complex64"]))
    fn = draw(st.sampled_from(["lambda v: v * 2", "lambda v: v + v", "partial(step)", "lambda v: step(v)",
                               "step"]))
    loop = draw(st.sampled_from(["for", "while", "comprehension"]))
    pre = "from functools import partial\n\n\ndef step(v):\n    return v * 3\n\n\n"
    if loop == "for":
        body = f"def f(x):\n    for _ in range(3):\n        x = jax.jit({fn})(x)\n    return x\n"
    elif loop == "while":
        body = f"def f(x):\n    i = 0\n    while i < 2:\n        x = jax.jit({fn})(x)\n        i += 1\n    return x\n"
    else:
        body = f"def f(x):\n    return [jax.jit({fn})(x + k) for k in range(3)]\n"
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    x = make_array(rng, dtype, (4,), False)
    if dtype == "bool":
        x = x.astype(np.int8)
        dtype = "int8"
    return Case("JF301", pre + body, [x], f"{loop} {fn} {dtype}", 27, "jit", dtype)


def jf301_allowed(case: Case, messages: list[str]) -> set[str]:
    return set()
