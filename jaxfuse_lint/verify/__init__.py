"""`jaxfuse-lint verify`: compile both versions of a function and prove a rewrite helps.

Importing this package does not import jax (nor any user code): `check` must
stay free of both. jax is imported inside the functions that need it.

    from jaxfuse_lint.verify import verify_pair
    result = verify_pair(before_src, after_src, "f", ["f32[131072,2]"], filename="m.py")
    result.verdict    # "proved" | "regressed" | "changed results" | "unchanged" | "error"
    result.summary()  # "on CPU: 2 → 1 kernels, 1.0 MiB → 0 B temporaries"
"""
from __future__ import annotations

from jaxfuse_lint.verify.api import (
    VERDICTS,
    Metric,
    ResolvedArgs,
    Side,
    VerifyResult,
    resolve_arg_specs,
    verify_pair,
)
from jaxfuse_lint.verify.errors import VerifyError

__all__ = [
    "VERDICTS",
    "Metric",
    "ResolvedArgs",
    "Side",
    "VerifyError",
    "VerifyResult",
    "resolve_arg_specs",
    "verify_pair",
]
