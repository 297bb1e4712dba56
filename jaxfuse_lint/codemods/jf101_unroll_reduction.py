"""JF101: unroll a reduction over a small axis into explicit indexing and arithmetic.

    jnp.sum(v * v, axis=-1)          ->  v[..., 0] * v[..., 0] + v[..., 1] * v[..., 1]
    jnp.linalg.norm(v, axis=-1)      ->  jnp.sqrt(jnp.abs(v[..., 0]) ** 2 + jnp.abs(v[..., 1]) ** 2)
    v.max(axis=-1)                   ->  jnp.maximum(v[..., 0], v[..., 1])
    jnp.dot(m, w)   (w rank 1, n=2)  ->  m[..., 0] * w[0] + m[..., 1] * w[1]
    return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)      (x's size along axis 1 unknown)
        ->  _, x_full = jnp.broadcast_arrays(kvm, x)
            return x * 2 + (kvm[:, 0] * x_full[:, 0] + kvm[:, 1] * x_full[:, 1])[:, None]

An elementwise operand is split into its factors when every array factor is
known to have the full size along the reduced axis. A factor of unknown size
could broadcast along it or have another rank, so it is never indexed itself:
where a statement can be inserted, the factors are broadcast together first
(`jnp.broadcast_arrays`) and the broadcast factor is indexed; elsewhere (a lambda,
a conditional expression) the operand is indexed as a whole,
`((kvm * x)[:, 0] + (kvm * x)[:, 1])`. Measured on CPU, only split forms fuse when
the operand contains a `jnp.stack`. Operands are repeated once per term, so they
must be pure (names, attributes, subscripts, arithmetic, jnp calls, the module's
own pure functions); XLA computes a repeated pure expression once (CSE).

Layout (what a person would write): an operand indexed as a whole whose copies would add more
than 20 characters is bound to a name first (`x_w = x[:, None, :] * w`, then `x_w[..., 0] + ...`;
in a lambda, where no line can go before, there is no fix); a statement that would grow past 88
columns (or past its own width, when wider) binds the unrolled value to a name (`x_norm = ...`)
or, for `return <the reduction>`, is laid out over lines, one term a line (codemods/_layout.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from jaxfuse_lint.codemods._expressions import PRECEDENCE, atom, binop, call, in_context, paren, precedence
from jaxfuse_lint.codemods._indexing import lane_index, new_axis_index, subscript
from jaxfuse_lint.codemods._layout import allowed_width, assignment, code_width, indent_of, statement
from jaxfuse_lint.codemods._lookups import has_star, is_inside, keyword_names, literal_bool, n_positional
from jaxfuse_lint.codemods._names import fresh_name, jnp_name
from jaxfuse_lint.codemods._purity import Purity
from jaxfuse_lint.codemods._statements import assign, replace_within
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.model import keyword, positional
from jaxfuse_lint.model.api import JNP_ELEMENTWISE
from jaxfuse_lint.model.shapes import Shape
from jaxfuse_lint.model.source_text import code_of

CODE = "JF101"

_SPLITTABLE_CALLS = JNP_ELEMENTWISE - {"jax.numpy.asarray", "jax.numpy.array", "jax.numpy.astype"}


def build_fix(violation, model, settings):
    data = violation.data
    kind = data.get("kind")
    node = violation.node
    if not isinstance(node, cst.Call) or has_star(node):
        return None
    scope = model.scope_of(node)
    if kind == "dot":
        return _dot(violation, model, scope)
    if kind not in ("sum", "mean", "prod", "max", "min", "norm"):
        return None  # vdot, einsum: flagged only
    operand, axis, size, form = data["operand"], data["axis"], data["size"], data["form"]
    shape: Shape | None = data.get("shape")
    keepdims = _keepdims(node, kind, form)
    if keepdims is None or not isinstance(size, int) or size < 1:
        return None
    purity = Purity.of(model)
    if not purity.info(operand, scope).pure:
        return None
    policy = dtype_policy(model, kind, operand, scope, size)
    needs_jnp = kind in ("max", "min", "norm") or policy.cast in ("float32", "uint32")
    jnp = jnp_name(model, [scope]) if needs_jnp else None
    if needs_jnp and jnp is None:
        return None
    if policy.cast == "int" and model.lookup("int", scope) is not None:
        return None  # `int` is shadowed here: the cast cannot be spelled
    cast = _cast_to(policy.cast, jnp)
    terms, whole = _lanes(model, operand, axis, size, shape, scope)
    where = "the only axis" if axis is None else f"axis {axis}"
    message = f"Unroll `{kind}` over {where} (size {size}) into {size} explicit terms"
    if policy.note:
        message += f"; {policy.note}"
    safe = policy.safe
    broadcast = _broadcast_split(model, node, operand, axis, size, shape, scope) if whole is not None else None
    if broadcast is not None and broadcast[2] is None:  # split as it is: nothing needs broadcasting
        terms, whole, broadcast = broadcast[0], None, None
    taken: set[str] = set()
    if broadcast is not None:
        terms, stmt, bind, names, bjnp = broadcast
        taken.update(el.value.value for el in bind.body[0].targets[0].target.elements)
        binds = [bind]
        shown = ", ".join(f"`{n}`" for n in names)
        message += (f"; {shown} (size along the axis unknown) {'is' if len(names) == 1 else 'are'} broadcast "
                    "with `jnp.broadcast_arrays` first, so the operand can be split into its factors")
        imports = tuple({*(jnp.imports if jnp else ()), *bjnp.imports})
    else:
        binds, imports = [], (jnp.imports if jnp is not None else ())
        if whole is not None:
            hint_axis = axis - shape.rank if axis >= 0 and shape is not None and shape.rank is not None else axis
            message += (f"; the operand is indexed as a whole because the size of `{whole}` along the axis is "
                        f"unknown (declare it, e.g. `assert {whole}.shape[{hint_axis}] == {size}`, and the fix "
                        f"splits the operand)")
        if _indexed_whole(model, terms, operand) and not _plain(operand) and \
                len(model.module.code_for_node(operand).strip()) * (size - 1) > REPEATED_CHARACTERS:
            # Each term would repeat a long operand: it is bound to a name first.
            stmt = _statement_slot(model, node)
            if stmt is None:
                return None
            name = fresh_name(model, _operand_stem(operand), taken)
            taken.add(name)
            binds = [assign(name, operand)]
            terms = [_index(cst.Name(name), axis, i) for i in range(size)]
    value = _finish(kind, [_cast(t, cast) for t in terms], jnp, keepdims, axis, policy.back)
    replacements = _laid_out(model, node, value, binds, f"{_operand_stem(operand)}_{kind}", taken)
    if replacements is None:
        return None
    return plan(safe, message, replacements, imports)


# ---------------------------------------------------------------------------------------------
# Dtypes: what the unrolled form computes in, and when that is what the reduction computes in
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DtypePolicy:
    safe: bool
    cast: str | None = None  # on every term: "int" (`.astype(int)`), "float32"/"uint32" (`.astype(jnp.float32)`)
    note: str = ""
    back: str | None = None  # the result cast back to this narrow float (`.astype(jnp.float16)`)


def dtype_policy(model, kind: str, operand, scope, size: int) -> DtypePolicy:
    """The dtype condition each reduction needs for its unrolled form to give the same dtype and values.

    Proved for both x64 settings (the linter cannot know which one the program runs with), over
    every dtype the model says the operand may have (an operand of unknown dtype may have any):
    - Weak types: `jnp.sum`/`mean`/`max`/`min`/`norm` of a weakly typed array give a strongly typed
      result, the unrolled arithmetic keeps it weak (it then promotes differently): unsafe.
    - `max`/`min`: `jnp.maximum`/`jnp.minimum` of same-dtype lanes keep the dtype, NaNs propagate.
    - `sum`/`prod`: `jnp.sum` accumulates bool and ints narrower than the default (u)int in the
      default (u)int (int32/uint32; int64/uint64 with x64); `+` would stay bool (logical or) or int8
      (overflow). Plain `+`/`*` when the operand's dtype is its own accumulator dtype (float32/64,
      complex, default-width ints). float16/bfloat16: `jnp.sum` computes in float32 and rounds once;
      two terms round once too (float32 has more than 2p + 2 bits: the double rounding is innocuous);
      more terms are cast to float32 and the result back to the (known) narrow float, as `jnp.sum`
      computes; a mix of narrow floats cannot be spelled: unsafe. Bool and signed ints of any width: every term gets
      `.astype(int)`, the default int in both settings, which is what `jnp.sum` accumulates in.
      Unsigned ints: no cast spells uint32-or-uint64: unsafe, with `.astype(jnp.uint32)` (right without x64).
    - `mean`: float32/64 and complex are averaged in their own dtype; ints and bool of at most 32 bits
      in float32 (`jnp.mean`'s table, even with x64): every term gets `.astype(jnp.float32)`.
      float16/bfloat16 are averaged in float32 (`(a + b) / 2` could overflow): cast to float32 and back
      when the narrow float is known exactly, unsafe otherwise.
    - `norm`: float32/64 and complex; ints are converted and narrow floats upcast first: unsafe.
    """
    from jaxfuse_lint.model.dtypes import any_dtype, describe, sum_dtype

    known = model.dtype(operand, scope)
    facts = {x64: model.dtype(operand, scope, x64=x64) or any_dtype(x64) for x64 in (False, True)}
    shown = code_of(model, operand)
    what = f"`{shown}` is {describe(known)}" if known is not None else f"the dtype of `{shown}` is unknown"
    declare = (" (declare it: a jaxtyping annotation such as `Float[Array, \"n 2\"]` on the parameter, "
               "or `.astype(...)`)" if known is None else "")

    def every(pred) -> bool:
        return all(pred(d, x64) for x64, fact in facts.items() for d in fact)

    if known is None and not every(lambda d, x64: not d.weak):
        what = {"sum": "`jnp.sum` of bool or a narrow int counts in int32 where `+` would not",
                "prod": "`jnp.prod` of bool or a narrow int multiplies in int32 where `*` would not",
                "mean": "`jnp.mean` of ints averages in float32 where `(a + b) / n` would add ints first",
                "norm": "`jnp.linalg.norm` converts ints and upcasts float16 first",
                "max": "a weakly typed operand would give a weakly typed result",
                "min": "a weakly typed operand would give a weakly typed result"}[kind]
        return DtypePolicy(False, None, f"unsafe: the dtype of `{shown}` is unknown and {what}{declare}")
    if not every(lambda d, x64: not d.weak):
        return DtypePolicy(False, None, f"unsafe: {what} and may be weakly typed: `jnp.{kind}` gives a strongly "
                                        f"typed result, the unrolled arithmetic a weak one{declare}")
    if kind in ("max", "min"):
        return DtypePolicy(True)
    inexact = lambda d, x64: d.dtype_class in ("float", "complex")  # noqa: E731
    if kind in ("sum", "prod"):
        if every(lambda d, x64: sum_dtype(d, x64) == d and (d.dtype_class != "narrow-float" or size == 2)):
            return DtypePolicy(True)
        if every(lambda d, x64: d.kind in ("bool", "int")):
            return DtypePolicy(True, "int", f"{what}: each term is cast with `.astype(int)`, the default int "
                                            f"`jnp.{kind}` accumulates in")
        narrow = _one_narrow_float(facts)
        if narrow is not None:
            return DtypePolicy(True, "float32", f"{what}: the terms are added in float32 and the result rounded "
                                                f"once to {narrow}, as `jnp.{kind}` does", narrow)
        if every(lambda d, x64: sum_dtype(d, x64) == d or d.dtype_class == "narrow-float"):
            return DtypePolicy(False, None, f"unsafe: {what}; `jnp.{kind}` accumulates float16/bfloat16 in "
                                            f"float32 and rounds once, {size} terms round after each step{declare}")
        if known is not None and every(lambda d, x64: d.kind == "uint"):
            return DtypePolicy(False, "uint32", f"unsafe: {what}; each term is cast with `.astype(jnp.uint32)`, "
                                                f"what `jnp.{kind}` accumulates in without x64 (with x64: uint64)")
        return DtypePolicy(False, None, f"unsafe: {what}; `jnp.{kind}` accumulates bool and narrow ints in the "
                                        f"default int, where `{'+' if kind == 'sum' else '*'}` would keep the "
                                        f"operand's dtype{declare}")
    if kind == "mean":
        if every(inexact):
            return DtypePolicy(True)
        if every(lambda d, x64: d.kind in ("bool", "int", "uint") and not d.name.endswith("64")):
            return DtypePolicy(True, "float32", f"{what}: each term is cast with `.astype(jnp.float32)`, the "
                                                "dtype `jnp.mean` averages ints in")
        narrow = _one_narrow_float(facts)
        if narrow is not None:
            return DtypePolicy(True, "float32", f"{what}: averaged in float32 and rounded once to {narrow}, as "
                                                "`jnp.mean` does", narrow)
        return DtypePolicy(False, None, f"unsafe: {what}; `jnp.mean` averages ints and float16/bfloat16 in "
                                        f"float32 (or float64), where `(a + b) / {size}` would not{declare}")
    if every(inexact):
        return DtypePolicy(True)
    return DtypePolicy(False, None, f"unsafe: {what}; `jnp.linalg.norm` converts ints to float and upcasts "
                                    f"float16/bfloat16 before squaring{declare}")


def _one_narrow_float(facts) -> str | None:
    """float16 or bfloat16 when the operand is known to be exactly that (strong) in both x64 settings."""
    names = {d.name for fact in facts.values() for d in fact}
    if len(names) == 1 and names <= {"float16", "bfloat16"} and not any(d.weak for f in facts.values() for d in f):
        return names.pop()
    return None


def _cast_to(cast: str | None, jnp) -> cst.BaseExpression | None:
    if cast == "int":
        return cst.Name("int")
    if cast in ("float32", "uint32"):
        return jnp.attr(cast)
    return None


def _cast(term: cst.BaseExpression, dtype: cst.BaseExpression | None) -> cst.BaseExpression:
    if dtype is None:
        return term
    return call(cst.Attribute(atom(term), cst.Name("astype")), dtype)


def _finish(kind, terms, jnp, keepdims, axis, back: str | None = None) -> cst.BaseExpression:
    result = _combine(kind, terms, jnp)
    if back is not None:
        result = _cast(result, jnp.attr(back))  # computed in float32, rounded once to the narrow float
    if keepdims:
        result = subscript(result, new_axis_index(axis))
    return result


def _broadcast_split(model, node, operand, axis, size, shape, scope):
    """Split a product whose factors' sizes are partly unknown by broadcasting those factors first.

    `jnp.sum(kvm * x, axis=1)`, x's size unknown  ->  `_, x_full = jnp.broadcast_arrays(kvm, x)` on the
    line before, then `kvm[:, 0] * x_full[:, 0] + kvm[:, 1] * x_full[:, 1]`. A broadcast factor has the product's
    full shape, so indexing it is always right. Only where a statement can be inserted: the reduction
    runs whenever its statement does (not in a lambda, comprehension or conditional expression).
    """
    if not isinstance(operand, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)) or axis is None:
        return None
    stmt = _statement_slot(model, node)
    if stmt is None:
        return None
    fn = model.function_of(node)
    rank = shape.rank if shape is not None else None
    for eff_axis in ([axis] + ([axis - rank] if axis >= 0 and rank is not None else [])):
        leaves: list = []
        if not _collect_leaves(model, operand, eff_axis, size, rank, scope, leaves):
            continue
        unknown = [leaf for leaf, known in leaves if not known]
        arrays = [leaf for leaf, known in leaves if known != "scalar"]
        if not unknown:
            continue
        code = model.module.code_for_node
        order: list[str] = []
        firsts: dict[str, cst.BaseExpression] = {}
        for leaf in arrays:
            key = code(leaf)
            if key not in firsts:
                firsts[key] = leaf
                order.append(key)
        if len(order) == 1:
            # One array (the rest are scalars): it has the operand's shape, so indexing it is right
            # and broadcasting it would be a no-op (`x_full, = jnp.broadcast_arrays(x)`).
            return [_split(model, operand, eff_axis, i, scope) for i in range(size)], stmt, None, [], None
        bjnp = jnp_name(model, [scope])
        if bjnp is None:
            return None
        unknown_keys = {code(leaf) for leaf in unknown}
        taken: set[str] = set()
        subst: dict[str, str] = {}
        for key in order:
            if key in unknown_keys:
                name = fresh_name(model, f"{_stem(firsts[key])}_full", taken)
                taken.add(name)
                subst[key] = name
        reads_underscore = "_" in fn.bindings or any(
            is_inside(model, r.name, fn.node) for r in model.index.reads_named("_"))
        targets = []
        for key in order:
            if key in subst:
                targets.append(subst[key])
            elif reads_underscore:
                placeholder = fresh_name(model, "unused", taken)
                taken.add(placeholder)
                targets.append(placeholder)
            else:
                targets.append("_")
        call_node = call(bjnp.attr("broadcast_arrays"), *[firsts[k] for k in order])
        target = cst.Tuple([cst.Element(cst.Name(t)) for t in targets], lpar=[], rpar=[])
        bind = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], call_node)])
        terms = [_split(model, operand, eff_axis, i, scope, subst) for i in range(size)]
        return terms, stmt, bind, [k for k in order if k in subst], bjnp
    return None


def _laid_out(model, node, value, binds: list, result_name: str, taken: set[str]) -> dict | None:
    """The replacements that write `value` in place of the reduction `node`, after the statements
    `binds`, in lines a person would write: where the statement would grow past its allowed width
    (`_layout.allowed_width`), the unrolled value is bound to a name first (`x_sum = ...`, over
    several lines if need be) and the statement reads the name. None when it cannot fit."""
    stmt = _statement_slot(model, node)
    original = model.statement_of(node)
    width = allowed_width(model, original)
    indent = indent_of(model, original)
    new_stmt = replace_within(original, {node: in_context(model, node, value)})
    # Other reductions of the statement may be unrolled by fixes applied with this one: leave
    # room for them to grow as much again.
    if code_width(model, new_stmt, indent) + _other_reductions(model, original, node) <= width:
        if not binds:
            return {node: in_context(model, node, value)}
        return {stmt: cst.FlattenSentinel([*_lead(binds, stmt), new_stmt.with_changes(leading_lines=[])])}
    if stmt is None:
        return None  # no line to put the value on before this one
    small = stmt.body[0] if len(stmt.body) == 1 else None
    if isinstance(small, cst.Return) and small.value is node:  # `return <the reduction>`: laid out in place
        laid = statement(model, "return ", value, indent, width)
        if laid is None:
            return None
        laid = laid.with_changes(trailing_whitespace=stmt.trailing_whitespace)
        return {stmt: cst.FlattenSentinel([*_lead([*binds, laid], stmt)])} if binds else \
            {stmt: laid.with_changes(leading_lines=stmt.leading_lines)}
    name = fresh_name(model, result_name, taken)
    bound = assignment(model, name, value, indent, width)
    if bound is None:
        return None
    new_stmt = replace_within(stmt, {node: cst.Name(name)}).with_changes(leading_lines=[])
    return {stmt: cst.FlattenSentinel([*_lead([*binds, bound], stmt), new_stmt])}


# A fix repeats an operand in every term only while the copies add no more than this many characters.
REPEATED_CHARACTERS = 20
_REDUCTIONS = frozenset({"sum", "mean", "prod", "max", "min", "norm", "dot", "einsum", "amax", "amin"})


def _other_reductions(model, stmt, node) -> int:
    """The length of the statement's other reduction calls (`jnp.sum(...)`, `v.max(...)`)."""
    from jaxfuse_lint.model.scopes import walk

    inside = {id(n) for n in walk(node)}
    total = 0
    for n in walk(stmt):
        if isinstance(n, cst.Call) and id(n) not in inside and isinstance(n.func, cst.Attribute) and \
                n.func.attr.value in _REDUCTIONS and not is_inside(model, node, n):
            total += len(model.module.code_for_node(n).strip())
    return total


def _lead(statements: list, stmt) -> list:
    """The statements, the first taking over `stmt`'s leading blank lines and comments."""
    return [statements[0].with_changes(leading_lines=stmt.leading_lines), *statements[1:]]


def _indexed_whole(model, terms, operand) -> bool:
    """Whether the terms index the operand itself (`(a * b)[..., 0]`), not its factors."""
    code = model.module.code_for_node(operand).strip()
    return all(isinstance(t, cst.Subscript) and
               model.module.code_for_node(t.value.with_changes(lpar=[], rpar=[])).strip() == code for t in terms)


def _plain(e) -> bool:
    """A name, an attribute or a subscript of one with a literal index: cheap and short to repeat."""
    while isinstance(e, (cst.Attribute, cst.Subscript)):
        if isinstance(e, cst.Subscript) and not all(
                isinstance(el.slice, cst.Index) and isinstance(el.slice.value, (cst.Integer, cst.Ellipsis, cst.Name))
                or isinstance(el.slice, cst.Slice) for el in e.slice):
            return False
        e = e.value
    return isinstance(e, cst.Name)


def _operand_stem(e) -> str:
    """A name for a bound operand made from the user's names: `x_w` for `x[:, None, :] * w`."""
    if isinstance(e, cst.Call):  # `pair(x)` -> `pair_x`
        callee = e.func.attr.value if isinstance(e.func, cst.Attribute) else \
            e.func.value if isinstance(e.func, cst.Name) else "value"
        first = _stem(e.args[0].value) if e.args else "factor"
        return callee if first == "factor" else f"{callee}_{first}"
    stems: list[str] = []
    stack = [e]
    while stack:
        n = stack.pop(0)
        if isinstance(n, cst.BinaryOperation):
            stack[:0] = [n.left, n.right]
        elif isinstance(n, (cst.Integer, cst.Float)):
            continue
        else:
            stem = _stem(n)
            if stem not in stems and stem != "factor":
                stems.append(stem)
    return "_".join(stems[:2]) or "operand"


def _statement_slot(model, node) -> cst.SimpleStatementLine | None:
    """The statement of `node` when statements can go before it: a line of a function's block, and
    `node` runs whenever it does (not in a lambda, comprehension or conditional expression)."""
    stmt = model.statement_of(node)
    if not isinstance(stmt, cst.SimpleStatementLine) or not isinstance(model.parent(stmt), cst.IndentedBlock):
        return None
    fn = model.function_of(node)
    if fn is None or fn.is_lambda:
        return None
    for a in model.ancestors(node):
        if a is stmt:
            break
        if isinstance(a, (cst.Lambda, cst.IfExp, cst.BooleanOperation, cst.ListComp, cst.SetComp, cst.DictComp,
                          cst.GeneratorExp)):
            return None
    from jaxfuse_lint.model.scopes import walk

    if any(isinstance(n, cst.NamedExpr) for n in walk(stmt)):
        return None
    return stmt


def _collect_leaves(model, e, axis, size, rank, scope, out) -> bool:
    """The leaves of an elementwise operand: (leaf, "lane" | "scalar" | None for unknown size)."""
    if isinstance(e, cst.BinaryOperation):
        if isinstance(e.operator, cst.MatrixMultiply):
            return False
        return (_collect_leaves(model, e.left, axis, size, rank, scope, out)
                and _collect_leaves(model, e.right, axis, size, rank, scope, out))
    if isinstance(e, cst.UnaryOperation):
        if isinstance(e.operator, cst.Not):
            return False
        return _collect_leaves(model, e.expression, axis, size, rank, scope, out)
    if isinstance(e, cst.Call) and model.qn(e.func, scope) in _SPLITTABLE_CALLS:
        if any(a.keyword is not None or a.star for a in e.args):
            return False
        return all([_collect_leaves(model, a.value, axis, size, rank, scope, out) for a in e.args])
    out.append((e, _leaf_full(model, e, axis, size, rank, scope)))
    return True


def _stem(e) -> str:
    """The user's name for a factor: `x` for `x`, `self.x`, `x.T`, `x[:, 1:]` and `jnp.sin(x)`."""
    if isinstance(e, cst.Name):
        return e.value
    if isinstance(e, cst.Attribute):
        if e.attr.value in ("T", "mT", "real", "imag"):  # a view of the array, not its name
            return _stem(e.value)
        return e.attr.value
    if isinstance(e, cst.Subscript):
        return _stem(e.value)
    if isinstance(e, cst.Call) and e.args:
        return _stem(e.args[0].value)
    return "factor"


# ---------------------------------------------------------------------------------------------
def _keepdims(node: cst.Call, kind: str, form: str) -> bool | None:
    """The literal keepdims value, or None when the call has arguments the fix cannot keep."""
    kws = keyword_names(node)
    npos = n_positional(node)
    if form == "method":
        if npos > 1 or kws - {"axis", "keepdims"}:
            return None
    elif kind == "norm":
        # norm(x, ord=None, axis=None, keepdims=False)
        if kws - {"x", "axis", "keepdims", "ord"} or npos > 4:
            return None
        ord_ = keyword(node, "ord") or positional(node, 1)
        if ord_ is not None and not (isinstance(ord_, cst.Name) and ord_.value == "None"):
            return None
        if npos == 4:
            kd = literal_bool(positional(node, 3))
            return kd
    else:
        if kws - {"a", "x", "axis", "keepdims"} or npos > 2:
            return None
    kd_expr = keyword(node, "keepdims")
    if kd_expr is None:
        return False
    return literal_bool(kd_expr)


def _lanes(model, operand, axis, size, shape, scope):
    """(element i along the axis for each i, the name that blocked splitting or None).

    A compound operand is split into its factors when that is provably right; otherwise it
    is indexed as a whole.
    """
    rank = shape.rank if shape is not None else None
    blockers: list[cst.BaseExpression] = []
    for mode in ("as-is", "negative"):
        if mode == "negative":
            if axis is None or axis < 0 or rank is None:
                break
            eff_axis = axis - rank
        else:
            eff_axis = axis
        if _splittable(model, operand, eff_axis, size, rank, scope, blockers):
            return [_split(model, operand, eff_axis, i, scope) for i in range(size)], None
    whole = [_index(operand, axis, i, model, scope) for i in range(size)]
    blocker = next((b for b in blockers if isinstance(b, cst.Name)), None)
    return whole, (blocker.value if blocker is not None and axis is not None else None)


def _leaves_ok(model, e, axis, size, rank, scope, blockers) -> bool:
    if isinstance(e, cst.BinaryOperation):
        if isinstance(e.operator, cst.MatrixMultiply):
            return False
        left = _leaves_ok(model, e.left, axis, size, rank, scope, blockers)
        right = _leaves_ok(model, e.right, axis, size, rank, scope, blockers)
        return left and right
    if isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
        return _leaves_ok(model, e.expression, axis, size, rank, scope, blockers)
    if isinstance(e, cst.Call) and model.qn(e.func, scope) in _SPLITTABLE_CALLS:
        if any(a.keyword is not None or a.star for a in e.args):
            return False
        return all([_leaves_ok(model, a.value, axis, size, rank, scope, blockers) for a in e.args])
    if _leaf_full(model, e, axis, size, rank, scope) is not None:
        return True
    blockers.append(e)
    return False


def _splittable(model, e, axis, size, rank, scope, blockers) -> bool:
    # Splitting a bare leaf is just indexing it; only compound operands are split.
    if not isinstance(e, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)):
        return False
    if isinstance(e, cst.Call) and model.qn(e.func, scope) not in _SPLITTABLE_CALLS:
        return False
    return _leaves_ok(model, e, axis, size, rank, scope, blockers)


def _leaf_full(model, e, axis, size, rank, scope) -> str | None:
    """"scalar" (broadcast as is), "lane" (index it), or None (unknown: cannot split)."""
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return "scalar"
    s = model.shape(e, scope)
    if s is None:
        return None
    if s.rank == 0:
        return "scalar"
    if axis is None:
        return "lane" if s.rank == 1 and s.size(0) == size else None
    if axis >= 0:
        return "lane" if s.rank is not None and s.rank == rank and s.size(axis) == size else None
    return "lane" if s.size(axis) == size else None


def _split(model, e, axis, i, scope, subst=None) -> cst.BaseExpression:
    if isinstance(e, cst.BinaryOperation):
        return e.with_changes(left=_split(model, e.left, axis, i, scope, subst),
                              right=_split(model, e.right, axis, i, scope, subst))
    if isinstance(e, cst.UnaryOperation):
        return e.with_changes(expression=_split(model, e.expression, axis, i, scope, subst))
    if isinstance(e, cst.Call) and model.qn(e.func, scope) in _SPLITTABLE_CALLS:
        args = [a.with_changes(value=_split(model, a.value, axis, i, scope, subst)) for a in e.args]
        return e.with_changes(args=args)
    if subst and model.module.code_for_node(e) in subst:
        return subscript(cst.Name(subst[model.module.code_for_node(e)]), lane_index(axis, i))
    if _is_scalar(model, e, scope):
        return e
    return atom(_index(e, axis, i, model, scope))


def _is_scalar(model, e, scope) -> bool:
    if isinstance(e, (cst.Integer, cst.Float, cst.Imaginary)):
        return True
    s = model.shape(e, scope)
    return s is not None and s.rank == 0


def _index(e: cst.BaseExpression, axis: int | None, i: int, model=None, scope=None) -> cst.BaseExpression:
    simplified = _compose_slice(e, axis, i)
    if simplified is None and model is not None:
        simplified = _compose_stack(model, e, axis, i, scope)
    if simplified is not None:
        return simplified
    return subscript(e, lane_index(axis, i))


def _compose_stack(model, e, axis, i, scope) -> cst.BaseExpression | None:
    """`jnp.stack([a, b], axis=k)` then element i on axis k  ->  the i-th stacked expression."""
    if not isinstance(e, cst.Call) or e.lpar or axis is None:
        return None
    if model.qn(e.func, scope) != "jax.numpy.stack":
        return None
    seq = positional(e, 0)
    ax = keyword(e, "axis") or positional(e, 1)
    stack_axis = 0 if ax is None else _int(ax)
    if stack_axis != axis or not isinstance(seq, (cst.List, cst.Tuple)):
        return None
    if set(keyword_names(e)) - {"axis"} or n_positional(e) > 2 or i >= len(seq.elements):
        return None
    if any(isinstance(el, cst.StarredElement) for el in seq.elements):
        return None
    return seq.elements[i].value


def _int(e) -> int | None:
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if (isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus)
            and isinstance(e.expression, cst.Integer)):
        return -int(e.expression.value, 0)
    return None


def _compose_slice(e, axis, i) -> cst.BaseExpression | None:
    """`x[..., :3]` then element i on axis -1  ->  `x[..., i]` (and `x[:, 1:3]` on axis 1 -> `x[:, 1 + i]`)."""
    if not isinstance(e, cst.Subscript) or e.lpar or axis is None:
        return None
    els = list(e.slice)
    want = lane_index(axis, 0)
    if len(els) != len(want):
        return None
    pos = axis if axis >= 0 else 1
    for j, (have, w) in enumerate(zip(els, want)):
        h = have.slice
        if j == pos:
            if not isinstance(h, cst.Slice) or h.step is not None:
                return None
            lo = 0
            if h.lower is not None:
                if not isinstance(h.lower, cst.Integer):
                    return None
                lo = int(h.lower.value, 0)
            if h.upper is not None:
                if not isinstance(h.upper, cst.Integer) or lo + i >= int(h.upper.value, 0):
                    return None
            else:
                return None
            continue
        if isinstance(w, cst.Slice):
            if not (isinstance(h, cst.Slice) and h.lower is None and h.upper is None and h.step is None):
                return None
        elif isinstance(w.value, cst.Ellipsis):
            if not (isinstance(h, cst.Index) and isinstance(h.value, cst.Ellipsis)):
                return None
        else:
            return None
    new_els = []
    for j, have in enumerate(els):
        if j == pos:
            h = have.slice
            lo = int(h.lower.value, 0) if h.lower is not None else 0
            new_els.append(have.with_changes(slice=cst.Index(cst.Integer(str(lo + i)))))
        else:
            new_els.append(have)
    return e.with_changes(slice=new_els)


def _fold(terms, op_type) -> cst.BaseExpression:
    p = PRECEDENCE[op_type]
    wrapped = [t if precedence(t) > p else paren(t) for t in terms]
    out = wrapped[0]
    for t in wrapped[1:]:
        out = binop(out, op_type(), t)
    return out


def _combine(kind, terms, jnp) -> cst.BaseExpression:
    if kind == "sum":
        return _fold(terms, cst.Add)
    if kind == "mean":
        total = _fold(terms, cst.Add)
        return binop(paren(total) if len(terms) > 1 else atom(total), cst.Divide(), cst.Integer(str(len(terms))))
    if kind == "prod":
        return _fold(terms, cst.Multiply)
    if kind in ("max", "min"):
        fn = jnp.attr("maximum" if kind == "max" else "minimum")
        out = terms[0]
        for t in terms[1:]:
            out = call(fn, out, t)
        return out
    # norm: sqrt(sum(|x_i|^2))
    squares = [binop(call(jnp.attr("abs"), t), cst.Power(), cst.Integer("2")) for t in terms]
    return call(jnp.attr("sqrt"), _fold(squares, cst.Add))


# ---------------------------------------------------------------------------------------------
def _dot(violation, model, scope):
    data = violation.data
    node: cst.Call = violation.node
    a, b, size = data.get("a"), data.get("b"), data.get("size")
    sa, sb = data.get("shape_a"), data.get("shape_b")
    if a is None or b is None or not isinstance(size, int):
        return None
    if sb is None or sb.rank != 1 or sb.size(0) != size:
        return None
    if sa is None or sa.rank == 0 or (sa.rank is None and sa.size(-1) != size):
        return None
    if sa.size(-1) not in (None, size):
        return None
    if data.get("form") == "method":
        if n_positional(node) != 1 or keyword_names(node):
            return None
    elif n_positional(node) + len(keyword_names(node) & {"a", "b"}) != 2 or keyword_names(node) - {"a", "b"}:
        return None
    purity = Purity.of(model)
    if not (purity.info(a, scope).pure and purity.info(b, scope).pure):
        return None
    terms = [binop(atom(_index(a, -1, i)), cst.Multiply(), atom(_index(b, None, i))) for i in range(size)]
    result = in_context(model, node, _fold(terms, cst.Add))
    safe, note = _dot_dtypes(model, a, b, scope)
    return plan(safe, f"Unroll the dot product over its {size}-element axis into {size} explicit products{note}",
                {node: result})


def _dot_dtypes(model, a, b, scope) -> tuple[bool, str]:
    """Integer dots are exact (wrapping) in any order and width: the products give the same bits.
    Float dots are not: `jnp.dot` runs at the backend's default matmul precision (TF32 or bfloat16
    passes for float32 on GPUs and TPUs) while the explicit products are full precision, and
    float16/bfloat16 dots accumulate in float32."""
    from jaxfuse_lint.model.dtypes import describe, only

    facts = [model.dtype(e, scope, x64=x64) for e in (a, b) for x64 in (False, True)]
    if all(only(f, lambda d: d.kind in ("int", "uint") and not d.weak) for f in facts):
        return True, ""
    fa = model.dtype(a, scope)
    fb = model.dtype(b, scope)
    if fa is None or fb is None:
        return False, ("; unsafe: the operands' dtypes are unknown, and for floats `jnp.dot` uses the backend's "
                       "matmul precision (TF32/bfloat16 passes on GPUs/TPUs) where the products are exact float32")
    return False, (f"; unsafe: the operands are {describe(fa)} and {describe(fb)}: `jnp.dot` uses the backend's "
                   "matmul precision (TF32/bfloat16 passes on GPUs/TPUs), the explicit products do not")


__all__ = ["CODE", "build_fix"]
