"""JF405 traced-op-on-static-shape."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.scopes import Scope, walk
from jaxfuse_lint.model.shape_arithmetic import shape_arithmetic, sink_arguments
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.premises import proven
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import Claim, tracing


class TracedOpOnStaticShape(Rule):
    code = "JF405"
    premises = ("runs-traced", "needs-static")
    name = "traced-op-on-static-shape"
    summary = "`jnp` arithmetic on static shapes or values used where a Python int is required (fails under jit)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, in a staged function (`jax.jit` and friends), a `jax.numpy`/`lax`
    computation on static values — shapes (`jnp.array(x.shape).prod()`,
    `jnp.prod(x.shape)`, `jnp.array(x.shape)[0]`), sizes and Python numbers
    (`jnp.ceil(T / dt)` with `T` a static attribute or default), a static
    argument's fields, literals (`jnp.arange(5)`) — whose result is used where
    a static Python int is required: a `reshape`, the shape of
    `zeros`/`ones`/`full`/`empty`/`broadcast_to` (`jnp` or NumPy), the bounds
    of `arange`/`range` and of a slice, `linspace`'s `num`, the indices of
    `split`, `int()`/`float()`, the sizes of `lax.dynamic_slice`/`lax.iota`,
    the `shape` of `jax.random` draws, the count of `random.split(key, n)`,
    and the index into a Python tuple, list, dict or NumPy array
    (`strides[i]` with `for i in jnp.arange(5)`). It follows a local variable
    to the one assignment (or the one `for` loop) that reaches it
    (`depth = depth.astype(int)` reads the one before), through arithmetic and
    array methods (`.astype`, `.sum`), and reads a comprehension of shape
    values (`jnp.array([b.shape[0] for b in bs])`) as static input. The
    message names what computes it on the host: `math.prod`, Python's
    `sum`/`max`/`min`, `np.<name>` for other jnp functions (`np.log2`,
    `np.cumsum`), Python arithmetic for the rest.

    A value is static only on positive evidence (model/shape_arithmetic.py
    `python_value`): a literal, a shape read (`x.shape`, `len(x)`), a
    parameter the trace marks static and what is read from it, a name, a
    parameter or an instance attribute that every assignment (every call of
    the module, defaults included) gives such a value, and Python arithmetic,
    builtins, `math` and NumPy of those. An attribute of unknown origin (a
    Module's parameters) is not one.

    One problem, one code: `int()`, `float()` and `range()` of such a value are
    this rule's findings, not JF402's (that rule keeps the conversions of
    values computed from traced data, and Python control flow).

    ## Premises
    `runs-traced(f)`, proven by the route that traces `f` (as for JF402), and
    `needs-static(value)`, proven by the sink: the argument that takes only a
    Python int. That the `jnp` result is a tracer needs no premise of its own:
    under a trace every `jnp` result is one (omnistaging), whatever its inputs.

    ## Why is this bad?
    `x.shape` is a static tuple of ints (and `T / dt` of Python floats a
    Python float), but `jnp` operations inside a traced function return
    tracers, even on static inputs. A shape argument (or an index into a
    Python sequence, or `int()`) must be concrete, so the call fails with a `TypeError`/`ConcretizationTypeError`
    while tracing (the notes' `x.reshape(jnp.array(x.shape).prod())`). Shape
    arithmetic belongs to the host: `math.prod`, `np.prod` or plain Python.

    ## Known problems
    The same `jnp` arithmetic used as an array (`x.sum() /
    jnp.prod(jnp.array(x.shape))`) works under `jit` and is not flagged. A
    shape computed in another function and returned is not followed, nor is
    a value passed into another function (through `jnp.vectorize`, say)
    before it reaches the sink. Eager
    code (no `jit`, or only `grad`/`vmap`) gets concrete arrays from `jnp`,
    which shape arguments accept, so it is not checked. As for JF402, the code
    must be traced on a route that runs (model/evidence.py): host code after a
    guard that leaves a trace, and a function whose every traced call is inside
    a `try` that catches the error (a demonstration), are not reported; a route
    whose only call does not match the signature puts the finding in the
    preview tier.

    ## Example
    ```python
    @jax.jit
    def flatten(x):
        return x.reshape(jnp.array(x.shape).prod())
    ```

    ## Use instead
    ```python
    import math

    @jax.jit
    def flatten(x):
        return x.reshape(math.prod(x.shape))
    ```

    ## Fix safety
    Safe for the product of a static shape — `jnp.prod(S)`,
    `jnp.prod(jnp.array(S))`, `jnp.array(S).prod()`, with `S` a shape tuple —
    which becomes `math.prod(S)` (`import math` is added when missing): the
    product of Python ints is the exact int the sink needs. Dtypes: `jnp.prod`
    gave a strongly typed int32 (int64 with x64) that wraps past 2**31, and
    `math.prod` gives an exact, weakly typed Python int (`int8_array * n` stays
    int8 where it was int32). So the fix is safe when the product only reaches
    places that need a Python int, or one of them always runs when the function
    does — either way the original failed at trace time for every input. A
    variable that is also used in arithmetic where the original could have
    worked (after a branch, say) gets an unsafe fix. When the value goes through a variable that is also used
    as an array (`n.astype(...)`, `n[0]`), or the call has other arguments
    (`axis`, `dtype`), there is no fix.
    """
    backends = (
        Claim(
            "`jnp` arithmetic on shapes returns tracers, which shape arguments reject while tracing",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax, math\n@jax.jit\ndef f(x):\n    return x.reshape(math.prod(x.shape))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x.sum() / jnp.prod(jnp.array(x.shape))\n",
        "import jax.numpy as jnp\ndef host(x):\n    return x.reshape(jnp.array(x.shape).prod())\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x.reshape(jnp.array(x.shape).prod())\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    n = jnp.prod(jnp.array(x.shape[1:]))\n"
        "    return x.reshape(x.shape[0], n)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        finder = shape_arithmetic(model)
        shown = evidence(model)
        reported: set[cst.CSTNode] = set()
        for fn in model.traced.reasons:
            if not st.is_staged(fn):
                continue
            for sink_name, sink_node, arg in sink_arguments(model, fn):
                for node, owner, via in finder.find(arg, fn):
                    if node in reported:
                        continue
                    # The sink runs under a trace on a route that runs (model/evidence.py).
                    runs = shown.premise(fn, sink_node, raises=True)
                    if runs is None:
                        continue
                    reported.add(node)
                    through = f" (through `{via[0].value}`)" if via else ""
                    yield Violation(
                        node,
                        message(
                            f"`{code_of(model, node)}` computes with `jnp` on static values, so it is a tracer "
                            f"while `{fn.display_name}` is traced (",
                            *reason_parts(model.trace_reason(fn)),
                            f"), but {sink_name} on line ", LineOf(sink_node),
                            f" needs a Python int{through}: this fails at trace time; {_advice(model, node, fn)}",
                        ),
                        data={"owner": owner, "via": via},
                        premises=(runs, proven("needs-static", f"`{code_of(model, node, 40)}`", "static-sink",
                                               f"{sink_name} on line ", LineOf(sink_node), " takes only a Python int")),
                    )


def _reduction(model: SemanticModel, node: cst.BaseExpression, scope: Scope) -> str | None:
    """The reduction a jnp-on-shape expression ends in (`prod`, `sum`...), if any."""
    while isinstance(node, cst.Subscript):
        node = node.value
    if not isinstance(node, cst.Call):
        return None
    qn = model.qn(node.func, scope)
    last = qn.rsplit(".", 1)[-1] if qn is not None else (
        node.func.attr.value if isinstance(node.func, cst.Attribute) else "")
    return last if last in ("prod", "product", "sum", "max", "min") else None


def _advice(model: SemanticModel, node: cst.BaseExpression, scope: Scope) -> str:
    """What to write instead, fitted to the computation: `math.prod` for a product of sizes,
    plain Python arithmetic on the shape for everything else (`x.shape[0] // 2`)."""
    which = _reduction(model, node, scope)
    if which in ("prod", "product"):
        return "use `math.prod(...)` on the shape (a Python int)"
    if which in ("sum", "max", "min"):
        return f"use Python's `{which}(...)` on the shape (a Python int)"
    call = _outer_call(node)
    qn = model.qn(call.func, scope) if call is not None else None
    if qn is not None and qn.startswith("jax.numpy.") and qn.count(".") == 2 and qn.rsplit(".", 1)[1] not in (
            _PYTHON_ARITHMETIC):
        # `jnp.log2(n)`, `jnp.cumsum(jnp.array(sizes))`: NumPy computes it at trace time, on the host
        inner = any(isinstance(n, cst.Call) and n is not call and (model.qn(n.func, scope) or "").startswith(
            "jax.numpy.") for n in walk(call))
        inputs = " on NumPy inputs" if inner else ""
        return f"use `np.{qn.rsplit('.', 1)[1]}(...)`{inputs} (NumPy computes on the static values while tracing)"
    shown = _shape_read(node)
    of = f" (`{code_of(model, shown)}` is already one)" if shown is not None else ""
    return f"compute it with Python arithmetic (`//`, `*`, `+`) on the shape values, which stay Python ints{of}"


# jnp functions that Python's own operators and builtins compute on ints (`//`, `max(...)`).
_PYTHON_ARITHMETIC = frozenset({"array", "asarray", "add", "subtract", "multiply", "divide", "true_divide",
                                "floor_divide", "mod", "remainder", "power", "negative", "positive", "abs",
                                "absolute", "minimum", "maximum", "int32", "int64", "float32"})


def _outer_call(node: cst.CSTNode) -> cst.Call | None:
    """The call a jnp-on-shape expression is (through indexing: `jnp.cumsum(s)[0]`)."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node if isinstance(node, cst.Call) else None


def _shape_read(node: cst.CSTNode) -> cst.BaseExpression | None:
    """The first `x.shape[i]` read inside node (an int; `x.shape` itself is a tuple)."""
    for n in walk(node):
        if isinstance(n, cst.Subscript) and isinstance(n.value, cst.Attribute) and n.value.attr.value == "shape" \
                and len(n.slice) == 1 and isinstance(n.slice[0].slice, cst.Index):
            return n
    return None


RULE = TracedOpOnStaticShape
