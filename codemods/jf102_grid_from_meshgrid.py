"""JF102 codemod: a meshgrid of fftfreq/rfftfreq vectors becomes `jnp.indices` plus index arithmetic.

    kx, ky, kz = jnp.meshgrid(kx, ky, kz, indexing="ij")
becomes
    kx, ky, kz = jnp.indices((n0, n1, n2 // 2 + 1))
    kx, ky, kz = (jnp.where(kx < (n0 + 1) // 2, kx, kx - n0) / (d * n0), ..., kz / (d * n2))

with the arithmetic of `jnp.fft.fftfreq` / `rfftfreq` exactly (same values, bit for bit), the
first two axes swapped for `indexing="xy"` (meshgrid's default), and the 1-D assignments that
only fed the meshgrid removed.

    python -m libcst.tool codemod codemods.jf102_grid_from_meshgrid.GridFromIndicesCommand PATH
"""
from __future__ import annotations

import libcst as cst
from libcst.codemod import Codemod, CodemodContext

from codemods.jf103_short_loop_not_unrolled import run_rule_fixes
from jaxfuse_lint.diagnostics import Applicability
from jaxfuse_lint.fixes import FixPlan, ImportSpec
from jaxfuse_lint.model import keyword, positional
from jaxfuse_lint.model.fusion import expression_names, reaching_binding

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


def _indent_of(model, stmt: cst.CSTNode) -> str:
    module = model.module
    parts = []
    for a in model.ancestors(stmt):
        if isinstance(a, cst.IndentedBlock):
            parts.append(a.indent if a.indent is not None else module.default_indent)
    return "".join(reversed(parts))


def _removable_source(model, name: cst.Name, stmt_line: cst.SimpleStatementLine, assign: cst.Assign,
                      targets: list[str]):
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
    for read in model.index.reads:
        if read.name.value != name.value or read.name is name:
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
    if any(s is None or not s.direct or s.kind not in ("fftfreq", "rfftfreq") for s in sources):
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
    code = model.module.code_for_node
    for t, src in zip(names, sources):
        nd = _freq_args(src.call)
        if nd is None:
            return None
        n, d = nd
        for e in (n, d):
            if e is not None and not (_simple(e) and _same_names(model, e, src.scope, scope, forbidden)):
                return None
        n_text = code(n).strip()
        pn = n_text if isinstance(n, _ATOMIC) else f"({n_text})"
        if d is None:
            denom = pn
        else:
            d_text = code(d).strip()
            pd = d_text if isinstance(d, _ATOMIC) else f"({d_text})"
            denom = f"({pd} * {pn})"
        if src.kind == "fftfreq":
            sizes.append(n_text)
            formulas.append(f"{jnp}.where({t} < ({pn} + 1) // 2, {t}, {t} - {pn}) / {denom}")
        else:
            sizes.append(f"{pn} // 2 + 1")
            formulas.append(f"{t} / {denom}")
    k = len(names)
    perm = list(range(k))
    if indexing == "xy":
        perm[0], perm[1] = 1, 0
    first_targets = ", ".join(names[perm[a]] for a in range(k))
    dims = ", ".join(sizes[perm[a]] for a in range(k))
    first = cst.parse_statement(f"{first_targets} = {jnp}.indices(({dims}))\n")
    indent = _indent_of(model, line)
    lhs = ", ".join(names)
    one_line = f"{lhs} = {', '.join(formulas)}"
    if len(indent) + len(one_line) <= 100:
        second_text = one_line + "\n"
    else:
        # Continuation lines are relative: libcst adds the block's indentation when it renders them.
        inner = model.module.default_indent
        second_text = f"{lhs} = (\n" + "".join(f"{inner}{f},\n" for f in formulas) + ")\n"
    second = cst.parse_statement(second_text)
    first = first.with_changes(leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace)
    replacements: dict = {line: cst.FlattenSentinel([first, second])}
    for arg in args:
        if isinstance(arg, cst.Name):
            dead = _removable_source(model, arg, line, assign, names)
            if dead is not None:
                replacements[dead] = cst.RemovalSentinel.REMOVE
    return FixPlan(
        applicability=Applicability.SAFE,
        message="Build the grid from `jnp.indices` with fftfreq's index arithmetic",
        replacements=replacements,
        imports=imports,
    )


def _jnp_prefix(model, call: cst.Call, scope) -> tuple[str, tuple[ImportSpec, ...]]:
    """How this module spells jax.numpy: the meshgrid's own prefix, else the module's alias,
    else `jnp` with an import added."""
    if isinstance(call.func, cst.Attribute) and model.qn(call.func.value, scope) == "jax.numpy":
        return model.module.code_for_node(call.func.value), ()
    alias = model.resolver.module_alias("jax.numpy")
    if alias:
        return alias, ()
    return "jnp", (ImportSpec("jax.numpy", None, "jnp"),)


class GridFromIndicesCommand(Codemod):
    DESCRIPTION = "Rewrite meshgrids of fftfreq/rfftfreq vectors as jnp.indices with index arithmetic (JF102)."

    def __init__(self, context: CodemodContext) -> None:
        super().__init__(context)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        return run_rule_fixes(tree, CODE, build_fix)
