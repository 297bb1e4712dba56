"""The GPU models `verify`, `explain` and the proof table can compile for without a GPU.

Each is an XLA target config (a `stream_executor.GpuTargetConfigProto` text file,
copied from XLA's repository: see README.md beside this file). No jax here: the
configuration loader validates `gpu = ...` with it.
"""
from __future__ import annotations

import os

# `gpu = NAME` -> the target config shipped with jaxfuse-lint.
MODELS = {
    "h100": "h100_sxm.txtpb",
    "a100": "a100_sxm_80.txtpb",
    "a6000": "a6000.txtpb",
}
DEFAULT_GPU = "h100"
_HERE = os.path.dirname(os.path.abspath(__file__))


def config_path(gpu: str | None, base: str | None = None) -> str:
    """The target config file for a model name (case-insensitive) or a path (relative to `base`).

    Raises ValueError naming the known models when `gpu` is neither, and saying why when the
    file is not an XLA target config (config_file.py)."""
    value = (gpu or DEFAULT_GPU).strip()
    name = MODELS.get(value.lower())
    if name is not None:
        return os.path.join(_HERE, name)
    path = os.path.expanduser(value)
    if base and not os.path.isabs(path):
        path = os.path.join(base, path)
    if os.path.isfile(path):
        from jaxfuse_lint.gpu_targets.config_file import NotATargetConfig, check_file

        try:
            check_file(path)
        except (NotATargetConfig, OSError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ValueError(f"{gpu!r} is not an XLA target config (a GpuTargetConfigProto text file, as "
                             f"`jaxfuse_lint/gpu_targets/*.txtpb` are): {why}") from None
        return os.path.abspath(path)
    raise ValueError(f"`gpu` must be one of {', '.join(sorted(MODELS))} or the path of an XLA target config "
                     f"(a .txtpb file), got {gpu!r}")


def normalize(gpu: object, base: str | None = None) -> str:
    """The configured value as stored in Settings: a model name (lower case) or an absolute path.

    Raises ValueError (see `config_path`)."""
    if not isinstance(gpu, str) or not gpu.strip():
        raise ValueError(f"`gpu` must be one of {', '.join(sorted(MODELS))} or the path of an XLA target "
                         f"config (a .txtpb file), got {gpu!r}")
    path = config_path(gpu, base)
    return gpu.strip().lower() if gpu.strip().lower() in MODELS else path


def model_label(gpu: str | None) -> str:
    """What the report calls the configured model: its name, or the file's name for a path."""
    value = (gpu or DEFAULT_GPU).strip()
    return value.lower() if value.lower() in MODELS else os.path.basename(value)
