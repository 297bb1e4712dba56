"""JF102 codemod: a meshgrid of fftfreq/rfftfreq vectors becomes `jnp.indices` plus index arithmetic.

    kx, ky, kz = jnp.meshgrid(kx, ky, kz, indexing="ij")
becomes
    kx, ky, kz = jnp.indices((n0, n1, n2 // 2 + 1))
    kx, ky, kz = (jnp.where(kx < (n0 + 1) // 2, kx, kx - n0) / (d * n0), ..., kz / (d * n2))

with the arithmetic of `jnp.fft.fftfreq` / `rfftfreq` exactly (same values, bit for bit; with a
Python float `d` the quotient is cast with `.astype(float)` so that it is strongly typed, as
fftfreq's result is: dtype condition, `d` absent or a Python number), the
first two axes swapped for `indexing="xy"` (meshgrid's default), and the 1-D assignments that
only fed the meshgrid removed.

    python -m libcst.tool codemod -x --no-format jaxfuse_lint.engine.libcst_commands.GridFromIndicesCommand PATH
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods._layout import allowed_width, indent_of
from jaxfuse_lint.codemods.plan import FixPlan, ImportSpec
from jaxfuse_lint.model import Kind, keyword, positional
from jaxfuse_lint.model.fusion import expression_names, reaching_binding, reaching_value

CODE = "JF102"

_ATOMIC = (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float)


def _simple(e: cst.BaseExpression, depth: int = 0) -> bool:
    """Cheap, side-effect-free expressions that may be written more than once."""
    if depth > 12:
        return False
    if isinstance(e, (cst.Name, cst.Integer, cst.Float)):
        return True
    if isinstance(e, cst.Attribute):
        return _simple(e.value, depth + 1)
    if isinstance(e, cst.Subscript):
        return _simple(e.value, depth + 1) and all(
            isinstance(el.slice, cst.Index) and _simple(el.slice.value, depth + 1) for el in e.slice)
    if isinstance(e, cst.BinaryOperation):
        return _simple(e.left, depth + 1) and _simple(e.right, depth + 1)
    if isinstance(e, cst.UnaryOperation):
        return _simple(e.expression, depth + 1)
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value in ("len", "int", "float"):
        return all(a.keyword is None and not a.star and _simple(a.value, depth + 1) for a in e.args)
    return False


def _freq_args(call: cst.Call) -> tuple[cst.BaseExpression, cst.BaseExpression | None] | None:
    """(n, d) of `fftfreq(n[, d])`; None with any other argument (dtype=, device=, *args)."""
    if any(a.star for a in call.args):
        return None
    if any(a.keyword is not None and a.keyword.value not in ("n", "d") for a in call.args):
        return None
    if len(call.args) > 2:
        return None
    n = positional(call, 0) or keyword(call, "n")
    d = positional(call, 1) or keyword(call, "d")
    if n is None:
        return None
    return n, d


def _spacing_times_n(model, d: cst.BaseExpression | None, n_text: str) -> cst.BaseExpression | None:
    """`L` when the spacing `d` is written `L / n` (so `d * n` is `L`, up to the last bit of the
    product, as reordered arithmetic would give), else None."""
    if isinstance(d, cst.BinaryOperation) and isinstance(d.operator, cst.Divide) and not d.lpar and \
            model.module.code_for_node(d.right).strip() == n_text:
        return d.left
    return None


def _same_names(model, expr, from_scope, to_scope, forbidden: set[str]) -> bool:
    names = expression_names(expr)
    if names is None:
        return False
    for name in names:
        if name.value in forbidden:
            return False
        a = model.lookup(name.value, from_scope)
        b = model.lookup(name.value, to_scope)
        if a is None and b is None:
            continue
        if a is None or b is None or a[0] is not b[0] or a[1] is not b[1] or len(a[1]) != 1:
            return False
    return True


def _removable_source(model, name: cst.Name, stmt_line: cst.SimpleStatementLine, assign: cst.Assign,
                      targets: list[str], args: list[cst.BaseExpression]):
    """The 1-D `kx = jnp.fft.fftfreq(...)` line feeding this meshgrid argument, when nothing
    else reads that value (so the line can go)."""
    found = reaching_binding(model, name)
    if found is None:
        return None
    owner, b = found
    if owner is not model.scope_of(name) or b.kind != "assign" or b.index is not None:
        return None
    src = b.node
    if not isinstance(src, cst.Assign) or len(src.targets) != 1 or not isinstance(src.targets[0].target, cst.Name):
        return None
    line = model.parent(src)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    if model.parent(line) is not model.parent(stmt_line):
        return None
    if any(ll.comment is not None for ll in line.leading_lines):
        return None
    arg_ids = {id(a) for a in args}
    for read in model.index.reads_named(name.value, owner):
        if id(read.name) in arg_ids:
            continue
        found_r = model.lookup(read.name.value, read.scope)
        if found_r is None or found_r[0] is not owner:
            continue
        if read.name.value in targets and read.scope is owner:
            reach = reaching_binding(model, read.name)
            if reach is not None and reach[1].node is assign:
                continue  # reads the grid the meshgrid line binds, not the 1-D vector
        return None
    return line


def _atom(text: str, node: cst.BaseExpression) -> str:
    return text if isinstance(node, _ATOMIC) else f"({text})"


# Only scalings: an added offset after a multiplication may be contracted into an FMA by XLA in
# one program and not the other (measured: 1 ulp), so `+`/`-` get no fix.
_PREC = {cst.Multiply: 6, cst.Divide: 6}


def _prec(node: cst.BaseExpression) -> int:
    if node.lpar or isinstance(node, _ATOMIC):
        return 100
    if isinstance(node, cst.BinaryOperation):
        return _PREC.get(type(node.operator), 0)
    if isinstance(node, cst.UnaryOperation):
        return 7
    return 0


class _Sizes:
    """Names for the grid's sizes that are not names already (`rho.shape[0]` -> `nx`), so that each
    formula reads `kx - nx`, not `kx - rho.shape[0]` three times: bound on a line before the grid.
    Formulas get a placeholder per size; `names` says what each becomes, once all are known (a size
    shared by every axis is `n`, one axis's is `n` and the axis letter: `nx` for `kx`)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}  # the size as written -> its placeholder
        self.users: dict[str, list[str]] = {}  # the size as written -> the grids that use it
        self.wheres: dict[str, str] = {}  # a grid -> the `jnp.where(...)` that makes its frequencies

    def name(self, text: str, node: cst.BaseExpression, t: str) -> str:
        if isinstance(node, (cst.Name, cst.Integer)):
            return text
        placeholder = self.texts.setdefault(text, f"@size{len(self.texts)}@")
        self.users.setdefault(text, []).append(t)
        return placeholder

    def names(self, model, scope) -> dict[str, str]:
        """placeholder -> the name it stands for: not one the function or module already uses."""
        out: dict[str, str] = {}
        taken: set[str] = set()
        for text, placeholder in self.texts.items():
            users = self.users[text]
            base = "n" if len(set(users)) > 1 or len(users[0]) != 2 else f"n{users[0][1]}"
            name, i = base, 2
            while name in taken or model.lookup(name, scope) is not None or name in _names_read(model, scope):
                name, i = f"{base}{i}", i + 1
            taken.add(name)
            out[placeholder] = name
        return out

    def statement(self, names: dict[str, str]) -> str | None:
        if not self.texts:
            return None
        return f"{', '.join(names[p] for p in self.texts.values())} = {', '.join(self.texts)}\n"


def _names_read(model, scope) -> set[str]:
    return {r.name.value for r in getattr(scope, "reads", ())}


def _grid_formula(model, expr: cst.BaseExpression, scope, t: str, mesh_scope, forbidden: set[str], jnp: str,
                  depth: int = 0, unproven: list | None = None, sizes: _Sizes | None = None
                  ) -> tuple[str, str, int] | None:
    """(length, per-grid formula in terms of the index array `t`, the formula's precedence) of
    one meshgrid argument: `fftfreq(n[, d])`, `rfftfreq(n[, d])`, a name bound to one, or one
    negated, multiplied or divided by Python scalars (`2 * jnp.pi * fftfreq(n, d)`). The scalar arithmetic
    stays in its original order around the formula, so every element is computed by the same
    operations as before."""
    if depth > 8:
        return None
    code = model.module.code_for_node
    if isinstance(expr, cst.Name):
        found = reaching_value(model, expr)
        if found is None:
            return None
        return _grid_formula(model, found[0], found[1], t, mesh_scope, forbidden, jnp, depth + 1, unproven, sizes)
    if isinstance(expr, cst.Call):
        qn = model.qn(expr.func, scope)
        if qn not in ("jax.numpy.fft.fftfreq", "jax.numpy.fft.rfftfreq"):
            return None
        nd = _freq_args(expr)
        if nd is None:
            return None
        n, d = nd
        for e in (n, d):
            if e is not None and not (_simple(e) and _same_names(model, e, scope, mesh_scope, forbidden)):
                return None
        n_text = code(n).strip()
        pn = _atom(sizes.name(n_text, n, t), n) if sizes is not None else _atom(n_text, n)
        spacing = _spacing_times_n(model, d, n_text)
        if d is None:
            denom = pn
        elif spacing is not None:  # `d = L / n`: `d * n` is `L`
            denom = _atom(code(spacing).strip(), spacing)
        else:
            denom = f"({_atom(code(d).strip(), d)} * {pn})"
        index = f"{jnp}.where({t} < ({pn} + 1) // 2, {t}, {t} - {pn})" if qn.endswith(".fftfreq") else t
        if sizes is not None and index != t:
            sizes.wheres[t] = index
        formula = f"{index} / {denom}"
        length = pn if qn.endswith(".fftfreq") else f"{pn} // 2 + 1"
        if d is None:
            return length, formula, 6
        # Dtype condition: `fftfreq` is a strongly typed default float. The index array divided by
        # `d * n` is too when d is a Python int; with a Python float it is weakly typed, and
        # `.astype(float)` (the default float, a no-op on the values) makes it strong again.
        d_dtype = model.dtype(d, scope)
        if d_dtype is not None and all(x.weak and x.kind == "int" for x in d_dtype):
            return length, formula, 6
        if (d_dtype is None or not all(x.weak for x in d_dtype)) and unproven is not None:
            unproven.append(code(d).strip())  # it may be an array: its dtype and weak type decide the result's
        if model.lookup("float", mesh_scope) is not None:
            return None
        if spacing is not None and isinstance(spacing, cst.Float) and float(spacing.value) == 1.0:
            return length, f"{index}.astype(float)", 100  # `/ 1.0` then to float is `.astype(float)`
        return length, f"({formula}).astype(float)", 100
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _grid_formula(model, expr.expression, scope, t, mesh_scope, forbidden, jnp, depth + 1, unproven,
                              sizes)
        if inner is None:
            return None
        text = inner[1] if inner[2] > 7 else f"({inner[1]})"
        return inner[0], f"-{text}", 7
    if isinstance(expr, cst.BinaryOperation) and type(expr.operator) in _PREC:
        op = code(expr.operator).strip()
        prec = _PREC[type(expr.operator)]
        for side, other, left in ((expr.left, expr.right, True), (expr.right, expr.left, False)):
            inner = _grid_formula(model, side, scope, t, mesh_scope, forbidden, jnp, depth + 1, unproven, sizes)
            if inner is None:
                continue
            # The other operand must be a Python scalar (a vector would broadcast differently
            # against the grid) that means the same at the meshgrid.
            if model.kind(other, scope) is not Kind.STATIC or not _simple(other) or \
                    not _same_names(model, other, scope, mesh_scope, forbidden):
                return None
            shape = model.shape(other, scope)
            if shape is not None and shape.rank not in (None, 0):
                return None
            o = code(other).strip()
            # Left-associative: the left operand needs parentheses below the operator's
            # precedence, the right one at it too (keeps the original grouping).
            if left:
                a = inner[1] if inner[2] >= prec else f"({inner[1]})"
                b = o if _prec(other) > prec else f"({o})"
            else:
                a = o if _prec(other) >= prec else f"({o})"
                b = inner[1] if inner[2] > prec else f"({inner[1]})"
            return inner[0], f"{a} {op} {b}", prec
        return None
    return None


def build_fix(violation, model, settings) -> FixPlan | None:
    call = violation.node
    data = violation.data
    indexing = data.get("indexing")
    args, sources = data.get("args"), data.get("sources")
    if indexing not in ("xy", "ij") or not args or len(args) < 2:
        return None
    if any(a.star for a in call.args):
        return None
    if any(a.keyword is not None and a.keyword.value not in ("indexing", "copy", "sparse") for a in call.args):
        return None
    if any(s is None or s.kind not in ("fftfreq", "rfftfreq") for s in sources):
        return None
    assign = model.parent(call)
    if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != len(args):
        return None
    if not all(isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements):
        return None
    names = [el.value.value for el in target.elements]
    if len(set(names)) != len(names):
        return None
    line = model.parent(assign)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    scope = data["scope"]
    forbidden = set(names)
    sizes, formulas = [], []
    jnp, imports = _jnp_prefix(model, call, scope)
    unproven: list[str] = []
    size_names = _Sizes()
    for t, arg in zip(names, args):
        found = _grid_formula(model, arg, scope, t, scope, forbidden, jnp, unproven=unproven, sizes=size_names)
        if found is None:
            return None
        sizes.append(found[0])
        formulas.append(found[1])
    k = len(names)
    perm = list(range(k))
    if indexing == "xy":
        perm[0], perm[1] = 1, 0
    placeholders = size_names.names(model, scope)

    def named(text: str) -> str:
        for placeholder, name in placeholders.items():
            text = text.replace(placeholder, name)
        return text

    first_targets = ", ".join(names[perm[a]] for a in range(k))
    dims = ", ".join(named(sizes[perm[a]]) for a in range(k))
    first = cst.parse_statement(f"{first_targets} = {jnp}.indices(({dims}))\n")
    indent = indent_of(model, line)
    width = allowed_width(model, line)
    lines = _formula_lines(names, formulas, size_names.wheres, named, len(indent), width)
    if lines is None:
        return None  # a formula that does not fit on a line: not a rewrite a person would keep
    sized = size_names.statement(placeholders)
    # The meshgrid line's comment stays on the grid's line; its leading lines go with the first.
    first = first.with_changes(trailing_whitespace=line.trailing_whitespace)
    statements = [*([cst.parse_statement(sized)] if sized else []), first,
                  *(cst.parse_statement(text + "\n") for text in lines)]
    statements[0] = statements[0].with_changes(leading_lines=line.leading_lines)
    replacements: dict = {line: cst.FlattenSentinel(statements)}
    for arg in args:
        if isinstance(arg, cst.Name):
            dead = _removable_source(model, arg, line, assign, names, args)
            if dead is not None:
                replacements[dead] = cst.RemovalSentinel.REMOVE
    message = "Build the grid from `jnp.indices` with fftfreq's index arithmetic"
    if unproven:
        shown = ", ".join(f"`{u}`" for u in dict.fromkeys(unproven))
        message += (f"; unsafe: the dtype of the spacing {shown} is unknown (a Python number keeps the grid's dtype; "
                    "an array could change it)")
    return FixPlan(
        applicability=Applicability.UNSAFE if unproven else Applicability.SAFE,
        message=message,
        replacements=replacements,
        imports=imports,
    )


def _formula_lines(names: list[str], formulas: list[str], wheres: dict[str, str], named, indent: int,
                   width: int) -> list[str] | None:
    """The assignments of the grids' values: one line for all when it fits, else one per grid
    (each formula reads only its own index array), and a grid whose line is still too long gets
    its `jnp.where` on a line of its own first. None when a line still does not fit."""
    formulas = [named(f) for f in formulas]
    one = f"{', '.join(names)} = {', '.join(formulas)}"
    if indent + len(one) <= width:
        return [one]
    lines = []
    for t, formula in zip(names, formulas):
        text = f"{t} = {formula}"
        where = named(wheres[t]) if t in wheres else None
        if indent + len(text) > width and where is not None:
            lines.append(f"{t} = {where}")
            text = f"{t} = {formula.replace(where, t, 1)}"
        if indent + len(text) > width:
            return None
        lines.append(text)
    return lines


def _jnp_prefix(model, call: cst.Call, scope) -> tuple[str, tuple[ImportSpec, ...]]:
    """How this module spells jax.numpy: the meshgrid's own prefix, else the module's alias,
    else `jnp` with an import added."""
    if isinstance(call.func, cst.Attribute) and model.qn(call.func.value, scope) == "jax.numpy":
        return model.module.code_for_node(call.func.value), ()
    alias = model.resolver.module_alias("jax.numpy")
    if alias:
        return alias, ()
    return "jnp", (ImportSpec("jax.numpy", None, "jnp"),)
