"""Compare two versions of one JAX function: the verdict and the evidence behind it.

This is the one entry point the rest of jaxfuse-lint calls (`verify_pair`);
the `verify` command adds file reading and config lookup around it, and
runtime/verify_fixed.py the linter's fix of the file.
It imports and runs user code, so only `verify` calls it.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.measure import DEFAULT_CONSTANTS_WARN_BYTES, Measurement
from jaxfuse_lint.verify.shapes import (
    ArgSpec,
    find_function_def,
    parse_arg_spec,
    parse_static_value,
    specs_from_annotations,
)

VERDICTS = ("proved", "regressed", "changed results", "unchanged", "error")


@dataclass
class Metric:
    """One figure measured on both versions. Lower is better for every metric here."""

    key: str
    label: str
    before: float | None
    after: float | None
    unit: str  # "count", "bytes", "seconds" or "time" (a measured wall-clock, shown in s/ms/µs)
    # Deciding metrics make the verdict; the others are shown as context.
    deciding: bool
    # A difference no larger than this is noise, not a change (bytes: `metric_for_bytes`; wall-clock:
    # see verify/timing.py).
    tolerance: float = 0.0

    @property
    def change(self) -> str:
        if self.before is None or self.after is None:
            return "n/a"
        if self.after < self.before - self.tolerance:
            return "better"
        if self.after > self.before + self.tolerance:
            return "worse"
        return "same"

    def to_json(self) -> dict[str, Any]:
        out = {
            "key": self.key, "label": self.label, "before": self.before, "after": self.after,
            "unit": self.unit, "deciding": self.deciding, "change": self.change,
        }
        if self.tolerance:
            out["tolerance"] = self.tolerance
        return out


@dataclass
class Side:
    """One version of the function and what was measured on it."""

    label: str  # "before" or "after"
    target: str  # what was loaded, e.g. "model.py::step (fixed)"
    measurement: Measurement | None = None
    lowering_error: str | None = None  # only kept in --call mode, where the driver still runs
    compilations: Any = None  # CompilationCount with --call
    timing: Any = None  # Timing with --time

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "target": self.target,
            "measurement": self.measurement.to_json() if self.measurement else None,
            "lowering_error": self.lowering_error,
            "compilations": self.compilations.to_json() if self.compilations else None,
            "timing": self.timing.to_json() if self.timing else None,
        }


@dataclass
class VerifyResult:
    """The outcome of comparing two versions of a function. See `verify_pair`."""

    verdict: str
    func: str
    args: list[str] = field(default_factory=list)
    static: dict[str, Any] = field(default_factory=dict)
    before: Side | None = None
    after: Side | None = None
    metrics: list[Metric] = field(default_factory=list)
    numerics: Any = None  # NumericsResult
    environment: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    fixes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    graphs: list[str] = field(default_factory=list)
    seed: int = 0  # of the random inputs both versions ran on

    @property
    def exit_code(self) -> int:
        """0: proved or unchanged; 1: regressed or changed results; 2: error."""
        if self.verdict == "error":
            return 2
        if self.verdict == "regressed" and not self.measured_on_target:
            return 0  # a stand-in compiler's figures do not reject anything (see keeps_fix)
        return 1 if self.verdict in ("regressed", "changed results") else 0

    @property
    def backend_name(self) -> str:
        """"CPU", "GPU", "GPU (H100, deviceless)", "CPU (stand-in for GPU)"."""
        from jaxfuse_lint.verify.backend import label

        return label(self.environment)

    @property
    def measured_on_target(self) -> bool:
        """False when the compiler that measured is a stand-in for the target's (no GPU compiler here)."""
        return not self.environment.get("stand_in")

    @property
    def keeps_fix(self) -> bool:
        """Whether `--fix --verify` keeps the fix this measured. A stand-in compiler's kernels and
        temporaries say nothing about the target's, so its "unchanged" or "regressed" leaves the fix
        unproved on this backend but kept; changed results and errors are not about a compiler."""
        if self.verdict == "proved":
            return True
        return not self.measured_on_target and self.verdict in ("unchanged", "regressed")

    def metric(self, key: str) -> Metric | None:
        return next((m for m in self.metrics if m.key == key), None)

    def summary(self) -> str:
        """One line, e.g. "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"."""
        from jaxfuse_lint.verify.report import summary_line

        return summary_line(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "summary": self.summary(),
            "func": self.func,
            "args": self.args,
            "static": {k: repr(v) for k, v in self.static.items()},
            "environment": self.environment,
            "error": self.error,
            "fixes": self.fixes,
            "notes": self.notes,
            "metrics": [m.to_json() for m in self.metrics],
            "numerics": self.numerics.to_json() if self.numerics else None,
            "seed": self.seed,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "graphs": self.graphs,
        }


@dataclass(frozen=True)
class Version:
    """One version to load: its source text, the name it goes by, and the function."""

    source: str
    filename: str
    func: str
    label: str  # "before" / "after"
    display: str  # how the report names it


def verify_pair(
    before_source: str,
    after_source: str,
    func_name: str,
    arg_specs: Sequence[str | ArgSpec] | None,
    static: Mapping[str, Any] | None = None,
    *,
    filename: str = "<string>",
    after_func_name: str | None = None,
    after_filename: str | None = None,
    dims: Mapping[str, int] | None = None,
    call: bool = False,
    backend: str | None = None,
    seed: int = 0,
    graph_dir: str | None = None,
    constants_warn_bytes: int = DEFAULT_CONSTANTS_WARN_BYTES,
    time_runs: int = 0,
    target: str | None = None,
    gpu: str | None = None,
    timer: Any = None,
) -> VerifyResult:
    """Compile and run `func_name` from two source texts and say whether the second is better.

    Contract: never raises for problems with the input or the user's code; those
    come back as `verdict == "error"` with a one-line `.error`. The verdict is
    one of "proved" (results agree, no deciding metric got worse, at least one
    improved), "regressed" (a deciding metric got worse), "changed results"
    (outputs differ beyond dtype-aware tolerance), "unchanged" (nothing
    measurable moved) or "error". `.summary()` is one line such as
    "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"; `.exit_code` is 0, 1 or 2.

    `arg_specs` are strings like "f32[131072,2]" (or ArgSpec), one per positional
    array argument; None reads jaxtyping annotations of the before version.
    `static` maps parameter names to Python values passed as static arguments.
    `dims` sizes named dimensions in specs and annotations. With `call=True`
    the function is also called eagerly (twice) as a driver and the
    steady-state compilations of the second call are compared; a function
    that cannot be jitted as a whole is then still verified on compilations
    and results. With `time_runs=N` both versions are also timed N times each
    on the current backend (`verify/timing.py`) and the median wall-clock is a
    deciding metric: slower beyond the noise is a regression (`timer` times one run: see
    `verify.timing.Timer`; default the wall-clock). `target` ("gpu",
    "cpu", "tpu") and `gpu` (a GPU model or target config) say what to compile
    for (`verify/backend.py`; None: JAX's default backend; `backend` names a JAX
    backend instead). This imports and runs both source texts.
    """
    after_func = after_func_name or func_name
    if after_filename is None and after_source != before_source:
        # The fixed text exists only in memory: tracebacks and JAX's messages name it so.
        after_filename = f"{filename} (fixed)"
        after_display = f"{filename}::{after_func} (fixed)"
    else:
        after_filename = after_filename or filename
        after_display = f"{after_filename}::{after_func}"
    return verify_versions(
        Version(before_source, filename, func_name, "before", f"{filename}::{func_name}"),
        Version(after_source, after_filename, after_func, "after", after_display),
        arg_specs, static or {}, dims=dims or {}, call=call, backend=backend, seed=seed,
        graph_dir=graph_dir, constants_warn_bytes=constants_warn_bytes, time_runs=time_runs, target=target, gpu=gpu,
        timer=timer,
    )


def verify_versions(
    before: Version,
    after: Version,
    arg_specs: Sequence[str | ArgSpec] | None,
    static: Mapping[str, Any],
    *,
    dims: Mapping[str, int],
    call: bool = False,
    backend: str | None = None,
    seed: int = 0,
    graph_dir: str | None = None,
    constants_warn_bytes: int = DEFAULT_CONSTANTS_WARN_BYTES,
    time_runs: int = 0,
    target: str | None = None,
    gpu: str | None = None,
    timer: Any = None,
) -> VerifyResult:
    """`verify_pair` for two explicit versions (different files or function names)."""
    result = VerifyResult(verdict="error", func=before.func, static=dict(static), seed=seed)
    from jaxfuse_lint.verify.loader import notebook_note

    for filename in dict.fromkeys((before.filename, after.filename)):
        if (note := notebook_note(filename)) is not None:
            result.notes.append(note)
    try:
        from jaxfuse_lint.verify.backend import select

        compile_target = select(target, gpu, backend)
        _run(result, before, after, arg_specs, static, dims, call, compile_target, seed, graph_dir,
             constants_warn_bytes, time_runs, timer)
    except VerifyError as exc:
        result.verdict = "error"
        result.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - jax internals failing must still yield a report
        from jaxfuse_lint.verify.loader import describe_exception

        result.verdict = "error"
        result.error = f"verification failed: {describe_exception(exc)}"
    return result


def _run(
    result: VerifyResult,
    before: Version,
    after: Version,
    arg_specs: Sequence[str | ArgSpec] | None,
    static: Mapping[str, Any],
    dims: Mapping[str, int],
    call: bool,
    compile_target: Any,
    seed: int,
    graph_dir: str | None,
    constants_warn_bytes: int,
    time_runs: int = 0,
    timer: Any = None,
) -> None:
    jax = _import_jax()
    from jaxfuse_lint.verify.loader import get_function, load_module
    from jaxfuse_lint.verify.numerics import compare_outputs, random_inputs

    device = compile_target.device
    result.environment = environment(jax, compile_target)
    if (line := compile_target.describe()) is not None:
        result.notes.append(line + ("; results are compared on the CPU" if compile_target.deviceless else ""))

    if arg_specs is None:
        arg_specs = specs_from_annotations(before.source, before.func, skip=tuple(static), where=before.filename)
        if arg_specs is None:
            if _required_params(before.source, before.func, static):
                raise VerifyError(
                    f"{before.filename}: no argument shapes for `{before.func}`: pass --arg DTYPE[DIMS] "
                    f"for each array argument, list it under [tool.jaxfuse-lint.verify] or annotate it with jaxtyping"
                )
            arg_specs = []
        result.notes.append("argument shapes read from jaxtyping annotations")
    specs = [s if isinstance(s, ArgSpec) else parse_arg_spec(s, dims) for s in arg_specs]
    _check_x64(jax, specs)
    result.args = [str(s) for s in specs]

    sides = []
    for version in (before, after):
        module = load_module(version.source, version.filename, label=version.label)
        func = get_function(module, version.func, version.filename)
        sides.append((version, func, Side(version.label, version.display)))
    result.before, result.after = sides[0][2], sides[1][2]

    from jaxfuse_lint.verify.measure import measure

    for version, func, side in sides:
        try:
            side.measurement = measure(
                func, specs, static, filename=version.filename, label=version.label,
                device=device, constants_warn_bytes=constants_warn_bytes,
            )
        except VerifyError as exc:
            if not call:
                raise
            # A driver such as a Python loop around jit calls need not be jittable itself.
            side.lowering_error = str(exc)

    inputs = random_inputs(specs, seed, compile_target.run_device)
    if call:
        from jaxfuse_lint.verify.compilations import count_compilations

        for version, func, side in sides:
            side.compilations = count_compilations(
                func, inputs, static, filename=version.filename, label=version.label
            )
        outputs = [side.compilations.outputs for _, _, side in sides]
    elif compile_target.can_run:
        outputs = [_run_compiled(side, inputs, version) for version, _, side in sides]
    else:  # compiled for a GPU that is not here: the results are compared on the CPU
        outputs = [_run_on(compile_target.run_device, func, inputs, static, version) for version, func, _ in sides]
    result.numerics = compare_outputs(outputs[0], outputs[1])

    if time_runs and not compile_target.can_run:
        result.notes.append(f"wall-clock needs a GPU: not measured (--time) for {compile_target.device_kind}")
    elif time_runs:
        from jaxfuse_lint.verify.timing import time_versions

        if call:
            # What a driver costs per call, recompilations included.
            calls = [lambda f=func: f(*inputs, **static) for _, func, _ in sides]
        else:
            calls = [lambda s=side: s.measurement.compiled(*inputs) for _, _, side in sides]
        timings = time_versions(calls, repeat=time_runs, mode="call" if call else "compiled", timer=timer)
        for (_, _, side), timing in zip(sides, timings):
            side.timing = timing

    result.metrics = build_metrics(result.before, result.after)
    result.verdict = decide(result.metrics, result.numerics)
    if compile_target.stand_in and result.verdict in ("unchanged", "regressed"):
        result.notes.append(f"unproved on {result.backend_name}: its compiler is not the target's, so this "
                            f"verdict rejects nothing (a fix is kept)")

    if graph_dir:
        from jaxfuse_lint.verify.graph_render import write_graph
        from jaxfuse_lint.verify.hlo import parse_hlo_module

        for version, _, side in sides:
            if side.measurement is not None:
                stem = f"{version.func}.{side.label}"
                result.graphs += write_graph(
                    parse_hlo_module(side.measurement.hlo_text), graph_dir, stem,
                    f"{side.label}: {version.display} on {result.backend_name}",
                )


def _import_jax() -> Any:
    from jaxfuse_lint.verify.backend import import_jax

    return import_jax()


def environment(jax: Any, device: Any) -> dict[str, Any]:
    """What kernel counts depend on: versions, backend, device and XLA flags. `device` is a jax
    Device or a `verify.backend.CompileTarget` (which adds `deviceless`, `target`, `gpu_model`,
    `stand_in`)."""
    try:
        import jaxlib

        jaxlib_version = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
    except (ImportError, AttributeError):
        jaxlib_version = "?"
    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib_version,
        "backend": getattr(device, "platform", None) or device.backend,
        "device": getattr(device, "device_kind", str(device)),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "x64": bool(jax.config.jax_enable_x64),
        "python": platform.python_version(),
        **(device.environment() if hasattr(device, "environment") else {}),
    }


def _check_x64(jax: Any, specs: Iterable[ArgSpec]) -> None:
    wide = sorted({s.dtype for s in specs if s.dtype in ("float64", "int64", "uint64", "complex128")})
    if wide and not jax.config.jax_enable_x64:
        raise VerifyError(
            f"{', '.join(wide)} arguments need 64-bit JAX: set JAX_ENABLE_X64=1 "
            f"(otherwise JAX would silently use 32-bit types)"
        )


def _required_params(source: str, func: str, static: Mapping[str, Any]) -> list[str]:
    import ast

    try:
        fn = find_function_def(ast.parse(source), func)
    except SyntaxError:
        return []  # loading the module reports the syntax error with its line
    if fn is None:
        return ["?"]  # not a plain def (e.g. an assignment): shapes cannot be inferred
    params = [*fn.args.posonlyargs, *fn.args.args]
    required = params[: len(params) - len(fn.args.defaults)]
    return [p.arg for p in required if p.arg not in static]


def _run_on(device: Any, func: Any, inputs: Sequence[Any], static: Mapping[str, Any], version: Version) -> Any:
    """`jax.jit(func)(*inputs)` compiled for and run on `device` (for a version compiled elsewhere)."""
    import jax

    from jaxfuse_lint.verify.loader import describe_exception

    try:
        with jax.default_device(device):
            return jax.block_until_ready(jax.jit(func, static_argnames=tuple(static))(*inputs, **static))
    except Exception as exc:  # noqa: BLE001 - a runtime failure in user code
        raise VerifyError(
            f"{version.filename}: running the {version.label} version on {device.platform.upper()} raised "
            f"{describe_exception(exc)}"
        ) from None


def _run_compiled(side: Side, inputs: Sequence[Any], version: Version) -> Any:
    import jax

    from jaxfuse_lint.verify.loader import describe_exception

    try:
        return jax.block_until_ready(side.measurement.compiled(*inputs))
    except Exception as exc:  # noqa: BLE001 - a runtime failure in user code
        raise VerifyError(
            f"{version.filename}: running the compiled {version.label} version raised {describe_exception(exc)}"
        ) from None


# A byte figure changes only when it moves by more than both of these: an absolute amount (a few
# scalars: a loop counter, alignment padding) and a share of the larger figure (docs/verify.md).
BYTES_NOISE_ABSOLUTE = 64
BYTES_NOISE_RELATIVE = 0.01


def metric_for_bytes(key: str, label: str, before: float | None, after: float | None,
                     deciding: bool = False) -> Metric:
    """A byte figure, with the significance thresholds as its tolerance."""
    larger = max(before or 0, after or 0)
    return Metric(key, label, before, after, "bytes", deciding,
                  tolerance=max(BYTES_NOISE_ABSOLUTE, BYTES_NOISE_RELATIVE * larger))


def build_metrics(before: Side, after: Side) -> list[Metric]:
    """The side-by-side figures; which of them decide the verdict is said here, once."""
    metrics: list[Metric] = []
    mb, ma = before.measurement, after.measurement
    if mb is not None and ma is not None:
        has_loops = bool(mb.kernels.loops or ma.kernels.loops)
        per_run_known = mb.kernels.launches_per_run is not None and ma.kernels.launches_per_run is not None
        # With loops, what runs is launches per call; the static count decides only
        # when a trip count is unknown.
        metrics.append(Metric("kernels", "kernels", mb.kernels.total, ma.kernels.total, "count",
                              deciding=not (has_loops and per_run_known)))
        if has_loops:
            metrics.append(Metric("loop_kernels", "kernels in loops", mb.kernels.loop_body,
                                  ma.kernels.loop_body, "count", deciding=False))
            metrics.append(Metric("launches", "launches per run", mb.kernels.launches_per_run,
                                  ma.kernels.launches_per_run, "count", deciding=per_run_known))
        metrics += [
            metric_for_bytes("temp_bytes", "temporaries", mb.temp_bytes, ma.temp_bytes, deciding=True),
            metric_for_bytes("folded_constant_bytes", "folded constants", mb.folded_constant_bytes,
                             ma.folded_constant_bytes, deciding=True),
            # XLA's cost model counts every operand read of a fused kernel separately, so
            # unrolling `sum(x * x, axis=1)` into `x[:, 0] * x[:, 0] + ...` "accesses" more
            # bytes while reading x from memory once: an estimate to show, not to decide on.
            metric_for_bytes("bytes_accessed", "bytes accessed", mb.bytes_accessed, ma.bytes_accessed),
            metric_for_bytes("lowered_constant_bytes", "captured constants", mb.lowered_constant_bytes,
                             ma.lowered_constant_bytes),
            metric_for_bytes("argument_bytes", "argument bytes", mb.argument_bytes, ma.argument_bytes),
            metric_for_bytes("output_bytes", "output bytes", mb.output_bytes, ma.output_bytes),
            Metric("compile_seconds", "compile time", mb.compile_seconds, ma.compile_seconds, "seconds", False),
        ]
    if before.compilations is not None and after.compilations is not None:
        metrics.append(Metric("compilations", "compilations per call", before.compilations.steady_state,
                              after.compilations.steady_state, "count", True))
    if before.timing is not None and after.timing is not None:
        from jaxfuse_lint.verify.timing import noise

        # What users feel; it decides, but only beyond the noise of the runs.
        metrics.append(Metric("wall_seconds", "wall-clock (median)", before.timing.median, after.timing.median,
                              "time", True, tolerance=noise(before.timing, after.timing)))
    return metrics


def decide(metrics: Sequence[Metric], numerics: Any) -> str:
    if numerics is not None and not numerics.agree:
        return "changed results"
    deciding = [m for m in metrics if m.deciding]
    if any(m.change == "worse" for m in deciding):
        return "regressed"
    if any(m.change == "better" for m in deciding):
        return "proved"
    return "unchanged"


# --- where argument shapes come from -----------------------------------------

@dataclass(frozen=True)
class ResolvedArgs:
    args: list[str] | None  # None: read jaxtyping annotations when verifying
    static: dict[str, Any]
    origin: str


def resolve_arg_specs(
    source: str,
    func: str,
    *,
    filename: str,
    settings: Any = None,
    cli_args: Sequence[str] = (),
    cli_static: Mapping[str, Any] | None = None,
    dims: Mapping[str, int] | None = None,
) -> ResolvedArgs:
    """Argument shapes for `func`: --arg first, then [tool.jaxfuse-lint.verify], then jaxtyping.

    Static values from the config are overridden by `cli_static`. Raises
    VerifyError when none of the three gives shapes for a function that takes
    array arguments.
    """
    static: dict[str, Any] = {}
    config_args = None
    if settings is not None:
        for target, spec in getattr(settings, "verify", ()):
            if config_target_matches(target, filename, func, getattr(settings, "project_root", None)):
                config_args = list(spec.args)
                static.update({k: parse_static_value(v) for k, v in spec.static})
                break
    static.update(cli_static or {})
    if cli_args:
        return ResolvedArgs(list(cli_args), static, "--arg")
    if config_args is not None:
        return ResolvedArgs(config_args, static, "[tool.jaxfuse-lint.verify]")
    from_annotations = specs_from_annotations(source, func, skip=tuple(static), where=filename)
    if from_annotations is not None:
        # Resolve now so a missing --dim is reported before anything is imported.
        for text in from_annotations:
            parse_arg_spec(text, dims or {})
        return ResolvedArgs(from_annotations, static, "jaxtyping annotations")
    missing = _required_params(source, func, static)
    if missing:
        raise VerifyError(
            f"{filename}: no argument shapes for `{func}` (parameters: {', '.join(missing)}): pass --arg "
            f"DTYPE[DIMS] per array argument, list \"module:{func}\" under [tool.jaxfuse-lint.verify], "
            f"or annotate them with jaxtyping"
        )
    return ResolvedArgs([], static, "no array arguments")


def config_target_matches(target: str, filename: str, func: str, project_root: str | None) -> bool:
    """Does "pkg.mod:func" name `func` in the file at `filename`?"""
    module, _, target_func = target.partition(":")
    if target_func != func:
        return False
    path = os.path.abspath(filename).replace(os.sep, "/")
    stem = module.replace(".", "/")
    for candidate in (f"{stem}.py", f"{stem}/__init__.py", f"{stem}.ipynb"):
        if project_root:
            full = os.path.abspath(os.path.join(project_root, candidate)).replace(os.sep, "/")
            if path == full:
                return True
        if path.endswith("/" + candidate):
            return True
    return False
