"""JF901 unused-noqa: reported by the engine from the suppression comments (noqa.unused_directives)."""
from __future__ import annotations

from typing import Iterator

from jaxfuse_lint.rules.base import Rule, Violation
from jaxfuse_lint.core.targets import Claim, Evidence


class UnusedNoqa(Rule):
    code = "JF901"
    name = "unused-noqa"
    summary = "A `# noqa: JFxxx` that suppresses nothing (opt-in: `--extend-select JF901`)"
    fixable = "always"
    stage = "noqa"
    default_enabled = False
    doc = """
    ## What it does
    Flags a `# noqa: JF...` directive that suppressed nothing on its line, and
    jaxfuse-lint codes in a directive that name no rule (ruff's RUF100). It
    is not selected by the default `JF`: select it by name (`--extend-select
    JF901`, `extend-select = ["JF901"]`, `JF9`) or with `ALL`.

    ## Why is this bad?
    A suppression outlives the code it was written for. Once the finding is
    gone (the code was fixed, or a rule got more precise), the comment hides
    the next real finding on that line without anyone noticing.

    ## Known problems
    Only jaxfuse-lint's own codes are considered: other tools' codes (`E501`,
    `F401`) and blanket `# noqa` comments, which other linters may need, are
    never reported or removed. A code is reported only when every rule it
    names was enabled for the file in this run (a code for a rule you did not
    select may be needed by another configuration). Files that never mention
    JAX are not analysed, so their directives are not checked. File-level
    `# jaxfuse-lint: noqa` comments are not checked.

    ## Example
    ```python
    import jax.numpy as jnp

    def total(x):
        return jnp.sum(x)  # noqa: JF101
    ```

    ## Use instead
    ```python
    import jax.numpy as jnp

    def total(x):
        return jnp.sum(x)
    ```

    ## Fix safety
    Safe: only the comment changes. The unused codes are taken out of the
    directive; when none is left the whole `# noqa: ...` goes (other codes and
    any other comment on the line stay).
    """
    backends = (
        Claim(
            "The `# noqa` directive suppresses no diagnostic of the selected rules",
            gpu=Evidence(True, "a fact about this tool's own diagnostics for the configured target"),
            cpu=Evidence(True, "a fact about this tool's own diagnostics for the configured target"),
            tpu=Evidence(True, "a fact about this tool's own diagnostics for the configured target"),
        ),
    )
    valid = (
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n"
        "    return jnp.sum(jnp.stack([x, x], axis=-1), axis=-1)  # noqa: JF101\n",
        "import jax\nx = 1  # noqa: E501\ny = 2  # noqa\n",
    )
    invalid = (
        "import jax.numpy as jnp\n\n\ndef total(x):\n    return jnp.sum(x)  # noqa: JF101\n",
        "import jax\nx = 1  # noqa: JF777, E501\n",
    )

    def check(self, model, settings) -> Iterator[Violation]:
        # Never called (stage "noqa"): the engine reports it after the other rules ran.
        return iter(())


RULE = UnusedNoqa
