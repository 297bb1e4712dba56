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
    message gives the bytes, the kernels the line's operations landed in (by
    name), the entry point, and the backend that measured it (the recorded
    run's: often a CPU). Lines whose operations share kernels are one finding,
    on the first of them, naming the lines and their kernels. Without a profile
    it reports nothing; `check --confirm` compiles the recorded signatures for
    the configured target and keeps the finding with the target's figure, or
    drops it.

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
    temporaries of each; lines sharing kernels are reported together with the
    largest of their figures. Only lines that are the innermost source of a kernel's
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
        best: dict[tuple[str, int], dict] = {}
        for item in runtime.facts.lines:
            size = int(item.get("temp_bytes", 0))
            line = item.get("line")
            if size <= limit or not item.get("own") or not isinstance(line, int):
                continue
            key = (str(item.get("entry") or ""), line)
            if key not in best or size > int(best[key].get("temp_bytes", 0)):
                best[key] = item
        reported: set[int] = set()
        for group in _sharing_groups(list(best.values())):
            lines = sorted({item["line"] for item in group})
            if reported & set(lines):
                continue  # the same lines in another entry's program: named once, for the largest
            node = runtime.statement_at(model, lines[0])
            if node is None:
                continue
            reported.update(lines)
            top = max(group, key=lambda item: int(item.get("temp_bytes", 0)))
            size = int(top["temp_bytes"])
            kernel_names = sorted({k for item in group for k in item.get("kernel_names", ())})
            kernels = len(kernel_names) or int(top.get("kernels", 0))
            entry = names.get(top.get("entry") or "", "a jitted program")
            backend = _backend_name(top, runtime)
            shown = ", ".join(kernel_names[:4]) + (", …" if len(kernel_names) > 4 else "")
            kernel_text = f"{kernels} kernel{'s' if kernels != 1 else ''}" + (f": {shown}" if shown else "")
            if len(lines) > 1:
                text = (f"lines {_line_list(lines)} share {kernel_text}, which write {nbytes(size)} of temporaries "
                        f"in the program of {entry}")
            else:
                text = f"this line writes {nbytes(size)} of temporaries in the program of {entry} ({kernel_text})"
            text += (f", measured on {backend} in the recorded run, above `temporary-bytes-max` = {nbytes(limit)}: "
                     f"{'their' if len(lines) > 1 else 'its'} values go to device memory and back instead of "
                     f"staying in one fused kernel")
            yield Violation(node, message(text), data={"bytes": size, "lines": lines, "backend": backend},
                            premises=(recorded("measured", f"{nbytes(size)} of temporaries",
                                               f"in the program of {entry}, compiled for {backend} in a recorded "
                                               f"run ({runtime.profile_path or 'profile'})"),))


def _sharing_groups(items: list[dict]) -> list[list[dict]]:
    """The line records grouped where their lines share a kernel of one program (by the kernels'
    names; in older profiles without them, lines of one entry with the same bytes and kernel
    count), each group once, in line order."""
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[tuple, int] = {}
    for i, item in enumerate(items):
        entry = str(item.get("entry") or "")
        keys = [(entry, name) for name in item.get("kernel_names", ())] or [
            (entry, "#", int(item.get("temp_bytes", 0)), int(item.get("kernels", 0)))]
        for key in keys:
            if key in owner:
                parent[find(i)] = find(owner[key])
            else:
                owner[key] = i
    groups: dict[int, list[dict]] = {}
    for i, item in enumerate(items):
        groups.setdefault(find(i), []).append(item)
    return sorted(groups.values(), key=lambda g: (-max(int(x.get("temp_bytes", 0)) for x in g),
                                                  min(x["line"] for x in g)))


def _line_list(lines: list[int]) -> str:
    if lines == list(range(lines[0], lines[-1] + 1)):
        return f"{lines[0]}-{lines[-1]}"
    return ", ".join(map(str, lines))


def _backend_name(item: dict, runtime) -> str:
    """The backend the recorded run compiled for (the line's own record, else its entry's signatures)."""
    backend = item.get("backend")
    if not backend:
        for entry in runtime.facts.entries:
            if entry.get("id") == item.get("entry"):
                backend = next((s.get("backend") for s in entry.get("signatures", []) if s.get("backend")), None)
                break
    return {"cpu": "CPU", "gpu": "GPU", "cuda": "GPU", "rocm": "GPU (ROCm)", "tpu": "TPU"}.get(
        str(backend or "").lower(), str(backend or "the recorded backend"))


RULE = LargeTemporary
