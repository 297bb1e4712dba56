"""One file through the pipeline: parse, model, rules, noqa, fixes (`pipeline.py`).

The Python API: `check_source(source, filename, settings)` and `fix_source(...)`, importable from here
(`from jaxfuse_lint.engine import check_source`). Importing it stays cheap: libcst, the model, the
rules and the codemods load on the first call.
"""
from jaxfuse_lint.engine.pipeline import FileResult, FixOutcome, check_source, decode, fix_source

__all__ = ["FileResult", "FixOutcome", "check_source", "decode", "fix_source"]
