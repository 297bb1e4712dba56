"""JF203 loop-invariant-capture."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.core.calibration import OneOf, decide, evidence_text, raw
from jaxfuse_lint.model import Kind, SemanticModel, capture_context
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.evidence import evidence
from jaxfuse_lint.model.premises import SizeClaim, calibrated
from jaxfuse_lint.model.premises import size as premise_size
from jaxfuse_lint.model.size_origin import SizeOrigin, axes_origin
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message
from jaxfuse_lint.model.captures import static_use
from jaxfuse_lint.model.computed_arrays import computed_array, known_scalar
from jaxfuse_lint.core.targets import CPU_MEASURED, GPU_MEASURED, WHILE_LOOP_LICM, Claim, Evidence


class LoopInvariantCapture(Rule):
    code = "JF203"
    premises = ("runs-traced", "size", "harm")
    name = "loop-invariant-capture"
    summary = "lax loop body reads an array computed outside the loop (kept alive as a temporary)"
    fixable = "sometimes"
    doc = """
    ## What it does
    Flags, inside the body of a `lax.fori_loop`, `lax.while_loop`, `lax.scan`
    or `lax.map`, a read of an array computed in the enclosing traced function
    (a jnp/lax result — not a parameter, not a Python value), where the
    calibration table of the configured target shows that computing it in the
    body instead compiles to a better program: fewer kernels or launches, fewer
    temporaries, and worse on no figure. The diagnostic is on the read, names
    the line where the value was bound and cites the measured figures.

    ## Premises
    `runs-traced`; `size(the elements of the value)`: proven by the construct
    that states its shape (line cited), proven irrelevant where every size the
    value may have shows the same, else assumed with the table's threshold
    ("harm from 4,096 elements": preview); `harm(value)` from the table.

    ## Why is this bad?
    XLA's common-subexpression elimination and fusion work within one
    computation. A value computed outside a loop and used inside it becomes an
    operand of the loop: it is computed by a kernel of its own, materialised
    once and kept alive across every iteration, where the same expression
    written in the body fuses into the body's kernel. On XLA:GPU (the H100 and
    A100 tables, deviceless, jax 0.10.2) that saves a kernel and the value's
    whole buffer for the values that are cheap to rebuild and that the body
    combines elementwise, filters a spectrum with, or feeds a matmul: grids
    built from shapes (`arange`, `indices`, `fftfreq`: the notebook's k-mesh
    filter, 11 → 9 kernels and 5.0 → 4.0 MiB of temporaries at 262,144
    elements), elementwise work on inputs, layout changes (a `roll`) and row
    reductions, from 64 elements up. It holds in `fori_loop`, `scan` and
    `while_loop` bodies alike, at 8 or 64 iterations, and even when the value
    is read again after the loop (XLA then computes the outer copy after the
    loop instead of keeping it across).

    XLA:CPU is another compiler (its table is timed on the machine that made
    it): its while-loop invariant code motion hoists elementwise work, layout
    changes and reductions of the loop's inputs straight back out of the body,
    so both forms compile to one program and nothing is reported; a grid saves
    its kernel there but runs slower recomputed from 4,096 elements (4.0 →
    37 ms at 262,144), a trade kept for the preview tier; a cumulative sum
    keeps half its temporaries recomputed, and is reported where every
    calibrated loop ran no slower (262,144 elements; at 4,096 one ran slower:
    preview). These wall-clock verdicts come from a shared, loaded machine:
    take the CPU table's timings as indications.

    ## When it stays silent
    Where the table shows no saving, or a cost: the result of an FFT, a
    cumulative sum (on XLA:GPU from 4,096 elements: fewer temporaries for
    more launches per iteration), a matmul, a sort or solve, or an earlier
    `lax` loop — recomputing those in every iteration costs more launches than
    it saves; a grid read by a matmul in the body (H100: worse at 4,096
    elements and up); a 0-d value that XLA folds (a grid of Python numbers, one
    element of an array); any value of a fully unrolled loop (`unroll=True`:
    no loop is left to capture in). The rule also stays silent, whatever the
    table, on values that hold no buffer of their own: a parameter renamed
    (`h = linear_potential`), a field read off an input (`p = state.params`),
    a Python number (`x.shape[0] // self.block`), a function or bound method
    the body calls; and on a table the body indexes with the loop index or
    carry (`keys[i]`: recomputing would rebuild all of it every iteration).

    ## Known problems
    The table describes the value by what it is (the most expensive operation
    it runs, following the function's names and the module's helpers), its
    number of elements, what the body does with it, whether the loop is
    unrolled and whether the value is read after the loop. A value whose shape
    the linter cannot see is asked about as one of the calibrated arrays of 64
    elements and more (a value known to be a scalar, such as a whole-array
    reduction, is asked about as one); a form where the table shows the saving
    for some of these and not for others (a cumulative sum of unknown length,
    a value the body passes to an unknown function) is in the preview tier,
    with no fix. A 0-d elementwise value (`exp` of a scalar input) is
    reported on XLA:GPU: keeping it is one kernel launch more per call, a
    saving too small to matter in most programs.

    ## Example
    ```python
    @jax.jit
    def f(rho):
        k2 = get_kmesh(rho)
        def step(i, rho):
            return jnp.fft.irfftn(jnp.fft.rfftn(rho) * jnp.exp(-0.5 * k2))
        return jax.lax.fori_loop(0, 5, step, rho)
    ```

    ## Use instead
    ```python
    @jax.jit
    def f(rho):
        def step(i, rho):
            k2 = get_kmesh(rho)
            return jnp.fft.irfftn(jnp.fft.rfftn(rho) * jnp.exp(-0.5 * k2))
        return jax.lax.fori_loop(0, 5, step, rho)
    ```

    ## Fix safety
    A fix is offered only where the table reports the finding (the fixed form
    compiles no worse on any figure). It is safe when the value is cheap
    (array creation, elementwise arithmetic, layout changes, and module
    functions built only from those) and pure, and every name it uses means
    the same inside the body — or is the loop carry initialised from that very
    name and read only for its shape (lax loops keep the carry's shape), or
    for its `.dtype` when the init is known to be strongly typed (lax promotes
    a weakly typed init to the dtype the body returns). The same expression of
    the same names has the same dtype and weak type, so recomputing changes
    neither. The binding is copied to the top of the body (a lambda body gets
    the expression in place of the read), and the outer binding is removed
    when no other code reads it (a value read after the loop keeps it: the
    table measured that form). A value computed from other locals moves with
    the chain of bindings it is computed from (`ix, iy, iz =
    jnp.indices(...)` then `k2 = ix**2 + iy**2 + iz**2`), each bound once by a
    plain assignment in the same block; a chain does not fit a lambda body, so
    that case gets no fix. Pure values that are not cheap (reductions) and
    names the body rebinds without that proof get an unsafe fix; values that
    call impure code, or names the body binds as locals, get none. Plain
    aliases and fields of inputs the value is computed from (`h = potential`)
    stay where they are: the body reads them in place.
    """
    backends = (
        Claim(
            "A size-inflating value (a grid built from shapes) computed outside a `lax` loop and read inside it "
            "is kept alive as a temporary; recomputed in the body it fuses into the body's kernel",
            gpu=Evidence(True, GPU_MEASURED + ": the 64³ k-mesh filter (`f_filter_with_temp` → "
                               "`f_filter_with_recalc`) goes from 10 to 9 kernels and 2.58 to 2.06 MiB of "
                               "temporaries; the calibration tables (H100, A100): a kernel and the whole buffer "
                               "saved for grids, elementwise values, rolls and row reductions from 64 elements"),
            cpu=Evidence(True, CPU_MEASURED + ": the 64³ k-mesh filter goes from 8 to 7 kernels and 2.16 to "
                               "1.08 MB of temporaries; the calibration table: a kernel saved at 64 elements, but "
                               "from 4,096 the recomputed grid runs slower (a trade, in preview)"),
            tpu=Evidence(None, "not measured: no TPU was available"),
        ),
        WHILE_LOOP_LICM,
    )
    valid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x, y):\n"
        "    def body(i, c):\n        return c + y\n    return jax.lax.fori_loop(0, 9, body, x)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    n = x.shape[0]\n"
        "    def body(i, c):\n        return c * n\n    return jax.lax.fori_loop(0, 9, body, x)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x, potential, state):\n    h = potential\n"
        "    p = state.params\n    def body(i, c):\n        return c * h + p\n"
        "    return jax.lax.fori_loop(0, 9, body, x)\n",
    )
    invalid = (
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    g = jnp.arange(x.size).reshape(x.shape)\n"
        "    def body(i, c):\n        return c + g\n    return jax.lax.fori_loop(0, 9, body, x)\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(x):\n    w = jnp.exp(x)\n"
        "    return jax.lax.scan(lambda c, _: (c * w, None), x, None, length=4)[0]\n",
        "import jax, jax.numpy as jnp\n@jax.jit\ndef f(rho):\n    ix, iy, iz = jnp.indices(rho.shape)\n"
        "    k2 = ix**2 + iy**2 + iz**2\n    def step(i, r):\n        return r * jnp.exp(-k2)\n"
        "    return jax.lax.fori_loop(0, 5, step, rho)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        seen = set()
        for site in model.loop_sites:
            short = site.qualified_name.replace("jax.lax.", "lax.")
            for body in site.bodies:
                for read in _reads_within(body):
                    if read.name in seen:
                        continue
                    found = model.lookup(read.name.value, read.scope)
                    if found is None:
                        continue
                    owner, bindings = found
                    if not isinstance(owner, Function) or not model.is_xla_traced(owner):
                        continue
                    if owner is body or owner not in set(body.enclosing_functions()):
                        continue
                    if any(b.kind in ("param", "def", "class", "import", "for") for b in bindings):
                        continue
                    if any(model.values.binding_kind(b, owner) is not Kind.TRACED for b in bindings):
                        continue
                    if static_use(model, read.name):
                        continue
                    if _called(model, read.name):
                        continue  # the body calls it: a function (`solve = self._solve`), not an array
                    if not computed_array(model, read.name, read.scope):
                        continue  # an alias of an input, a field of one, a Python value: nothing to save
                    if all(b.value is not None and capture_context.python_value(model, b.value, owner)
                           for b in bindings):
                        continue  # a Python number at trace time (a block count from static shapes): no buffer
                    if _table_lookup(model, read):
                        continue  # `keys[i]` per iteration: recomputing would rebuild the whole table each time
                    seen.add(read.name)
                    first = bindings[0]
                    body_name = "the lambda" if body.is_lambda else f"`{body.name}`"
                    head = (f"`{read.name.value}` is computed in `{owner.display_name}` (line ", LineOf(first.node),
                            f") outside the `{short}` body {body_name} and read inside it")
                    data = {"bindings": bindings, "owner": owner, "body": body, "loop": site}
                    if raw(settings):  # the calibration harness: the pattern, whatever the table says
                        yield Violation(read.name, message(
                            *head, ": it is kept alive as a temporary across all iterations instead of being "
                            "recomputed in the fused loop kernel"), data=data)
                        continue
                    judged = _judge(model, settings, read, bindings, owner, body, site, head, data)
                    if judged is None:
                        continue
                    runs = evidence(model).premise(body, read.name, raises=False)
                    if runs is not None:
                        yield judged.with_premises(runs)


# -- what the compiler does with this capture (the calibration table) -----------------------------------

# The size classes of the table (jaxfuse_lint/calibrate/jf203.py): one element, then arrays.
_ARRAY_CLASSES = OneOf({64, 4096, 262144})
_VALUES = {"grid": "a grid built from shapes", "elementwise": "elementwise work on inputs",
           "roll": "a layout change of an input", "reduction": "a reduction", "cumsum": "a cumulative sum",
           "fft": "an FFT", "matmul": "a contraction", "sort": "a sort or solve",
           "loop_output": "the result of an earlier lax loop"}


def _judge(model: SemanticModel, settings, read, bindings, owner: Function, body: Function, site, head, data):
    values = [b.value for b in bindings if b.value is not None]
    kinds = {capture_context.value_kind(model, v, owner) for v in values} if len(values) == len(bindings) else {None}
    kind = kinds.pop() if len(kinds) == 1 else None
    size = _size(model, bindings, owner)
    use = capture_context.use_of(model, read.name, read.scope)
    unrolled = capture_context.unrolled(model, site)
    if unrolled is None:
        features = {"unroll": "partial"}  # not calibrated: the decision is unknown
    elif unrolled:
        features = {"unroll": True}  # calibrated over value × use at two sizes
    else:
        features = {"unroll": False, "size": size,
                    "after": _read_after(model, site.call, bindings, owner, body)}
    decision = decide("JF203", settings, value=kind, use=use, **features)
    if decision.outcome == "none":
        return None  # the compiler shows no saving from recomputing it in the body
    what = f" ({_VALUES[kind]})" if kind in _VALUES else ""
    subject = f"`{read.name.value}`"
    premises = calibrated(decision, subject, [SizeClaim("size", f"the elements of {subject}",
                                                        _size_premise(model, bindings, owner, size, subject))])
    if not decision.fires:
        return Violation(read.name, message(
            *head, f"{what}: it may be kept alive as a temporary across all iterations; recompute it in the body"),
            data=data, premises=premises)
    cited = evidence_text(decision, "the capture", "the recomputation in the body")
    return Violation(read.name, message(*head, f"{what}: {cited}; recompute it in the body"), data=data,
                     premises=premises)


def _size_premise(model: SemanticModel, bindings, owner: Function, size, subject: str):
    """The `size` premise of the captured value where its size is known: from the construct that
    states its shape (model/size_origin.py), or its one binding as a scalar."""
    if not isinstance(size, int) or isinstance(size, OneOf) or not bindings or bindings[0].value is None:
        return None
    value = bindings[0].value
    shape = capture_context.value_shape(model, value, owner)
    if size == 1 and (shape is None or shape.rank == 0):
        origin = SizeOrigin("scalar", (f"`{code_of(model, value, 30)}` on line ", LineOf(value), " is a scalar"))
    elif shape is not None and shape.rank is not None:
        origin = axes_origin(model, value, owner, list(range(shape.rank)))
    else:
        origin = None
    if origin is None:
        return None
    total = shape.total() if shape is not None and shape.total() is not None else size
    return premise_size(model, owner, f"the elements of {subject}", total, origin=origin)


def _size(model: SemanticModel, bindings, owner: Function):
    """The value's size class: 1 (one element), its number of elements (at least the 64 class), or
    one of the array classes when the model does not know its shape but knows it is no scalar."""
    totals = set()
    for b in bindings:
        if b.value is None or b.index is not None:
            return _ARRAY_CLASSES
        shape = capture_context.value_shape(model, b.value, owner)
        total = shape.total() if shape is not None else None
        if total is None:
            if known_scalar(model, b.value, owner):
                total = 1
            else:
                return _ARRAY_CLASSES
        totals.add(total)
    if len(totals) != 1:
        return _ARRAY_CLASSES
    total = totals.pop()
    return 1 if total <= 1 else max(total, 64)


_LOOKUPS = frozenset({
    "jax.lax.dynamic_slice", "jax.lax.dynamic_slice_in_dim", "jax.lax.dynamic_index_in_dim", "jax.numpy.take",
    "jax.numpy.take_along_axis", "jax.lax.index_in_dim",
})


def _table_lookup(model: SemanticModel, read) -> bool:
    """The body reads a part of the value picked by a traced index (the loop index, part of the
    carry): `keys[i]`, `lax.dynamic_slice_in_dim(table, start, n)`, `jnp.take(table, i)`."""
    parent = model.parent(read.name)
    if isinstance(parent, cst.Subscript) and parent.value is read.name:
        return any(isinstance(el.slice, cst.Index) and model.kind(el.slice.value, read.scope) is Kind.TRACED
                   for el in parent.slice)
    if isinstance(parent, cst.Arg) and parent.keyword is None:
        call = model.parent(parent)
        if isinstance(call, cst.Call) and call.args and call.args[0] is parent and \
                model.qn(call.func, read.scope) in _LOOKUPS:
            return any(model.kind(a.value, read.scope) is Kind.TRACED for a in call.args[1:])
    return False


def _read_after(model: SemanticModel, loop_call: cst.Call, bindings, owner: Function, body: Function) -> bool:
    """Some read of the value in `owner` itself comes after the loop call (returned, used again)."""
    order = _statement_order(model, owner)
    loop_stmt = model.statement_of(loop_call)
    at = order.get(id(loop_stmt))
    if at is None:
        return False
    for read in owner.reads:
        if read.name.value != bindings[0].name:
            continue
        found = model.bindings_at(read.name, owner)
        if found is None or not any(b in bindings for b in found[1]):
            continue
        stmt = model.statement_of(read.name)
        if stmt is loop_stmt:
            continue  # `lax.fori_loop(0, n, body, x)` reading it as an operand: the loop itself
        pos = order.get(id(stmt))
        if pos is not None and pos > at:
            return True
    return False


def _statement_order(model: SemanticModel, owner: Function) -> dict[int, int]:
    cache = model.__dict__.setdefault("_jf203_statement_order", {})
    key = id(owner)
    if key not in cache:
        order: dict[int, int] = {}

        class _Visitor(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                    order.setdefault(id(node), len(order))
                return not isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)) or node is owner.node

        owner.node.visit(_Visitor())
        cache[key] = order
    return cache[key]


def _called(model: SemanticModel, name: cst.Name) -> bool:
    parent = model.parent(name)
    return isinstance(parent, cst.Call) and parent.func is name


def _reads_within(body: Function):
    stack = [body]
    while stack:
        fn = stack.pop()
        yield from fn.reads
        stack.extend(fn.nested)


RULE = LoopInvariantCapture
