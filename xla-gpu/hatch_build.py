"""Build hooks of jaxfuse-lint-xla-gpu (pyproject.toml says why it exists).

Both run in the isolated build environment, where pip installed jax's CUDA plugin (`jax-cuda12-plugin`
and the PJRT library it requires, `jax-cuda12-pjrt`): the metadata takes the plugin's version and pins
jaxlib to it (a plugin works only with the jaxlib it was built for); the wheel gets the two
distributions' files, less their metadata, under `jaxfuse_lint_xla_gpu/site/`.
"""
from __future__ import annotations

import importlib.metadata
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

PLUGIN = "jax-cuda12-plugin"
DISTRIBUTIONS = (PLUGIN, "jax-cuda12-pjrt")
SITE = "jaxfuse_lint_xla_gpu/site"


class XlaGpuMetadata(MetadataHookInterface):
    def update(self, metadata: dict[str, Any]) -> None:
        version = importlib.metadata.version(PLUGIN)
        metadata["version"] = version
        metadata["dependencies"] = [f"jaxlib=={version}"]


class XlaGpuFiles(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        for name in DISTRIBUTIONS:
            distribution = importlib.metadata.distribution(name)
            for file in distribution.files or ():
                if file.parts[0].endswith(".dist-info") or "__pycache__" in file.parts:
                    continue
                build_data["force_include"][str(distribution.locate_file(file))] = f"{SITE}/{file.as_posix()}"
        # Native libraries: a wheel for this interpreter and platform.
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
