"""Calibration: what the compiler really does with each form a rule flags, as committed tables.

For each rule whose claim is about compiled code, a generator module (`jf101.py`, ...) spells the
variants of the rule's pattern as small jitted functions with declared shapes and dtypes. The
harness (`harness.py`) applies the rule's own fix to each (the linter, no jax), compiles both
versions for each target — XLA:GPU without a GPU for the bundled GPU models, XLA:CPU with
wall-clock — and writes the figures and a verdict per variant into the rule's tables
(`jaxfuse_lint/core/calibration_tables/`), which the rule reads at check time
(`jaxfuse_lint/core/calibration.py`). One command regenerates them all:

    python -m jaxfuse_lint.calibrate                    # every rule, every target
    python -m jaxfuse_lint.calibrate --rule JF101 --target h100

It imports jax and runs the generated functions (never user code).
"""
