"""JF502 large-captured-constant (measured: needs a profile from `jaxfuse-lint record`)."""
from __future__ import annotations

from typing import Iterator

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.premises import recorded
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.rules.measured import nbytes
from jaxfuse_lint.core.targets import recorded_claim


class LargeCapturedConstant(Rule):
    code = "JF502"
    premises = ("measured",)
    name = "large-captured-constant"
    summary = "A traced program captured a constant larger than `constant-bytes-max` on this line (measured)"
    fixable = "never"
    measured = True
    doc = """
    ## What it does
    With a runtime profile (`jaxfuse-lint record -- COMMAND`), flags the line
    where a jit-traced function used an array it closed over — a NumPy array or a
    concrete `jax.Array` from outside the trace — that the run captured as a
    constant of the compiled program, when it is larger than `constant-bytes-max`
    (default 1 MiB). The message gives its size and shape and the entry point
    whose program holds it. Without a profile it reports nothing.

    The finding is on the line that captured the array: the read of the
    closed-over variable, global or attribute that pulled it into the trace
    (`F = lambda params: TABLE`), once per constant, never on a helper's line
    where the array is a parameter. A constant made while tracing (no such
    read) is named on the entry point's own line that uses it.

    ## Why is this bad?
    A captured array becomes part of the program: XLA may fold it into the
    executable (long compiles, large executables, host memory per compiled
    variant) and it is re-embedded for every new shape or static value the
    function is compiled for. JF201/JF202 find some of these statically; the
    recorded run finds the ones hidden behind attributes, globals bound at run
    time and other modules, with their real sizes. JAX's
    `jax_captured_constants_warn_bytes` warns at run time without pointing at
    the line.

    ## Known problems
    A capture is found where traced code reads the array directly from a
    closure, a global or an attribute of a parameter (`self.table`); one
    reached through a container or a deeper attribute chain is named on the
    entry point's line that uses it. The finding refers to the recorded text:
    once the file changes, its facts are ignored until the next `record`.

    ## Example
    ```python
    TABLE = np.random.rand(1024, 1024)

    @jax.jit
    def f(x):
        return x @ TABLE          # 8 MiB captured as a constant
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x, table):
        return x @ table          # an argument: not part of the program

    f(x, jnp.asarray(TABLE))
    ```

    ## Fix safety
    No automatic fix: turning a captured value into an argument changes every
    call site.
    """
    backends = (recorded_claim("The compiled program carried a folded constant of this size in the recorded run"),)
    valid = (
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x, table):\n    return x @ table\n\n\n"
        "f(jnp.ones((4, 4)), jnp.ones((4, 4)))\n",
    )
    invalid = (
        "import jax\nimport numpy as np\n\nTABLE = np.ones((1024, 300))\n\n\n"
        "@jax.jit\ndef f(x):\n    return x @ TABLE\n\n\nf(np.ones((4, 1024)))\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        runtime = model.runtime
        if runtime is None:
            return
        limit = settings.constant_bytes_max
        # One finding per constant (the facts hold one record per line naming it), the largest first.
        constants: dict[str, list[dict]] = {}
        for const in runtime.facts.constants:
            constants.setdefault(str(const.get("constant") or id(const)), []).append(const)
        reported: set[int] = set()
        for refs in sorted(constants.values(), key=lambda r: -int(r[0].get("bytes", 0))):
            const = refs[0]
            size = int(const.get("bytes", 0))
            lines = sorted({r["line"] for r in refs if isinstance(r.get("line"), int)})
            if size <= limit or not lines or reported & set(lines):
                continue  # (the same array captured by another entry's program: named once)
            node = runtime.statement_at(model, lines[0])
            if node is None:
                continue
            reported.update(lines)
            entry = (const.get("entry_qualname") or "?").replace(".<locals>", "")
            api = const.get("api", "jax.jit")
            where = {"captures": "read here from outside the trace", "entry_lines": "used from this line"}.get(
                const.get("role"), "here")
            also = f" (and on line{'s' if len(lines) > 2 else ''} {', '.join(map(str, lines[1:]))})" if len(lines) > 1 else ""
            yield Violation(node, message(
                f"the program of `{api}({entry})` captured a {nbytes(size)} constant ({const.get('shape', '?')}) "
                f"{where}{also}, above `constant-bytes-max` = {nbytes(limit)}: pass the array as an argument "
                f"instead of closing over it"), data={"bytes": size},
                premises=(recorded("measured", f"{nbytes(size)} constant",
                                   f"captured by `{entry}` in a recorded run ({runtime.profile_path or 'profile'})"),))


RULE = LargeCapturedConstant
