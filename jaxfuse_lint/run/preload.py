"""What the forkserver imports before it forks any worker (run/pool.py): the parser, the model, the
rules and the codemods, so that each worker starts with the tool loaded instead of importing it
(about 3 s of a cold worker, libcst's matchers most of it).

The forkserver starts the workers where fork is unsafe (other threads: an editor integration; jax
loaded: a notebook, a test session); it lives as long as the process that started it, so every run
of that process after the first gets warm workers. A failure here only leaves the workers to load
the tool themselves: the engine reports what cannot be imported, per file.
"""
from __future__ import annotations

try:
    from jaxfuse_lint.rules import all_rules
    from jaxfuse_lint.run.worker import preload_tool

    all_rules()
    preload_tool()
except Exception:  # noqa: BLE001 - the forkserver must start whatever happens here
    pass
