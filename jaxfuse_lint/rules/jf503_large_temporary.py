"""JF503 large-temporary (measured: needs a profile from `jaxfuse-lint record`)."""
from __future__ import annotations

from typing import Iterator

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.premises import recorded
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.rules.measured import entry_names, nbytes
from jaxfuse_lint.core.targets import recorded_claim


class LargeTemporary(Rule):
    code = "JF503"
    premises = ("measured",)
    name = "large-temporary"
    summary = "A compiled program materialises a temporary larger than `temporary-bytes-max` for this line (measured)"
    fixable = "never"
    measured = True
    doc = """
    ## What it does
    With a runtime profile (`jaxfuse-lint record -- COMMAND`), flags a source
    line whose operations write a temporary buffer larger than
    `temporary-bytes-max` (default 16 MiB) in a program the run compiled: a
    kernel's output that is neither an argument, an output nor a constant, and
    so is written to device memory and read back by a later kernel. The
    message gives the bytes, the number of kernels the line's operations landed
    in and the entry point. Without a profile it reports nothing.

    ## Why is this bad?
    A temporary is a fusion boundary made visible: the producer kernel writes
    the whole array to memory and a consumer reads it again, where a fused
    program would have kept the values in registers. On a GPU the traffic, not
    the arithmetic, usually sets the run time, and large temporaries also set
    the peak memory. The line is where to look: a reduction over a small axis
    (JF101), a mesh built with `meshgrid` (JF102), an FFT over the wrong axes
    (JF104), or work that a later line only partly uses.

    ## Known problems
    The recorder reads the compiled program's buffer sizes from the kernels that
    write them (an estimate that counts a buffer once per kernel output; XLA may
    reuse memory between them). A line shared by several kernels is given the
    temporaries of each. Only lines that are the innermost source of a kernel's
    operations are flagged, not the lines that call them. The finding refers to
    the recorded text: once the file changes, its facts are ignored until the
    next `record`.

    ## Example
    ```python
    @jax.jit
    def f(x):                     # x: f32[1048576, 3]
        d = jnp.sum(x * x, axis=-1)  # 12 MiB temporary for x * x, then a reduction kernel
        return jnp.sqrt(d)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        d = x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1] + x[:, 2] * x[:, 2]  # one fused kernel
        return jnp.sqrt(d)
    ```

    ## Fix safety
    No automatic fix here; the rules that explain the line (JF101, JF102, JF104)
    carry their own fixes.
    """
    backends = (recorded_claim("The compiled program allocated a temporary of this size for this line in the recorded run"),)
    valid = (
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    return jnp.sin(x) + 1\n\n\n"
        "f(jnp.ones(8))\n",
    )
    invalid = (
        "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n"
        "    s = jnp.sin(x) * 2.0\n    return jnp.cumsum(s, axis=0) + jnp.cumsum(s, axis=1)\n\n\n"
        "f(jnp.ones((1 << 16, 64)))\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        runtime = model.runtime
        if runtime is None:
            return
        limit = settings.temporary_bytes_max
        names = entry_names(model)
        best: dict[int, dict] = {}
        for item in runtime.facts.lines:
            size = int(item.get("temp_bytes", 0))
            line = item.get("line")
            if size <= limit or not item.get("own") or not isinstance(line, int):
                continue
            if line not in best or size > int(best[line].get("temp_bytes", 0)):
                best[line] = item
        for line, item in sorted(best.items()):
            node = runtime.statement_at(model, line)
            if node is None:
                continue
            size = int(item["temp_bytes"])
            kernels = int(item.get("kernels", 0))
            entry = names.get(item.get("entry") or "", "a jitted program")
            yield Violation(node, message(
                f"this line writes {nbytes(size)} of temporaries in the program of {entry} "
                f"({kernels} kernel{'s' if kernels != 1 else ''}), above `temporary-bytes-max` = {nbytes(limit)}: "
                f"its values go to device memory and back instead of staying in one fused kernel"),
                data={"bytes": size}, premises=(recorded("measured", f"{nbytes(size)} of temporaries", f"in the program of {entry}, in a recorded run ({runtime.profile_path or 'profile'})"),))


RULE = LargeTemporary
