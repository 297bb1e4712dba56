"""JF501 recompiled-at-run-time (measured: needs a profile from `jaxfuse-lint record`)."""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.premises import recorded
from jaxfuse_lint.rules.base import Rule, Violation, message
from jaxfuse_lint.rules.measured import matched_entries, name_node
from jaxfuse_lint.core.targets import recorded_claim

_ADVICE = {
    "static": "a static argument that takes many values recompiles for each: pass it as a traced array "
              "argument if it does not change the program's structure",
    "shape": "each new shape compiles a new program: pad or bucket inputs to a few shapes",
    "shape+static": "each new shape or static value compiles a new program: bucket shapes and trace "
                    "values that only parameterise the arithmetic",
    "fresh-callable": "a new function object is jitted each time: create the jitted function once "
                      "(see JF301/JF302)",
    "other": "the same signature was compiled again: the jitted object was re-created or its cache evicted",
}


def _describe(entry: dict[str, Any], compilations: list[dict[str, Any]]) -> tuple[str, str]:
    from jaxfuse_lint.core.profile import signature_text

    kinds = Counter(c.get("kind", "other") for c in compilations if c.get("kind") != "first")
    main = kinds.most_common(1)[0][0] if kinds else "other"
    sigs = entry.get("signatures", [])
    shown = []
    for c in compilations:
        index = c.get("signature")
        if isinstance(index, int) and 0 <= index < len(sigs):
            text = signature_text(sigs[index], limit=4)
            if text not in shown:
                shown.append(text)
    labels = {"static": "for a new static value", "shape": "for a new shape", "shape+static": "for a new shape "
              "and static value", "fresh-callable": "of a fresh callable", "other": "of a signature already compiled"}
    parts = [f"{n} {labels.get(k, k)}" for k, n in kinds.most_common()]
    listed = "; ".join(f"({s})" for s in shown[:5]) + ("; …" if len(shown) > 5 else "")
    return f"recompiled {', '.join(parts)}, signatures {listed}", _ADVICE[main]


def _test_case(where: Any) -> str | None:
    """The pytest test (node id, with its parameters) a compilation happened in, else None."""
    return where if isinstance(where, str) and "::" in where else None


class RecompiledAtRunTime(Rule):
    code = "JF501"
    premises = ("measured",)
    name = "recompiled-at-run-time"
    summary = "A jit entry point compiled more than `max-compilations` times in one recorded process (measured)"
    fixable = "never"
    measured = True
    doc = """
    ## What it does
    With a runtime profile (`jaxfuse-lint record -- COMMAND`, then `check`, which
    reads `.jaxfuse_lint/profile.json`), flags the definition of a jit entry point
    that one recorded process compiled more than `max-compilations` times
    (default 3), and says why each recompilation happened: a new static argument
    value, a new argument shape or dtype, or a fresh callable (a new function
    object with a signature already compiled). Without a profile it reports
    nothing.

    ## Why is this bad?
    Every compilation traces the Python function again and runs XLA's optimiser:
    milliseconds to minutes, on every new key. A function compiled once per
    training step, per value of a loop counter passed as `static_argnums`, or
    per batch size spends its time in the compiler, and static analysis cannot
    see it: the values and shapes only exist at run time. JAX's
    `jax_log_compiles` prints the compilations, one per line, but does not point
    back at the code or group them by cause.

    ## Known problems
    Counts are per process and, under pytest, per test: a suite that runs a
    function on several shapes from different tests or parametrized cases
    (`@pytest.mark.parametrize("n", [8, 16, 32, 64])`) chose those inputs, and
    is not reported. Within one test, new shapes are a sweep the test chose
    (a polymorphic function called on each of its signatures) and are not
    counted either; what is counted there is waste: a fresh callable, a static
    value that churns, a signature compiled again. Outside a test (a script, a
    training run) every compilation counts. Record a
    realistic run (the training script, a benchmark) to measure what users
    see. The finding refers to the recorded text: once the file changes, its
    facts are ignored until the next `record`.

    ## Example
    ```python
    @partial(jax.jit, static_argnums=1)
    def scale(x, n):
        return x * n

    for n in range(10):
        scale(x, n)   # 10 compilations
    ```

    ## Use instead
    ```python
    @jax.jit
    def scale(x, n):
        return x * n

    for n in range(10):
        scale(x, n)   # 1 compilation: n is traced
    ```

    ## Fix safety
    No automatic fix: whether a static argument can be traced depends on how
    the function uses it.
    """
    backends = (recorded_claim("The entry point compiled this many times in the recorded run"),)
    valid = (
        "import jax\n\n@jax.jit\ndef f(x):\n    return x + 1\n\nf(jax.numpy.ones(3))\n",
    )
    invalid = (
        "import functools\nimport jax\nimport jax.numpy as jnp\n\n\n"
        "@functools.partial(jax.jit, static_argnums=1)\ndef scale(x, n):\n    return x * n\n\n\n"
        "for n in range(5):\n    scale(jnp.ones(3), n)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        limit = settings.max_compilations
        for fn, entry in matched_entries(model):
            # Counted per process and, in a test run, per test: a suite that calls the function on
            # several shapes from different tests or parametrized cases chose those inputs (a
            # deliberate sweep); recompiling within one test is what the code does.
            by_run: dict[Any, list[dict[str, Any]]] = {}
            for c in entry.get("compilations", []):
                by_run.setdefault((c.get("pid"), _test_case(c.get("where"))), []).append(c)
            if not by_run:
                continue
            # In a test, new shapes are inputs the test chose (a sweep of a polymorphic function's
            # signatures): not counted. What counts is waste: a fresh callable, a static value that
            # churns, a signature compiled again; outside a test every compilation does.
            counted = {run: [c for c in comps if run[1] is None or c.get("kind") != "shape"]
                       for run, comps in by_run.items()}
            run = max(counted, key=lambda r: len(counted[r]))
            worst, swept = counted[run], len(by_run[run]) - len(counted[run])
            if len(worst) <= limit:
                continue
            where = next((c.get("where") for c in worst if c.get("where")), None)
            causes, advice = _describe(entry, worst)
            sweep = (f" ({swept} more for new shapes, a sweep the test chose, not counted)" if swept else "")
            yield Violation(name_node(fn), message(
                f"`{fn.display_name}` was compiled {len(worst)} times in one recorded run"
                f"{f' ({where})' if where else ''}{sweep}, more than `max-compilations` = {limit}: {causes}; {advice}"),
                data={"compilations": len(worst)}, premises=(recorded("measured", f"`{fn.display_name}`", f"{len(worst)} compilations in one recorded run ({model.runtime.profile_path or 'profile'})"),))


RULE = RecompiledAtRunTime
