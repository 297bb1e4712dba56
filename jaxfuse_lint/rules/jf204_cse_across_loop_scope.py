"""JF204 cse-across-loop-scope."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model.names import as_written
from jaxfuse_lint.model import Function, Kind, SemanticModel, walk
from jaxfuse_lint.model.api import JNP_CREATORS, JNP_ELEMENTWISE, JNP_STATIC_FUNCTIONS, STATIC_ATTRIBUTES
from jaxfuse_lint.model.fusion import document_order, expression_names, own_nodes, same_meaning
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, TPU_UNKNOWN, Claim, Evidence

_LAYOUT = frozenset("jax.numpy." + n for n in (
    "where select reshape ravel transpose swapaxes moveaxis expand_dims squeeze broadcast_to stack "
    "concatenate zeros_like ones_like full_like real imag conj float32 float64 int32 int64 complex64 "
    "complex128 remainder mod fmod"
).split()) | frozenset({"jax.lax.iota", "jax.lax.broadcasted_iota", "jax.lax.broadcast_in_dim", "jax.lax.full"})
_STATIC_BUILTINS = frozenset("builtins." + n for n in "len int float complex abs min max round tuple range".split())
_SHAPE_METHODS = frozenset("reshape astype transpose squeeze ravel flatten conj conjugate swapaxes".split())
# Elementwise functions XLA treats as costly to repeat per use (transcendentals, selects, remainders).
_CHEAP_ARITH = frozenset("jax.numpy." + n for n in (
    "add subtract multiply divide true_divide negative positive asarray array astype abs absolute square "
    "real imag conj conjugate floor ceil round rint trunc fix sign maximum minimum"
).split())


class _Analysis:
    """Shape-only values: computed from array shapes, dtypes and Python values, never from array data."""

    # Deep enough for the notebook's `get_kmesh` (call -> helper -> where -> unpacked indices -> shapes).
    MAX_DEPTH = 40

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self._memo: dict[tuple, bool] = {}

    def shape_only(self, e: cst.CSTNode, scope, env: dict, depth: int = 0) -> bool:
        if depth > self.MAX_DEPTH:
            return False
        key = (id(e), id(scope), tuple(sorted(env.items())))
        if key in self._memo:
            return True
        found = self._shape_only(e, scope, env, depth)
        if found:  # (a False may come from the depth limit: not kept)
            self._memo[key] = True
        return found

    def _shape_only(self, e: cst.CSTNode, scope, env: dict, depth: int) -> bool:
        m = self.model
        if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)):
            return True
        if isinstance(e, cst.Name):
            if e.value in ("True", "False", "None"):
                return True
            found = m.bindings_at(e, scope)
            if found is None:
                return True  # a builtin
            owner, bindings = found
            if not isinstance(owner, Function):
                return True  # module constants are Python values at trace time
            if len(bindings) > 4:
                return False
            # Every binding that reaches this read (`if real: kz = ... else: kz = ...`).
            return all(self._binding_shape_only(b, owner, env, depth) for b in bindings)
        if isinstance(e, cst.Attribute):
            if e.attr.value in STATIC_ATTRIBUTES:
                return True
            if m.qn(e, scope) is not None:
                return True  # jnp.pi, jnp.float32
            return False
        if isinstance(e, cst.Subscript):
            if not self.shape_only(e.value, scope, env, depth + 1):
                return False
            for el in e.slice:
                s = el.slice
                parts = [s.value] if isinstance(s, cst.Index) else \
                    [p for p in (s.lower, s.upper, s.step) if p is not None]
                if not all(self.shape_only(p, scope, env, depth + 1) for p in parts):
                    return False
            return True
        if isinstance(e, cst.BinaryOperation):
            return self.shape_only(e.left, scope, env, depth + 1) and self.shape_only(e.right, scope, env, depth + 1)
        if isinstance(e, cst.UnaryOperation):
            return self.shape_only(e.expression, scope, env, depth + 1)
        if isinstance(e, cst.Comparison):
            return self.shape_only(e.left, scope, env, depth + 1) and all(
                self.shape_only(c.comparator, scope, env, depth + 1) for c in e.comparisons)
        if isinstance(e, (cst.Tuple, cst.List)):
            return all(not isinstance(el, cst.StarredElement) and self.shape_only(el.value, scope, env, depth + 1)
                       for el in e.elements)
        if isinstance(e, cst.IfExp):
            return all(self.shape_only(p, scope, env, depth + 1) for p in (e.test, e.body, e.orelse))
        if isinstance(e, cst.Call):
            return self._call(e, scope, env, depth)
        return False

    def _binding_shape_only(self, b, owner, env, depth) -> bool:
        m = self.model
        if b.kind == "param":
            key = (id(owner), b.name)
            if key in env:
                return env[key]
            return m.values.param_kind(owner, b.name) is Kind.STATIC
        if b.kind in ("assign", "annassign") and b.value is not None:
            value = b.value
            if b.index is not None:
                if not isinstance(value, (cst.Tuple, cst.List)) or b.index >= len(value.elements):
                    return self._unpacked_indices(value, owner, env, depth)
                value = value.elements[b.index].value
            return self.shape_only(value, owner, env, depth + 1)
        return False

    def _unpacked_indices(self, value, owner, env, depth) -> bool:
        # `ix, iy = jnp.indices(shape)`: every element of a shape-only array is shape-only.
        return isinstance(value, cst.Call) and self.shape_only(value, owner, env, depth + 1)

    def _args(self, call: cst.Call, scope, env, depth) -> bool:
        return all(not a.star and self.shape_only(a.value, scope, env, depth + 1) for a in call.args)

    def _call(self, e: cst.Call, scope, env, depth) -> bool:
        m = self.model
        qn = m.qn(e.func, scope)
        if qn is not None:
            if qn in JNP_STATIC_FUNCTIONS or qn in _STATIC_BUILTINS:
                return True
            if qn in JNP_CREATORS or qn in JNP_ELEMENTWISE or qn in _LAYOUT:
                return self._args(e, scope, env, depth)
            return False
        if isinstance(e.func, cst.Attribute):
            if e.func.attr.value in _SHAPE_METHODS:
                return self.shape_only(e.func.value, scope, env, depth + 1) and self._args(e, scope, env, depth)
            return False
        if isinstance(e.func, cst.Name):
            callee = m.function_named(e.func.value, scope)
            if callee is None or not callee.returns or callee.star_params:
                return False
            inner = dict(env)
            for name in callee.params:
                arg = m.argument_for(e, callee, name)
                if arg is not None:
                    inner[(id(callee), name)] = self._static_use_only(callee, name) or \
                        self.shape_only(arg, scope, env, depth + 1)
                else:
                    inner[(id(callee), name)] = name in callee.params_with_default
            return all(self.shape_only(r, callee, inner, depth + 1) for r in callee.returns)
        return False

    def _static_use_only(self, fn: Function, name: str) -> bool:
        """Every read of the parameter in fn is `p.shape`, `p.size`, `p.ndim`, `p.dtype` or `len(p)`."""
        m = self.model
        reads = [r for r in fn.reads if r.name.value == name]
        stack = list(fn.nested)
        while stack:
            g = stack.pop()
            reads.extend(r for r in g.reads if r.name.value == name and m.lookup(name, r.scope) is not None
                         and m.lookup(name, r.scope)[0] is fn)
            stack.extend(g.nested)
        for r in reads:
            parent = m.parent(r.name)
            if isinstance(parent, cst.Attribute) and parent.value is r.name and parent.attr.value in STATIC_ATTRIBUTES:
                continue
            if isinstance(parent, cst.Arg):
                call = m.parent(parent)
                if isinstance(call, cst.Call) and m.qn(call.func, r.scope) == "builtins.len":
                    continue
            return False
        return True

    # -- cost -------------------------------------------------------------------------------------
    def costly(self, e: cst.CSTNode, scope, depth: int = 0) -> str | None:
        """An operation XLA would rather compute once than repeat per use: a transcendental
        function, a select, a remainder or a non-integer power. Returns its spelling."""
        m = self.model
        if depth > self.MAX_DEPTH:
            return None
        for n in walk(e):
            if isinstance(n, cst.BinaryOperation):
                if isinstance(n.operator, cst.Modulo):
                    return "%"
                if isinstance(n.operator, cst.Power) and not isinstance(n.right, cst.Integer):
                    return "**"
            elif isinstance(n, cst.Call):
                n_scope = m.scope_of(n) if n in m.index.scope_of_node else scope
                qn = m.qn(n.func, n_scope)
                if qn is not None:
                    if (qn in JNP_ELEMENTWISE or qn in _LAYOUT) and qn not in _CHEAP_ARITH and qn not in (
                            "jax.numpy.reshape", "jax.numpy.ravel", "jax.numpy.transpose", "jax.numpy.swapaxes",
                            "jax.numpy.moveaxis", "jax.numpy.expand_dims", "jax.numpy.squeeze",
                            "jax.numpy.broadcast_to", "jax.numpy.stack", "jax.numpy.concatenate",
                            "jax.numpy.zeros_like", "jax.numpy.ones_like", "jax.numpy.full_like"):
                        return as_written(n, qn)
                    continue
                if isinstance(n.func, cst.Name):
                    callee = m.function_named(n.func.value, n_scope)
                    if callee is not None and isinstance(callee.node, cst.FunctionDef):
                        found = self.costly(callee.node.body, callee, depth + 1)
                        if found:
                            return found
                    elif callee is not None:
                        for r in callee.returns:
                            found = self.costly(r, callee, depth + 1)
                            if found:
                                return found
            elif isinstance(n, cst.Name) and n in m.index.scope_of_node:
                # Follow names bound once in a function to what they compute.
                parent = m.parent(n)
                if isinstance(parent, cst.Attribute) and parent.attr is n:
                    continue
                found_b = m.lookup(n.value, m.scope_of(n))
                if found_b is None or not isinstance(found_b[0], Function) or len(found_b[1]) != 1:
                    continue
                b = found_b[1][0]
                if b.kind in ("assign", "annassign") and b.value is not None and b.value is not e:
                    found = self.costly(b.value, found_b[0], depth + 1)
                    if found:
                        return found
        return None


class CseAcrossLoopScope(Rule):
    code = "JF204"
    name = "cse-across-loop-scope"
    summary = "The same shape-only expression is recomputed in a lax loop body and used before and after the loop"
    fixable = "never"
    doc = """
    ## What it does
    Flags an expression that a `lax.fori_loop`/`while_loop`/`scan`/`map` body
    recomputes (on purpose, to avoid a temporary) and that the enclosing traced
    function also computes both before the loop (or in its initial value) and
    after it. The diagnostic is on the occurrence after the loop. Expressions
    are compared with libcst's `deep_equals`, and every name in them must
    resolve to the same binding in both places. Only shape-only expressions
    (built from `arange`/`indices`/constants and the *shapes* of arrays, like
    the notebook's `get_im(x)` or a k-mesh) that contain an operation XLA finds
    costly to repeat (a transcendental function, `where`, `%`, a non-integer
    power) are considered.

    ## Why is this bad?
    XLA's common-subexpression elimination works within one computation: the
    copy inside the loop body is recomputed in the loop's fused kernel, as
    intended, but the copies before and after the loop are the same
    expression in the same scope, so CSE merges them into one value. That value
    is computed before the loop and kept alive across it as a temporary
    instead of being recomputed after it. The fusion notebook's
    `f_cse_loop_after` (against `f_cse_loop_impl`, which computes it only
    before the loop): 5 → 7 kernels and 129 B → 1.5 MB of temporaries on GPU;
    measured on CPU with jax 0.10.2 (1 MiB input): 6 → 8 kernel launches and
    129 B → 1.05 MB. With only one copy outside the loop, or with copies only
    before (or only after) it, nothing is kept across the loop and nothing is
    reported.

    ## Known problems
    Whether XLA keeps the merged value or recomputes it is a cost heuristic
    (the notebook calls it unpredictable), and it depends on the consumers too:
    on CPU, `sin(iota ** 2.3)` is kept while `sin(iota * 1.0)` is recomputed,
    and a 64×64 k² grid used as `rho + k2` before and `out + k2` after the
    loop is kept (16 KB) while `rho * k2` before and `out / (1 + k2)` after is
    recomputed. The rule reports the pattern, not a measured temporary.
    Expressions that differ only in spacing or parentheses compare unequal.

    ## Example
    ```python
    @jax.jit
    def f(x):
        def step(i, a):
            return a + get_im(x)
        return jax.lax.fori_loop(0, 5, step, x + get_im(x)) + get_im(x)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(x):
        def step(i, a):
            return a + get_im(x)
        # a different expression after the loop: CSE cannot merge it with the one before
        return jax.lax.fori_loop(0, 5, step, x + get_im(x)) + get_im(x, eps=1e-10)
    ```

    ## Fix safety
    No automatic fix: making the copies differ changes the program's text
    in a way only its author can judge (the notebook's `eps` trick, or moving
    the use after the loop into the loop's carry).
    """
    backends = (
        Claim(
            "Copies of one expression before and after a `lax` loop are merged by CSE and kept alive across "
            "the loop as a temporary",
            gpu=Evidence(True, GPU_MEASURED + ": on f32[131072,2], `f_cse_loop_after` is 19 launches and 1.0 MiB "
                               "of temporaries, the copy computed once inside (`f_cse_loop_impl`) 18 launches and "
                               "513 B"),
            cpu=Evidence(True, CPU_MEASURED + ": 6 → 8 kernel launches, 129 B → 1.05 MB"),
            tpu=TPU_UNKNOWN,
        ),
    )
    valid = (
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.sin(jnp.arange(x.size).reshape(x.shape) ** 2.3)\n"
        "@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + im(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + im(x))\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + jnp.sin(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + jnp.sin(x)) + jnp.sin(x)\n",
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.arange(x.size).reshape(x.shape) * 0.5\n"
        "@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + im(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + im(x)) + im(x)\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\ndef im(x):\n    return jnp.sin(jnp.arange(x.size).reshape(x.shape) ** 2.3)\n"
        "@jax.jit\ndef f(x):\n    def step(i, a):\n        return a + im(x)\n"
        "    return jax.lax.fori_loop(0, 5, step, x + im(x)) + im(x)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    w = x * jnp.exp(-jnp.arange(x.shape[0]) ** 2.0)\n"
        "    y = jax.lax.scan(lambda c, _: (c + jnp.exp(-jnp.arange(x.shape[0]) ** 2.0), None), w, None, length=9)[0]\n"
        "    return y * jnp.exp(-jnp.arange(x.shape[0]) ** 2.0)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        analysis = _Analysis(model)
        flagged: set[int] = set()
        for site in model.loop_sites:
            outer = site.scope
            if not isinstance(outer, Function) or not model.is_traced(outer) or not site.bodies:
                continue
            order = document_order(model)
            outer_calls = [n for n in own_nodes(outer) if isinstance(n, cst.Call)]
            loop = site.call
            short = site.qualified_name.replace("jax.lax.", "lax.")
            for body in site.bodies:
                inner = set()
                stack = [body]
                while stack:
                    fn = stack.pop()
                    inner.add(id(fn))
                    stack.extend(fn.nested)
                matched: list[cst.CSTNode] = []
                for node in walk(body.node.body):
                    if not isinstance(node, cst.Call):
                        continue
                    if any(order.inside(node, mnode) for mnode in matched):
                        continue
                    found = self._outer_copies(model, analysis, node, inner, outer, outer_calls, order, loop)
                    if found is None:
                        continue
                    before, after, cost = found
                    matched.append(node)
                    target = after[0]
                    if id(target) in flagged:
                        continue
                    flagged.add(id(target))
                    body_name = "the lambda" if body.is_lambda else f"`{body.name}`"
                    yield Violation(
                        target,
                        message(
                            f"`{code_of(model, target, 40)}` is recomputed inside the `{short}` body {body_name} "
                            "(line ", LineOf(node), ") and computed here and before the loop (line ",
                            LineOf(before[0]), f"): outside the loop both copies are one expression in one scope, "
                            f"so XLA's CSE merges them (it contains `{cost}`, too costly to repeat) and keeps the "
                            "value alive across the loop as a temporary; make the copy after the loop differ "
                            "(the notebook's `eps` trick) or carry what you need through the loop",
                        ),
                        data={"inner": node, "before": before, "after": after},
                    )

    @staticmethod
    def _outer_copies(model, analysis: _Analysis, node: cst.Call, inner: set[int], outer: Function,
                      outer_calls: list[cst.Call], order, loop: cst.Call):
        names = expression_names(node)
        if not names:
            return None
        from_function = False
        for n in names:
            found = model.lookup(n.value, model.scope_of(n))
            if found is None:
                continue
            if id(found[0]) in inner:
                return None  # depends on the carry, the index, or values computed in the body
            if isinstance(found[0], Function):
                from_function = True
        if not from_function:
            return None  # module-level constants only: XLA folds or recomputes those freely
        scope = model.scope_of(node)
        if not analysis.shape_only(node, scope, {}):
            return None
        cost = analysis.costly(node, scope)
        if cost is None:
            return None
        copies = [c for c in outer_calls if same_meaning(model, node, scope, c, outer)]
        before = [c for c in copies if order.start[c] < order.start[loop] or order.inside(c, loop)]
        after = [c for c in copies if order.start[c] > order.end[loop]]
        if not before or not after:
            return None
        return before, after, cost


RULE = CseAcrossLoopScope
