"""JF000 syntax-error: reported by the engine (parse/syntax_errors.py: parse_check, syntax_error_diagnostic)."""
from __future__ import annotations

from typing import Iterator

from jaxfuse_lint.rules.base import Rule, Violation
from jaxfuse_lint.core.targets import Claim, Evidence


class SyntaxErrorRule(Rule):
    code = "JF000"
    name = "syntax-error"
    summary = "The file could not be read or parsed (a syntax error, an undecodable byte, a missing path), so no rule ran on it"
    stage = "parse"
    doc = """
    ## What it does
    Reports a file that is not valid Python: a syntax error, an indentation
    error, or a byte that is not valid in the file's encoding (UTF-8 unless a
    PEP 263 coding cookie or a BOM says otherwise). The diagnostic is placed at
    the offending token or byte, `line:column`, with CPython's own wording
    (`Could not parse file: '(' was never closed`, `Could not parse file:
    invalid utf-8 byte 0xff; the file must be valid utf-8`).

    A path that cannot be read at all — named on the command line but not
    there, or a file or folder that may not be read — is one JF000 at its
    line 1, column 1 (`Could not read path: No such file or directory`,
    `Could not read folder: Permission denied`; ruff reports these as E902),
    and the run goes on with the other paths.

    Every file the command line selects is parsed, including files that never
    mention JAX (those are checked with CPython's parser only, to an AST: no rule
    needs more of them). Nothing is compiled to bytecode or run.

    The grammar is the project's Python: `target-version` (ruff's spelling,
    `"py312"`), by default from `requires-python`. Code valid for that version
    is never JF000, even where the Python running jaxfuse-lint cannot parse it
    (`f"{d["k"]}"` in a `requires-python = ">=3.12"` project linted on 3.11:
    libcst's parser reads it); where no parser at hand reads the target's
    grammar, a file they cannot parse is said to be not checked, not reported
    as a syntax error. In a notebook, a cell that does not parse is reported
    (`Could not parse this cell ...`) and left out alone; the other cells are
    checked.

    ## Why is this bad?
    No rule can run on a file that does not parse, so a file with a syntax
    error would otherwise pass silently. Python itself would reject it on
    import.

    ## Known problems
    Errors that CPython raises only when compiling, after parsing (`return`
    outside a function, `nonlocal` at module level), are not reported.
    JF000 is always reported: it cannot be deselected or suppressed with
    `# noqa`, since a file that does not parse cannot be checked at all.

    ## Example
    ```python
    def f(x:
        return x
    ```

    ## Use instead
    ```python
    def f(x):
        return x
    ```

    ## Fix safety
    No automatic fix: what the code was meant to say is not known.
    """
    backends = (
        Claim(
            "The file is not valid Python (or not valid in its declared encoding)",
            gpu=Evidence(True, "Python's own parser decides it, before JAX or any backend is involved"),
            cpu=Evidence(True, "Python's own parser decides it, before JAX or any backend is involved"),
            tpu=Evidence(True, "Python's own parser decides it, before JAX or any backend is involved"),
        ),
    )
    valid = (
        "def f(x):\n    return x\n",
    )
    invalid = (
        "def f(x:\n    return x\n",
        "import jax\n\n\n@jax.jit\ndef f(x):\n    return (x,\n",
    )

    def check(self, model, settings) -> Iterator[Violation]:
        # Never called (stage "parse"): a file that reaches a model has parsed.
        return iter(())


RULE = SyntaxErrorRule
