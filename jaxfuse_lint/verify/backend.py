"""What the verifier compiles for: the one place that chooses.

`verify`, `explain`, `--fix --verify`, `review --verify`, `verify --profile` and
`benchmarks/proofs.py` all compile through `select()`:

- `target = "gpu"` (the default) with a GPU present: that GPU. Without one, but
  with jax's CUDA plugin at hand (the `gpu` extra, no NVIDIA runtime needed):
  XLA:GPU itself, for the configured GPU model (`gpu = "h100"`,
  `jaxfuse_lint/gpu_targets/`), on a compile-only device built from XLA's
  target config: *deviceless* compilation. The optimized GPU program and its
  buffer assignment are real; nothing can run on it, so results are compared on
  the CPU and wall-clock is not measured. Without the plugin: XLA:CPU, as a
  *stand-in*, said in one line, and its verdicts never roll back a fix made for
  the GPU (`VerifyResult.keeps_fix`).
- `target = "cpu"`: XLA:CPU. `target = "tpu"`: a TPU if present, else XLA:CPU
  as a stand-in.
- `--backend NAME` (a JAX backend) overrides all of this: that backend's first device.

Where the plugin comes from. The `gpu` extra installs it off the import path
(the `jaxfuse-lint-xla-gpu` distribution, xla-gpu/ in the repository), so that
the environment's own `import jax` never loads it; `import_jax()` registers it
with jax once jax has started, in this process only, as a compiler (its
version check of a CUDA installation skipped: nothing runs on it). A CUDA plugin
installed the usual way (`jax[cuda12]`) is jax's own: jax loads it when it
starts, and then, on a machine without an NVIDIA driver, JAX's platforms are
set to the CPU first (the plugin would otherwise fail to initialise, log a
traceback, and register no GPU compiler), and the plugin's "Could not find
cuda drivers" lines are kept off stderr.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator

from jaxfuse_lint.verify.errors import VerifyError

GPU_EXTRA_HINT = ("python3 -m pip install -e '.[gpu]' in jaxfuse-lint's repository compiles with XLA:GPU "
                  "without a GPU")
_NAMES = {"gpu": "GPU", "cpu": "CPU", "tpu": "TPU"}
# What jax's CUDA plugin prints through absl while loading on a machine without a driver.
_STUB_NOISE = re.compile(r"cudart_stub\.cc|All log messages before absl::InitializeLog\(\) is called")


@dataclass(frozen=True)
class CompileTarget:
    """Where a program is compiled (`device`) and where it can run (`run_device`)."""

    target: str | None  # the project's target ("gpu", "cpu", "tpu"); None: JAX's default backend
    device: Any  # a jax Device: real, or compile-only (deviceless)
    run_device: Any  # a real device: numerics, --time, --call
    deviceless: bool = False
    gpu: str | None = None  # the configured GPU model compiled for without a GPU ("h100", or a file)
    stand_in: str | None = None  # why this is not the target's compiler; None when it is

    @property
    def backend(self) -> str:
        """"gpu", "cpu" or "tpu": the compiler that ran."""
        return str(self.device.platform)

    @property
    def device_kind(self) -> str:
        return str(getattr(self.device, "device_kind", self.device))

    @property
    def can_run(self) -> bool:
        return not self.deviceless

    def label(self) -> str:
        """How one-line summaries name it: "GPU", "GPU (H100, deviceless)", "CPU (stand-in for GPU)"."""
        return label(self.environment())

    def describe(self) -> str | None:
        """One line saying what was compiled for, when that is not simply the machine's device."""
        if self.deviceless:
            model = f' (gpu = "{self.gpu}")' if self.gpu and os.sep not in self.gpu else (
                f" ({self.gpu})" if self.gpu else "")
            return f"compiled with XLA:GPU for {self.device_kind}{model} without a GPU (deviceless)"
        if self.stand_in:
            return self.stand_in
        return None

    def environment(self) -> dict[str, Any]:
        """The fields a report's `environment` carries about the compiler."""
        return {
            "backend": self.backend,
            "device": self.device_kind,
            "deviceless": self.deviceless,
            "target": self.target,
            "gpu_model": self.gpu if self.deviceless else None,
            "stand_in": self.stand_in,
        }


def label(environment: dict[str, Any]) -> str:
    """A report's compiler from its `environment`: "GPU", "GPU (H100, deviceless)", "CPU (stand-in for GPU)"."""
    name = str(environment.get("backend") or "?").upper()
    if environment.get("deviceless"):
        model = str(environment.get("gpu_model") or environment.get("device") or "")
        model = os.path.splitext(os.path.basename(model))[0] if os.sep in model else model
        return f"{name} ({model.upper()}, deviceless)"
    if environment.get("stand_in") and environment.get("target"):
        return f"{name} (stand-in for {_NAMES.get(environment['target'], str(environment['target']).upper())})"
    return name


def import_jax() -> Any:
    """`import jax`, set up for what this machine has (see the module docstring)."""
    quiet = _filtered_stderr if _cuda_plugins() else contextlib.nullcontext
    try:
        with quiet():
            import jax
    except ImportError:
        raise VerifyError("this needs jax: python3 -m pip install -e '.[verify]' in jaxfuse-lint's repository"
                          ) from None
    _prefer_cpu_platform(jax)
    with quiet():
        try:
            jax.devices()  # start the backends (and the plugins, which register their compilers)
        except RuntimeError:
            pass
    _register_xla_gpu(jax)
    return jax


def select(target: str | None = None, gpu: str | None = None, backend: str | None = None) -> CompileTarget:
    """The CompileTarget for a project `target` and GPU model (see the module docstring)."""
    jax = import_jax()
    if backend:
        device = _first_device(jax, backend)
        if device is None:
            raise VerifyError(f"backend `{backend}` is not available")
        return CompileTarget(None, device, device)
    if target is None:
        device = jax.devices()[0]
        return CompileTarget(None, device, device)
    cpu = _first_device(jax, "cpu")
    if target == "cpu":
        return CompileTarget("cpu", cpu, cpu)
    present = _first_device(jax, target)
    if present is not None:
        return CompileTarget(target, present, present)
    if target == "gpu":
        if _gpu_compiler_available(jax):
            from jaxfuse_lint.gpu_targets import DEFAULT_GPU, config_path

            try:
                path = config_path(gpu)
            except ValueError as exc:
                raise VerifyError(str(exc)) from None
            return CompileTarget("gpu", _compile_only_gpu(path), cpu, deviceless=True, gpu=gpu or DEFAULT_GPU)
        if _xla_gpu_problem:
            why = (f"no GPU here, and {_xla_gpu_problem}: XLA:CPU stood in for the GPU target and fuses "
                   f"differently")
        elif _cuda_plugin_installed():
            why = ("no GPU here, and jax's CUDA plugin registered no compiler (JAX started before "
                   "JAX_PLATFORMS=cpu could be set: set it yourself): XLA:CPU stood in for the GPU target "
                   "and fuses differently")
        else:
            why = (f"no GPU here and no XLA:GPU compiler: XLA:CPU stood in for the GPU target and fuses "
                   f"differently; {GPU_EXTRA_HINT}")
    else:
        why = f"no {_NAMES.get(target, target)} here: XLA:CPU stood in for the {_NAMES.get(target, target)} target"
    return CompileTarget(target, cpu, cpu, stand_in=why)


def for_settings(settings: Any, backend: str | None = None) -> CompileTarget:
    return select(getattr(settings, "target", None), getattr(settings, "gpu", None), backend)


def shape_dtype_struct(target: CompileTarget | None, shape: Any, dtype: Any, weak_type: bool = False) -> Any:
    """A ShapeDtypeStruct placed on the compile device (None: unplaced)."""
    import jax

    sharding = jax.sharding.SingleDeviceSharding(target.device) if target is not None else None
    return jax.ShapeDtypeStruct(tuple(shape), dtype, sharding=sharding, weak_type=weak_type)


def abstract_args(target: CompileTarget, args: Any) -> Any:
    """Real arrays (a notebook's arguments) as ShapeDtypeStructs on a compile-only device; other
    leaves (Python scalars, static values) unchanged."""
    import jax

    def convert(leaf: Any) -> Any:
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            return shape_dtype_struct(target, leaf.shape, leaf.dtype, bool(getattr(leaf, "weak_type", False)))
        return leaf

    return jax.tree_util.tree_map(convert, args)


# --- helpers ------------------------------------------------------------------------------------


def _first_device(jax: Any, platform: str) -> Any:
    try:
        devices = jax.devices(platform)
    except RuntimeError:
        return None
    return devices[0] if devices else None


def _cuda_plugin_installed() -> bool:
    """jax's CUDA plugin is at hand: the `gpu` extra's, or one jax loads itself (`jax_plugins.xla_cuda12`,
    jax 0.10; `jax_plugins.xla_cuda13`, jax 0.11)."""
    return bool(_cuda_plugins()) or _xla_gpu_site() is not None


def _cuda_plugins() -> list[str]:
    """The `jax_plugins.xla_cuda*` modules jax itself finds (whichever CUDA they are built for), found
    without importing them."""
    import pkgutil

    try:
        spec = importlib.util.find_spec("jax_plugins")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(f"jax_plugins.{m.name}" for m in pkgutil.iter_modules(list(spec.submodule_search_locations))
                  if re.fullmatch(r"xla_cuda\d+", m.name))


def _cuda_driver_present() -> bool:
    import ctypes

    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def _prefer_cpu_platform(jax: Any) -> None:
    """Without an NVIDIA driver, keep the CUDA plugin from initialising a device (it cannot, and
    then registers no compiler either): JAX's platforms become the CPU, if nobody chose them and
    no backend has started yet."""
    if os.environ.get("JAX_PLATFORMS") or not _cuda_plugin_installed() or _cuda_driver_present():
        return
    if importlib.util.find_spec("libtpu") is not None:
        return
    try:
        from jax._src import xla_bridge

        if xla_bridge.backends_are_initialized():
            return  # already started: too late to choose
        if not jax.config.jax_platforms:
            jax.config.update("jax_platforms", "cpu")
    except Exception:  # noqa: BLE001 - a jax without these internals: leave it alone
        return


def _gpu_compiler_available(jax: Any) -> bool:
    if not _cuda_plugin_installed():
        return False
    try:
        from jax._src import xla_bridge

        # Plugins register their compilers (topology factories) when the backends start.
        return "cuda" in getattr(xla_bridge, "_topology_factories", {"cuda": None})
    except Exception:  # noqa: BLE001
        return False


def _xla_gpu_site() -> str | None:
    """The folder where the `gpu` extra keeps jax's CUDA plugin (not on the import path), if installed."""
    try:
        if importlib.util.find_spec("jaxfuse_lint_xla_gpu") is None:
            return None
        import jaxfuse_lint_xla_gpu
    except ImportError:
        return None
    site = str(jaxfuse_lint_xla_gpu.SITE)
    return site if os.path.isdir(os.path.join(site, "jax_plugins")) else None


def _register_xla_gpu(jax: Any) -> None:
    """Register the `gpu` extra's CUDA plugin with this process's jax, as a compiler only, unless jax
    has one already (a plugin it loaded itself) or the extra is not installed. Once per process: the
    plugin's folder goes on `sys.path` (after everything else) and its `initialize()` runs with the
    check of a local CUDA installation skipped. The backends have started by then, so no CUDA device
    is opened; what the plugin prints while it loads without a driver is kept off stderr."""
    global _xla_gpu_tried, _xla_gpu_problem
    if _xla_gpu_tried or _gpu_compiler_available(jax):
        return
    site = _xla_gpu_site()
    if site is None:
        return
    _xla_gpu_tried = True
    from importlib.metadata import PackageNotFoundError, version

    try:
        built_for = version("jaxfuse-lint-xla-gpu")
    except PackageNotFoundError:
        built_for = None
    installed = getattr(sys.modules.get("jaxlib"), "__version__", None)
    if built_for and installed and built_for != installed:
        _xla_gpu_problem = (f"the `gpu` extra's XLA:GPU compiler is jaxlib {built_for}'s and jaxlib {installed} is "
                            f"installed (rebuild it: python3 -m pip install --force-reinstall --no-deps ./xla-gpu "
                            f"in jaxfuse-lint's repository)")
        return
    sys.path.append(site)
    saved = os.environ.get("JAX_SKIP_CUDA_CONSTRAINTS_CHECK")
    os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    try:
        with _filtered_stderr():
            importlib.import_module("jax_plugins.xla_cuda12").initialize()
    except Exception as exc:  # noqa: BLE001 - a plugin that cannot load here: XLA:CPU stands in, saying why
        _xla_gpu_problem = f"the `gpu` extra's XLA:GPU compiler did not load ({' '.join(str(exc).split())[:300]})"
    finally:
        if saved is None:
            os.environ.pop("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", None)
        else:
            os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = saved


# Whether this process tried to register the `gpu` extra's plugin, and why that failed (None: it did not).
_xla_gpu_tried = False
_xla_gpu_problem: str | None = None


@functools.lru_cache(maxsize=None)
def _compile_only_gpu(path: str) -> Any:
    """The one device of a 1-GPU topology built from the XLA target config at `path`."""
    from jax.experimental import topologies

    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        with _filtered_stderr():
            topology = topologies.get_topology_desc(platform="cuda", target_config=text, topology="1x1x1")
    except Exception as exc:  # noqa: BLE001 - a config this XLA cannot read
        detail = " ".join(str(exc).split())[:300]
        raise VerifyError(f"XLA:GPU cannot use the target config {path}: {detail}") from None
    return topology.devices[0]


@contextlib.contextmanager
def _filtered_stderr() -> Iterator[None]:
    """Run the block with file descriptor 2 captured; write back all but the CUDA stub's lines."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield
        finally:
            try:
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            kept = [line for line in capture.read().decode("utf-8", "replace").splitlines(keepends=True)
                    if not _STUB_NOISE.search(line)]
            if kept:
                os.write(2, "".join(kept).encode("utf-8"))
