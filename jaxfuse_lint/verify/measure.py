"""Lower and compile one function with `jax.ShapeDtypeStruct` arguments, and measure it.

No data is needed to compile: shapes and dtypes are enough. What is measured:

- kernels: from the optimized HLO (see `hlo.py`);
- temporaries, argument, output and alias bytes: `compiled.memory_analysis()`;
- folded-constant bytes: non-scalar constants in the optimized module. On CPU
  `generated_code_size_in_bytes` stays 0 even when a 128 MB array is folded in,
  so the module is read instead. The constants already present in the
  lowered StableHLO (what JAX captured from numpy before XLA ran) are counted
  too, for the report;
- bytes accessed and flops: `compiled.cost_analysis()`;
- trace+lower and compile seconds (wall clock);
- JAX's own detector: with `jax_captured_constants_warn_bytes` set far below
  its 2 GB default, lowering warns about each captured constant and names the
  source line that made it.
"""
from __future__ import annotations

import contextlib
import re
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.hlo import KernelCount, constant_bytes, count_kernels, parse_hlo_module
from jaxfuse_lint.verify.loader import describe_exception, user_location
from jaxfuse_lint.verify.shapes import ArgSpec

# Far below JAX's 2 GB default, so that any array worth worrying about is named.
DEFAULT_CONSTANTS_WARN_BYTES = 4096


@dataclass
class Measurement:
    """What compiling one version of the function costs and produces."""

    kernels: KernelCount
    temp_bytes: int | None
    argument_bytes: int | None
    output_bytes: int | None
    alias_bytes: int | None
    generated_code_bytes: int | None
    folded_constant_bytes: int
    lowered_constant_bytes: int | None
    bytes_accessed: float | None
    flops: float | None
    lower_seconds: float
    compile_seconds: float
    captured_constants: list[str] = field(default_factory=list)
    hlo_text: str = ""
    compiled: Any = None  # the jax Compiled object, for running the numerics
    # XLA's buffer assignment dump, when asked for (per-line attribution of temporaries).
    buffer_assignment: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kernels": self.kernels.to_json(),
            "temp_bytes": self.temp_bytes,
            "argument_bytes": self.argument_bytes,
            "output_bytes": self.output_bytes,
            "alias_bytes": self.alias_bytes,
            "generated_code_bytes": self.generated_code_bytes,
            "folded_constant_bytes": self.folded_constant_bytes,
            "lowered_constant_bytes": self.lowered_constant_bytes,
            "bytes_accessed": self.bytes_accessed,
            "flops": self.flops,
            "lower_seconds": round(self.lower_seconds, 4),
            "compile_seconds": round(self.compile_seconds, 4),
            "captured_constants": self.captured_constants,
        }


@contextlib.contextmanager
def jax_config(**values: Any) -> Iterator[None]:
    """Set JAX config options for the duration of the block, then restore them.

    Options this JAX does not have are skipped: the detectors they switch on
    are corroboration, and an older JAX still compiles and measures.
    """
    import jax

    known = getattr(jax.config, "values", None)
    values = {k: v for k, v in values.items() if known is None or k in known}
    old = {name: getattr(jax.config, name) for name in values}
    try:
        for name, value in values.items():
            jax.config.update(name, value)
        yield
    finally:
        for name, value in old.items():
            jax.config.update(name, value)


def measure(
    func: Callable[..., Any],
    specs: Sequence[ArgSpec],
    static: Mapping[str, Any],
    *,
    filename: str,
    label: str,
    device: Any = None,
    constants_warn_bytes: int = DEFAULT_CONSTANTS_WARN_BYTES,
    buffer_assignment: bool = False,
    example_args: Sequence[Any] | None = None,
) -> Measurement:
    """Lower and compile `jax.jit(func)` for `specs`; raises VerifyError if that fails.

    With `buffer_assignment`, XLA's buffer assignment is kept too (see
    `jaxfuse_lint.verify.attribution.compile_with_buffer_assignment`).
    `example_args` (arrays, pytrees, ShapeDtypeStructs: what `jax.jit(func).lower`
    accepts) replace `specs` when given: in a notebook the real arguments are at hand.
    """
    import jax

    _warm_up(device)
    structs = list(example_args) if example_args is not None else [
        spec.to_shape_dtype_struct(device) for spec in specs]
    if example_args is not None and callable(getattr(func, "lower", None)):
        jitted = func  # already jitted: its own static_argnums/donation apply, as when it is called
    else:
        jitted = jax.jit(func, static_argnames=tuple(static))
    placement = jax.default_device(device) if device is not None else contextlib.nullcontext()
    with placement:
        try:
            with warnings.catch_warnings(record=True) as caught, jax_config(
                jax_captured_constants_warn_bytes=constants_warn_bytes,
                jax_captured_constants_report_frames=3,
            ):
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                lowered = jitted.lower(*structs, **static)
                t1 = time.perf_counter()
        except Exception as exc:  # noqa: BLE001 - any user error is reported, not raised through
            raise VerifyError(
                f"{user_location(exc, filename)}: tracing the {label} version under jax.jit raised "
                f"{describe_exception(exc)}"
            ) from None
        assignment = None
        try:
            if buffer_assignment:
                from jaxfuse_lint.verify.attribution import compile_with_buffer_assignment

                compiled, assignment = compile_with_buffer_assignment(lowered)
            else:
                compiled = lowered.compile()
        except Exception as exc:  # noqa: BLE001
            raise VerifyError(f"{filename}: compiling the {label} version failed: {describe_exception(exc)}") from None
        t2 = time.perf_counter()

    hlo_text = compiled.as_text()
    module = parse_hlo_module(hlo_text)
    memory = compiled.memory_analysis()
    cost = compiled.cost_analysis()
    if isinstance(cost, (list, tuple)):  # older jax returned one dict per device
        cost = cost[0] if cost else None
    cost = cost or {}

    def mem(name: str) -> int | None:
        value = getattr(memory, name, None) if memory is not None else None
        return int(value) if value is not None else None

    return Measurement(
        kernels=count_kernels(module),
        temp_bytes=mem("temp_size_in_bytes"),
        argument_bytes=mem("argument_size_in_bytes"),
        output_bytes=mem("output_size_in_bytes"),
        alias_bytes=mem("alias_size_in_bytes"),
        generated_code_bytes=mem("generated_code_size_in_bytes"),
        folded_constant_bytes=constant_bytes(module),
        lowered_constant_bytes=lowered_constant_bytes(lowered),
        bytes_accessed=_float(cost.get("bytes accessed")),
        flops=_float(cost.get("flops")),
        lower_seconds=t1 - t0,
        compile_seconds=t2 - t1,
        captured_constants=captured_constant_reports(str(w.message) for w in caught),
        hlo_text=hlo_text,
        compiled=compiled,
        buffer_assignment=assignment,
    )


_warmed_up: set[str] = set()


def _warm_up(device: Any) -> None:
    """Compile a trivial function once per device, so the first version measured
    does not pay the backend's one-time start-up in its compile time."""
    import jax
    import numpy as np

    key = str(device)
    if key in _warmed_up:
        return
    _warmed_up.add(key)
    sharding = jax.sharding.SingleDeviceSharding(device) if device is not None else None
    probe = jax.ShapeDtypeStruct((8,), np.float32, sharding=sharding)
    jax.jit(lambda v: v * 2 + 1).lower(probe).compile()


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


_TENSOR = re.compile(r"tensor<((?:\d+x)*)(complex<\w+>|\w+)>")
_MLIR_ELEMENT_BYTES = {
    "i1": 1, "i8": 1, "ui8": 1, "i16": 2, "ui16": 2, "i32": 4, "ui32": 4, "i64": 8, "ui64": 8,
    "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "complex<f32>": 8, "complex<f64>": 16,
}


def lowered_constant_bytes(lowered: Any) -> int | None:
    """Bytes of non-splat array constants in the lowered StableHLO module.

    Walks the MLIR module object rather than `as_text()`: a folded 128 MB array
    prints as 256 MB of hex. Returns None when this jaxlib's MLIR bindings
    lack what is needed (the optimized-HLO count still stands).
    """
    try:
        from jaxlib.mlir import ir

        module = lowered.compiler_ir("stablehlo")
        total = 0

        def visit(op: Any) -> Any:
            nonlocal total
            if op.name == "stablehlo.constant":
                attr = op.attributes["value"]
                nbytes = _tensor_type_bytes(str(attr.type))
                # Scalars (complex ones included, whose attribute the bindings cannot cast) are
                # immediates: only array constants are asked whether they are splats.
                if nbytes and not (isinstance(attr, ir.DenseElementsAttr) and attr.is_splat):
                    total += nbytes
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        return total
    except (ImportError, AttributeError, TypeError, KeyError, RuntimeError):
        # RuntimeError: the MLIR walk re-raises what failed inside the callback.
        return None


def _tensor_type_bytes(text: str) -> int:
    m = _TENSOR.search(text)
    if not m:
        return 0
    dims = [int(d) for d in m.group(1).split("x") if d]
    count = 1
    for d in dims:
        count *= d
    element = m.group(2)
    if count <= 1:
        return 0  # scalars are immediates, not folded arrays
    return count * _MLIR_ELEMENT_BYTES.get(element, 4)


def captured_constant_reports(messages: Iterator[str] | Sequence[str]) -> list[str]:
    """One line per constant from JAX's captured-constants warnings, naming its source line."""
    reports = []
    for message in messages:
        if "captured" not in message or "onstant" not in message:
            continue
        lines = message.splitlines()
        for i, line in enumerate(lines):
            # e.g. "Constant <class '...TypedNdArray'>, float32[1024,2], 8.19KB captured at:"
            m = re.search(r"Constant <[^>]*>, (\S+), (\S+) captured at:", line)
            if not m:
                m2 = re.search(r"Closed-over constant [^:]*: (\S+) in (.*?)(?: used at:)?$", line)
                if m2:
                    reports.append(f"closed-over constant {m2.group(1)} in {m2.group(2)}")
                continue
            frame = next((ln.strip() for ln in lines[i + 1:] if ln.strip()), "?")
            reports.append(f"captured constant {m.group(1)} ({m.group(2)}) at {frame}")
    return reports
