"""JF402 python-control-flow-on-traced-value."""
from __future__ import annotations

import re
from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, Scope
from jaxfuse_lint.model.shape_arithmetic import PYTHON_NUMBER_SINKS, static_values_staged
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.staging import own_nodes, staging
from jaxfuse_lint.model.staging_transforms import ACCEPTS_STATIC_ARGNAMES, ACCEPTS_STATIC_ARGNUMS
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.shape_arithmetic import node_sinks
from jaxfuse_lint.model.traced_premise import traced_premise
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts, staged_reason
from jaxfuse_lint.core.targets import Claim, tracing

# What each construct needs from its operand, and what to write instead.
_ADVICE = {
    "if": ("`if`", "use `jnp.where(...)` or `lax.cond(...)`"),
    "elif": ("`elif`", "use `jnp.where(...)` or `lax.cond(...)`/`lax.switch(...)`"),
    "while": ("`while`", "use `lax.while_loop(...)` (or `lax.fori_loop(...)`)"),
    "assert": ("`assert`", "use `checkify.check(...)` (jax.experimental.checkify) or check the value "
                           "outside the traced function"),
    "ifexp": ("the conditional expression", "use `jnp.where(cond, a, b)`"),
    "compif": ("the comprehension's `if`", "use a mask with `jnp.where(...)`"),
    "and": ("`and`", "use `jnp.logical_and(...)` (or `&`)"),
    "or": ("`or`", "use `jnp.logical_or(...)` (or `|`)"),
    "not": ("`not`", "use `jnp.logical_not(...)` (or `~`)"),
    "chain": ("the chained comparison (Python's `and` of its comparisons)",
              "write the comparisons apart and join them with `&` (`(a < x) & (x < b)`)"),
    "bool": ("`bool(...)`", "keep the value an array (`jnp.where`, `lax.cond`)"),
    "int": ("`int(...)`", "keep the value an array (`.astype(jnp.int32)`)"),
    "float": ("`float(...)`", "keep the value an array (`.astype(jnp.float32)`)"),
    "complex": ("`complex(...)`", "keep the value an array (`.astype(jnp.complex64)`)"),
    "range": ("`range(...)`", "use `lax.fori_loop(...)` (or `lax.scan`)"),
    "max": ("`max(...)`", "use `jnp.maximum(...)`"),
    "min": ("`min(...)`", "use `jnp.minimum(...)`"),
    "item": ("`.item()`", "keep the value an array (return or use it as it is)"),
    "shape": ("a size argument", "shapes must be static Python ints under a trace: derive it from static "
                                    "values (`x.shape`, a static argument), or use a fixed maximum size and a mask"),
    "tolist": ("`.tolist()`", "keep the value an array"),
}
# Array methods that return a Python value: on a tracer they raise a concretization error.
_CONVERTING_METHODS = frozenset({"item", "tolist"})
_CONVERSIONS = {"builtins.bool": "bool", "builtins.int": "int", "builtins.float": "float",
                "builtins.complex": "complex", "builtins.range": "range", "builtins.max": "max",
                "builtins.min": "min"}
# Annotations under which a bare `if param:` tests a container or an optional value, not an array.
_CONTAINER_HINT = re.compile(
    r"\b(dict|Dict|Mapping|MutableMapping|list|List|Sequence|tuple|Tuple|set|Set|Iterable|Optional|None|"
    r"Any|PyTree|Pytree|FrozenDict|Params|Callable|str)\b"
)


class PythonControlFlowOnTracedValue(Rule):
    code = "JF402"
    premises = ("runs-traced", "traced")
    name = "python-control-flow-on-traced-value"
    summary = "Python `if`/`while`/`assert`/`and`/`not`/`int()` on a traced value (concretization error)"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in a staged function (one traced by `jax.jit`, `pmap`, `checkpoint`,
    `shard_map`, a lax loop or branch, `vmap`, or called from one), a Python
    construct that needs a concrete Python value from a traced one: the test of
    `if`/`elif`/`while`/`assert`, a conditional expression or a comprehension's
    `if`, the operand of `not` and the left operand of `and`/`or`, and
    `bool()`/`int()`/`float()`/`complex()`/`range()`/`max()`/`min()` and
    `.item()`/`.tolist()` of a traced value, the first comparison of a chain
    (`0 < x < 1` is Python's `(0 < x) and (x < 1)`), and a size argument
    computed from a traced argument (`jnp.zeros((n,))`, `random.randint(key,
    (n,), ...)`, `x.reshape(n, -1)`, `jnp.arange(n)`: shapes must be static;
    `jnp` arithmetic on static shapes used there is JF405's). A value is traced when it is derived from an argument that is
    not static (not in `static_argnums`/`static_argnames`, not a lax loop's
    Python bound) through array operations, or computed by a jax array
    operation in staged code even from no argument at all (`jnp.arange(3)`,
    `jnp.ones(x.shape)`: under a trace every `jax.numpy`/`lax`/`jax.random`
    result is a tracer, except inside `with jax.ensure_compile_time_eval():`;
    so is indexing, comparing or reducing a concrete jax array bound outside
    traced code, `K[0]` of a module-level `K = jnp.linspace(...)`, while
    `K.shape`, `bool(K)` and `float(K)` stay Python values; so is the result of
    a jitted function called in staged code, even with Python inputs, and of a
    NumPy function that hands a tracer to its own method, `np.all(x < 0)`).
    Iterating a traced array (`for v in x:`, known to be an array from its
    annotation, its use — `x.shape`, `x.T`, `x - 1` — or how it was computed,
    `u, s, vh = jnp.linalg.svd(a)` included) binds tracers. Shapes are static: `.shape`,
    `.ndim`, `.dtype`, `.size`, `len()`, `isinstance()` and `is None` tests are
    never flagged. Kinds are flow-sensitive: a read sees only the bindings that
    reach it (per branch, until rebound, around loops), and `isinstance(x, int
    | float | ...)`, `type(x) is int` and `x is None` narrow `x` to a Python
    value in the branch they select (and after an `if` whose other branch
    returns or raises); `isinstance(x, tuple | list | dict)` makes `if x:` a
    container's truthiness.

    Values are followed through containers and objects the code shows: a
    dict's entry under a literal key (a display, `dict(state, step=n)` — the
    keywords override the base — a comprehension, stores `d["k"] = v`), a
    traced dict unpacked into a call (`f(x, **params)` gives the parameters
    it fills its leaves), an attribute of an object built from traced values
    (`self.a1` is what the construction that built `self` was given for `a1`:
    a dataclass-like field of an equinox Module, NamedTuple, flax struct or
    `@dataclass`, or the parameter `__init__` stores; `self` is the receiver
    of the route that runs the method), and a field of a traced record whose
    class the module shows (every field of a `NamedTuple`, every field of a
    flax struct not declared `pytree_node=False`: jit, and a lax loop's
    carry, trace every leaf; the class is read through tuple unpacking and a
    loop's initial carry), and `record._replace(k=v)`.

    Which arguments are traced follows JAX's own rules for the route:
    `static_argnums`/`static_argnames` (flax's `nn.remat`, `nn.checkpoint`
    and `nn.jit` count the Module, `self`, as argument 0); a lax driver passes
    a fixed number of positional arguments, all tracers (`fori_loop`'s index
    and carry, `while_loop`'s carry, `scan`'s carry and slice of `xs` — None
    without `xs` — `cond`'s and `switch`'s operands), and a parameter past
    them holds what a `functools.partial` bound, wherever the partial is built
    (inline, in a variable, on `self` in `__init__`), or its default; a value
    bound by `functools.partial(f, ...)` keeps its kind (a Python literal
    stays static); `vmap`'s `in_axes=None` and flax `nn.scan`'s
    `in_axes=nn.broadcast` pass an argument through unchanged (the call that
    passes it decides); `grad` makes tracers of its `argnums` only; equinox's
    filtered transforms trace only arrays (a parameter annotated as one, or
    passed arrays by every call in the module); a framework Module body
    (`__call__` of a flax, equinox or haiku Module, a `hk.transform`ed
    function) traces its input, not its flags, where the module's calls do
    not show what they pass: a call passing a Python value (a literal,
    `inputs.shape[-2]`, a config field, a default left out) decides over the
    convention. A parameter annotated `str` or `Literal["a", "b"]`, and a
    comparison with a string literal (`mode == "relu"`), are Python options:
    JAX cannot trace a string. jit traces every argument a call passes, by
    position or by keyword alike, and none it leaves to its default: where the
    calls of a jitted function are all in the module, a defaulted or
    keyword-only parameter is traced if one of them passes it, a Python value
    if none does.

    Routes are followed through calls the way Python runs them: a
    `@classmethod` called on its class binds `cls`; every overload of a
    multiple-dispatch function (`plum.dispatch`, a `Dispatcher()` instance,
    `functools.singledispatch` with `@base.register`) is a function a call of
    the name runs; a construction (`C(...)`, `cls(...)`) runs `__init__`,
    a dataclass's `__post_init__` and an equinox Module's `__check_init__`;
    `opt.update(...)` of an optax `GradientTransformation(init, update)` runs
    the function in its `update` slot; the items of a list an object holds
    (`[f(t) for f in self.factors]`) run their `__call__`.

    One problem, one code: `int()`, `float()` and `range()` of a `jnp`
    computation on static values only (`int(jnp.ceil(T / dt))` with `T` and
    `dt` Python numbers: a tracer only because jax staged out what the host
    could compute) are JF405's findings, not this rule's.

    Under an eager differentiating transform (`jax.grad(f)(3.0)`, not jitted)
    the inputs are concrete: `if`, `bool()` and `int()` of the differentiated
    argument see its value and are not flagged, but `float()` and `complex()`
    of a value carrying its tangent (computed from it by arithmetic or a jnp
    function other than `floor`, `sign`, a comparison, `stop_gradient`...)
    raise a concretization error, and are flagged.

    ## Premises
    Each finding states two premises (`--output-format full`, JSON and SARIF
    list them): `runs-traced(f)`, proven by the route that traces `f`, and
    `traced(value)`. `traced` is proven where the code shows the tracer: the
    value flows from an argument a route traces (the message names that
    route), from a jax operation staged out under the trace (omnistaging, a
    jitted call), or from the argument a `grad` differentiates. It is assumed
    where only a framework's convention makes it one (a Module body's input
    the body never uses as an array, and no call shows: the finding is in the
    preview tier, naming the assumption), and for `a and b` (`a or b`) with a
    Python value `a` whose truth the code does not show: the tracer `b` is
    the test's value only where `a` is truthy (falsy); a literal, a flag
    every traced call leaves at the same value, or a test false on every
    tracer (`isinstance(c, float)`) shows it. It is disproved, and nothing is
    reported, where such a value is passed to a `functools.cache`/`lru_cache`
    function (or the function is one): its arguments are hashed, and a tracer
    is unhashable (`TypeError`), so the code is given a Python value there.

    ## Why is this bad?
    Under `jit` the arguments are abstract tracers: they have a shape and a
    dtype but no value. Python control flow has to pick a branch while the
    function is traced, so converting a tracer to a Python bool or int raises
    `TracerBoolConversionError` / `ConcretizationTypeError` (the JIT tutorial's
    `f` with `if x > 0` and `g` with `while i < n`, both under `jax.jit`).

    ## Known problems
    Attributes of a traced argument whose class the module does not show
    (`state.step`, `cfg.flag`) may be static pytree fields (flax
    `pytree_node=False`, `eqx.field(static=True)`), and methods other than
    array methods (`model.is_training()`) may return anything: neither is
    flagged. A bare `if params:` is flagged only when
    `params` looks like an array — not annotated as a container or
    `Optional`, not used as a dict or list (`params["w"]`, `params.items()`,
    `"w" in params`), not passed a tuple or `None` by a caller, not an element
    unpacked from a tuple (`cache, x = carry`); the same holds through `not`,
    `and` and `or` (`assert not deque and not cache` tests the containers;
    `not done and x > 0` is flagged for its comparison); comparisons with an empty
    container (`xs == ()`) are structure, not values. Functions traced
    only by eager transforms (`jax.grad`, `custom_jvp` rules, `equinox`'s
    filtered transforms) see concrete values or static non-arrays and are not
    checked (except `float()`/`complex()` under `grad`, above). Arguments with
    a default value may be left out by callers and stay Python values, so they
    are not treated as traced. Code under a test
    that mentions tracers or concreteness (`if not isinstance(x, core.Tracer)`,
    `if is_concrete(x)`) or inside a `try` that catches the concretization
    error is assumed to know what it does. Under `if FLAG:` where the module
    sets `FLAG` to a literal and functions flip it (`global FLAG` in a context
    manager that switches JAX control flow off for debugging), only the branch
    the module's own value selects is checked.

    A finding needs the code traced on a route that runs (shared with JF403
    and JF405): host code after a guard that refuses or leaves a trace
    (`check_not_tracing(x)`, a helper that raises on `jax.core.Tracer`, `if
    is_jax_tracer(x): return x`) and the `if p is None:` branch of a function
    whose every traced call passes `p` are not checked; a function whose every
    traced call is inside `try:` ... `except ConcretizationTypeError` (or
    `TypeError`, `Exception`, `pytest.raises`) demonstrates the error and is
    not reported; where the only route is a call that does not match the
    signature (a stale script jitting it with the wrong number of arguments,
    here or in another module), the finding is in the preview tier, and so is
    one in a branch that a parameter's default skips (`if do_postprocess:`
    with `do_postprocess=False`, `if mode == "exact":` with `mode="fast"`)
    where no traced call here passes another value.

    ## Example
    ```python
    @jax.jit
    def f(x):
        if x > 0:
            return x
        return 2 * x

    def g(x, n):
        i = 0
        while i < n:
            i += 1
        return x + i

    g_jit = jax.jit(g)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        return jnp.where(x > 0, x, 2 * x)

    g_jit = jax.jit(g, static_argnames=["n"])  # or lax.while_loop / lax.fori_loop
    ```

    ## Fix safety
    The message suggests `static_argnames` only for a parameter the model shows
    holds a Python number, string or bool (annotated `int`/`float`/`bool`/`str`,
    used as `range(n)`, or passed such a literal in the module): an array made
    static raises "Non-hashable static arguments are not supported".
    No automatic fix: whether a value should become static (one compilation per
    value) or the code should use `jnp.where`/`lax.cond`/`lax.while_loop` (both
    branches traced, different shapes not allowed) is a design decision.
    """
    backends = (
        Claim(
            "Python control flow on a traced value fails while tracing (or recompiles for each static value)",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax\nfrom functools import partial\n@partial(jax.jit, static_argnums=(1,))\n"
        "def f(x, flag):\n    if flag:\n        return x * 2\n    return x\n",
        "import jax\n@jax.jit\ndef f(x, y=None):\n    if x.ndim == 2 and x.shape[0] > 3 and y is None:\n"
        "        return x.T\n    return x\n",
        "def host(x, n):\n    while x < n:\n        x += 1\n    return x\n",
        "import jax\n@jax.jit\ndef f(params, x):\n    for k, v in params.items():\n        if k == 'b':\n"
        "            x = x + v\n    return x\n",
        "import jax, jax.numpy as jnp\nfrom functools import partial\n@partial(jax.jit, static_argnames='bins')\n"
        "def f(x, bins):\n    if isinstance(bins, tuple):\n        if bins[0] != 0:\n            x = x - bins[0]\n"
        "    else:\n        bins = jnp.asarray(bins)\n    return x\n",
    )
    invalid = (
        "import jax\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return 2 * x\n",
        "import jax\ndef g(x, n):\n    i = 0\n    while i < n:\n        i += 1\n    return x + i\n"
        "g_jit = jax.jit(g)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    n = int(jnp.sum(x))\n    return x * n\n",
        "import jax, jax.numpy as jnp\nfrom functools import partial\n@partial(jax.jit, static_argnames='n')\n"
        "def f(x, n):\n    n = jnp.sum(x) * n\n    if n > 0:\n        x = -x\n    return x\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        checker = _Checker(model)
        for fn in model.traced.reasons:
            if st.is_staged(fn, batching=True):
                yield from checker.function(fn)
            else:
                yield from checker.differentiated(fn)


class _Checker:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.staging = staging(model)
        self.values = staged_values(model)
        self.evidence = evidence(model)
        self.premise = traced_premise(model)

    def traced(self, expr: cst.CSTNode, scope: Scope) -> bool:
        return self.values.kind(expr, scope) is Kind.TRACED

    def function(self, fn: Function) -> Iterator[Violation]:
        flagged: set[cst.CSTNode] = set()
        labels: dict[int, str] = {}
        for node in own_nodes(fn):
            contexts = list(self._contexts(node, fn))
            if isinstance(node, cst.Call) and self.model.qn(node.func, fn) not in _CONVERSIONS:
                for label, _, arg in node_sinks(self.model, node, fn):
                    contexts.append(("shape", arg, False))  # `jnp.zeros((n,))`, `random.randint(k, (n,), ...)`
                    labels[id(arg)] = label
            for context, expr, truthiness in contexts:
                probe = _first_pair_operands(expr) if context == "chain" else (expr,)
                probe = next((p for p in probe if self.traced(p, fn)), None)
                if probe is None:
                    continue
                if truthiness and not self._truthiness_is_of_an_array(expr, fn):
                    continue
                if expr in flagged or self._inside_flagged(expr, flagged, fn) or self._off_by_default_flag(expr, fn):
                    continue
                # The code runs under a trace on a route that runs (model/evidence.py): not host code
                # behind a tracer guard, not a dead `is None` branch, not a demonstration of the error.
                if context == "shape" and not self.roots(probe, fn):
                    continue  # `jnp.prod(x.shape)` as a shape: static shape arithmetic, JF405's
                runs = self.evidence.premise(fn, expr, raises=True)
                traced = self.premise.premise(probe, fn)
                if runs is None or traced is None:
                    continue
                if traced.inference == "omnistaging" and context in PYTHON_NUMBER_SINKS and \
                        static_values_staged(self.model, fn, expr) is not None:
                    # Traced only because `jnp` staged out static values (`int(jnp.ceil(T / dt))`):
                    # one problem, one code: JF405's (jnp on static values where a Python int is needed).
                    continue
                flagged.add(expr)
                yield self._violation(fn, context, expr, labels.get(id(expr))).with_premises(runs, traced)

    def differentiated(self, fn: Function) -> Iterator[Violation]:
        """Under an eager `jax.grad` (values concrete, not staged), control flow and `int()` see the
        primal value; `float()`/`complex()` of a value carrying the differentiated argument's
        tangent raise (jax#2783: it would be a silent `stop_gradient`)."""
        if not self.premise.differentiated_params(fn):
            return
        for node in own_nodes(fn):
            if not isinstance(node, cst.Call):
                continue
            which = _CONVERSIONS.get(self.model.qn(node.func, fn) or "")
            args = [a for a in node.args if a.keyword is None and not a.star]
            if which not in ("float", "complex") or not args:
                continue
            expr = args[0].value
            found = self.premise.differentiated_premise(expr, fn)
            if found is None:
                continue
            runs = self.evidence.premise(fn, expr, raises=True)
            if runs is None:
                continue
            traced, name, reason = found
            what = _ADVICE[which][0]
            depends = "is" if isinstance(expr, cst.Name) and expr.value == name else f"depends on `{name}`,"
            yield Violation(
                expr,
                message(
                    f"{what} needs a concrete Python value, but `{code_of(self.model, expr)}` {depends} "
                    f"the argument differentiated where `{fn.display_name}` is ", *reason_parts(reason),
                    f": under differentiation it is a tracer even for concrete inputs, and {which}() of it raises "
                    "a concretization error (it would drop the gradient); keep the value an array, or write "
                    f"`{which}(jax.lax.stop_gradient(...))` where no gradient should flow through it"),
                data={"context": which, "roots": [name]},
            ).with_premises(runs, traced)

    def _contexts(self, node: cst.CSTNode, fn: Function):
        """(context, operand, is-a-truthiness-test) for every construct that converts to Python."""
        m = self.model
        if isinstance(node, cst.If):
            parent = m.parent(node)
            context = "elif" if isinstance(parent, cst.If) and parent.orelse is node else "if"
            yield context, node.test, True
        elif isinstance(node, cst.While):
            yield "while", node.test, True
        elif isinstance(node, cst.Assert):
            yield "assert", node.test, True
        elif isinstance(node, cst.IfExp):
            yield "ifexp", node.test, True
        elif isinstance(node, cst.CompIf):
            yield "compif", node.test, True
        elif isinstance(node, cst.BooleanOperation):
            yield ("and" if isinstance(node.operator, cst.And) else "or"), node.left, True
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            yield "not", node.expression, True
        elif isinstance(node, cst.Comparison) and len(node.comparisons) > 1 and _first_pair_operands(node):
            yield "chain", node, False  # `0 < x < 1` is `(0 < x) and (x < 1)`: bool() of the first
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in _CONVERTING_METHODS \
                    and not node.args and m.qn(node.func, fn) is None:
                yield node.func.attr.value, node.func.value, False  # `x.item()`: a Python scalar of x
                return
            which = _CONVERSIONS.get(m.qn(node.func, fn) or "")
            if which is None:
                return
            args = [a for a in node.args if a.keyword is None and not a.star]
            if which in ("max", "min"):
                if len(args) >= 2:
                    for a in args:
                        yield which, a.value, False
            elif which == "range":
                for a in args:
                    yield which, a.value, False
            elif args:
                yield which, args[0].value, False

    def _inside_flagged(self, expr: cst.CSTNode, flagged: set, fn: Function) -> bool:
        for a in self.model.ancestors(expr):
            if a in flagged:
                return True
            if a is fn.node:
                return False
        return False

    def _off_by_default_flag(self, expr: cst.CSTNode, fn: Function) -> bool:
        """Inside the branch of a module debug flag that the module's own value does not select."""
        for a in self.model.ancestors(expr):
            if a is fn.node:
                return False
            if isinstance(a, cst.If) and self._off_by_default(a, expr):
                return True
        return False

    def _off_by_default(self, branch: cst.If, expr: cst.CSTNode) -> bool:
        """`if _DISABLE_JIT:` where the module sets the flag to a literal and functions flip it
        (`global _DISABLE_JIT`, a context manager that switches control flow off for debugging):
        the branch the module's value does not select runs only in that mode, not under trace."""
        m = self.model
        test, negated = branch.test, False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, negated = test.expression, True
        if not isinstance(test, cst.Name):
            return False
        module = m.index.scope
        bindings = module.bindings.get(test.value, [])
        found = m.lookup(test.value, m.scope_of(branch))
        if not bindings or found is None or found[0] is not module:
            return False
        defaults = set()
        for b in bindings:
            if b.kind == "global" or m.function_of(b.node) is not None:
                continue  # the functions that flip it
            if b.kind not in ("assign", "annassign") or b.index is not None or not isinstance(b.value, cst.Name) \
                    or b.value.value not in ("True", "False", "None"):
                return False
            defaults.add(b.value.value == "True")
        if len(defaults) != 1 or not any(test.value in f.globals for f in m.index.functions):
            return False
        taken_by_default = defaults.pop() != negated
        in_body = any(a is branch.body for a in m.ancestors(expr))
        return in_body != taken_by_default

    def _truthiness_is_of_an_array(self, expr: cst.CSTNode, fn: Function) -> bool:
        """`if x:` is an error only if x is an array; a pytree container or None is fine.
        Bare names count when they are parameters not annotated, used or passed as containers,
        or locals never bound to a container or None; bare attributes and subscripts never count."""
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            return False
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self._truthiness_is_of_an_array(expr.expression, fn)  # `not x` tests x
        if isinstance(expr, cst.BooleanOperation):
            # `a and b` is one of its operands: an array only if one of them is
            return self._truthiness_is_of_an_array(expr.left, fn) or self._truthiness_is_of_an_array(
                expr.right, fn)
        if not isinstance(expr, cst.Name):
            return True
        if self.model.narrowed(expr, fn) is not None:
            return False  # under `isinstance(x, tuple)` / `x is None`: not an array
        found = self.model.bindings_at(expr, fn)
        if found is None:
            return False
        owner, bindings = found
        for b in bindings:
            if b.kind == "param":
                if not isinstance(owner, Function):
                    return False
                p = owner.param_nodes.get(b.name)
                if p is not None and p.annotation is not None:
                    text = self.model.module.code_for_node(p.annotation.annotation)
                    if _CONTAINER_HINT.search(text):
                        return False
                if self._passed_a_container(owner, b.name) or self._used_as_container(owner, b.name):
                    return False
            elif b.kind in ("assign", "annassign", "augassign", "walrus"):
                if b.index is None and _container_or_none(b.value):
                    return False
                if b.index is not None:
                    return False  # `cache, x = carry`: an element of a pytree may be a dict or None
            else:
                return False
        return True

    def _used_as_container(self, fn: Function, name: str) -> bool:
        """Whether fn treats the parameter as a dict or list: `p.items()`, `p["w"]`, `"w" in p`."""
        m = self.model
        for read in fn.reads:
            if read.name.value != name:
                continue
            parent = m.parent(read.name)
            if isinstance(parent, cst.Attribute) and parent.value is read.name and parent.attr.value in (
                    "items", "keys", "values", "get", "append"):
                return True
            if isinstance(parent, cst.Subscript) and parent.value is read.name and any(
                    isinstance(el.slice, cst.Index) and isinstance(el.slice.value, cst.SimpleString)
                    for el in parent.slice):
                return True
            if isinstance(parent, cst.ComparisonTarget) and isinstance(parent.operator, (cst.In, cst.NotIn)):
                return True
        return False

    def _passed_a_container(self, fn: Function, name: str) -> bool:
        """Whether some call of fn from traced code passes a tuple/list/dict/None for `name`."""
        for r in self.model.traced.reasons.get(fn, ()):
            if r.kind == "called" and isinstance(r.node, cst.Call):
                arg = self.model.argument_for(r.node, fn, name)
                if isinstance(arg, (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp)) or (
                        isinstance(arg, cst.Name) and arg.value == "None"):
                    return True
        return False

    # -- the message ------------------------------------------------------------------------------
    def _violation(self, fn: Function, context: str, expr: cst.CSTNode, label: str | None = None) -> Violation:
        what, advice = _ADVICE[context]
        if label is not None:
            what = f"{label}'s size argument"
        roots = self.roots(expr, fn)
        reason = staged_reason(self.model, fn, batching=True)
        if roots:
            owners = {o.display_name for o, _ in roots}
            if len(owners) == 1:
                names = ", ".join(f"`{name}`" for _, name in roots[:3])
                of = f" of `{owners.pop()}`"
            else:  # (an object built in one function, read in another's method)
                names = ", ".join(f"`{name}` of `{o.display_name}`" for o, name in roots[:3])
                of = ""
            depends = f"depends on traced argument{'s' if len(roots) > 1 else ''} {names}{of}"
        else:
            depends = "is a traced value"
        origin: tuple = ()
        call = None if roots else self.staged_origin(expr, fn)
        jitted = isinstance(call, cst.Call) and self.values.jitted_call(call, fn)
        if jitted:
            depends = "is a tracer"
            origin = (f" (`{code_of(self.model, call, 40)}` on line ", LineOf(call),
                      " calls a jitted function, which is staged out under the trace: its results are "
                      "tracers even for Python inputs)")
        elif call is not None and not isinstance(call, cst.Call):
            depends = "is a tracer"
            origin = (f" (`{code_of(self.model, call, 40)}` on line ", LineOf(call),
                      " operates on a jax array captured from outside the traced function: it is staged out "
                      "under the trace, though the captured array itself is a concrete value)")
        elif call is not None:
            depends = "is a tracer"
            origin = (f" (`{code_of(self.model, call, 40)}` on line ", LineOf(call),
                      " is staged out like every jax array operation under a trace, "
                      "though it depends on no argument)")
        hint = self._static_hint(roots) if call is None else (
            ", or call the function without `jit` here (inside a trace it is compiled into the outer "
            "program anyway)" if jitted else ", or compute it with NumPy or under `with jax.ensure_compile_time_eval():`")
        return Violation(
            expr,
            message(
                f"{what} needs a concrete Python value, but `{code_of(self.model, expr)}` {depends}", *origin,
                f": this raises a concretization error while `{fn.display_name}` is traced (",
                *reason_parts(reason),
                f"); {advice}{hint}",
            ),
            data={"context": context, "roots": [name for _, name in roots]},
        )

    def _static_hint(self, roots) -> str:
        """`static_argnames` advice, only for parameters the model shows hold Python scalars,
        strings or bools (an array made static raises "Non-hashable static arguments")."""
        names = []
        transform = None
        for owner, name in roots:
            t = self.staging.staging_transform(owner)
            if t not in ACCEPTS_STATIC_ARGNUMS:
                continue
            if not self._python_scalar(owner, name):
                return ""  # one array among the roots: static is not the advice
            names.append(name)
            transform = transform or t
        if not names:
            return ""
        if transform in ACCEPTS_STATIC_ARGNAMES:
            listed = ", ".join(repr(n) for n in names)
            return f", or mark {'it' if len(names) == 1 else 'them'} static (`static_argnames=[{listed}]`)"
        return f", or mark {'it' if len(names) == 1 else 'them'} static (`static_argnums`)"

    def _python_scalar(self, fn: Function, name: str) -> bool:
        """Whether parameter `name` of fn is shown to hold a Python int/float/bool/str: annotated
        so, used as `range(name)`, or passed such a literal by a call in this module."""
        m = self.model
        p = fn.param_nodes.get(name)
        scope = fn.parent or m.index.scope
        if p is not None and p.annotation is not None:
            return m.qn(p.annotation.annotation, scope) in _SCALAR_ANNOTATIONS
        for read in fn.reads:
            if read.name.value != name:
                continue
            arg = m.parent(read.name)
            call = m.parent(arg) if isinstance(arg, cst.Arg) else None
            if isinstance(call, cst.Call) and m.qn(call.func, fn) == "builtins.range":
                return True
        passed = []
        for site in m.traced_analysis().direct_call_sites(fn):
            arg = m.argument_for(site.call, fn, name)
            if arg is not None:
                passed.append(arg)
        return bool(passed) and all(_scalar_literal(a) for a in passed)

    def staged_origin(self, expr: cst.CSTNode, scope: Scope) -> cst.Call | None:
        return self.premise.staged_origin(expr, scope)

    def roots(self, expr: cst.CSTNode, scope: Scope) -> list[tuple[Function, str]]:
        return self.premise.roots(expr, scope)


def _first_pair_operands(chain: cst.CSTNode) -> tuple[cst.BaseExpression, ...]:
    """The operands of a chained comparison's first comparison, which Python converts to a bool
    (`0 < x` of `0 < x < 1`); none where that is an identity or membership test."""
    if not isinstance(chain, cst.Comparison) or not chain.comparisons or isinstance(
            chain.comparisons[0].operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
        return ()
    return chain.left, chain.comparisons[0].comparator


_SCALAR_ANNOTATIONS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.str"})


def _scalar_literal(value: cst.BaseExpression) -> bool:
    """A Python number, string or bool written in the call (`f(x, 3)`, `f(x, -1.5)`, `True`)."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, cst.Name):
        return value.value in ("True", "False")
    return isinstance(value, (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString))


def _container_or_none(value: cst.BaseExpression | None) -> bool:
    """A value whose truthiness is a Python question (`[]`, `{}`, `(a, b)`, `None`)."""
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        return True
    return isinstance(value, (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp,
                              cst.GeneratorExp))


RULE = PythonControlFlowOnTracedValue
