"""Runtime truth: what a real JAX program compiled to, joined back to its source lines.

The modules here read what JAX and XLA produced for a traced function (the
lowered and compiled program, its buffer assignment) and say, per source line,
which kernels its operations landed in, which temporaries and folded
constants it is responsible for, and which copies XLA inserted around it.

Importing this package (or `jaxfuse_lint.verify.attribution`) does not import
jax: `check` and `--fix` must stay free of it. Functions that need jax import
it when they are called.
"""
from __future__ import annotations
