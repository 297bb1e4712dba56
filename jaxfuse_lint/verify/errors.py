"""The one error type `verify` reports on a single line (exit code 2)."""
from __future__ import annotations


class VerifyError(Exception):
    """Bad input or failing user code: printed as one line, exit code 2.

    Raised for a malformed argument spec, a missing file or function, user code
    that raises while being imported, traced or compiled, and for anything
    else that keeps the two versions from being compared at all.
    """
