"""JF203: recompute a cheap loop-invariant value inside the loop body instead of capturing it.

    k2 = get_kmesh(rho)                        def step(i, rho):
    def step(i, rho):                    ->        k2 = get_kmesh(rho)
        ... jnp.exp(-0.5 * k2) ...                 ... jnp.exp(-0.5 * k2) ...
    return lax.fori_loop(0, 5, step, rho)      return lax.fori_loop(0, 5, step, rho)

(the notebook's `f_filter_with_temp` -> `f_filter_with_recalc`). The binding is
copied to the top of a `def` body (or the expression is written in place of the
read in a lambda body), and the outer binding is removed when nothing else reads
it.

Offered where the rule's calibration table shows the recomputation to be better on some figure
of the compiled program and worse on none, for the value's kind, size and use, the loop's form
and the configured target (jaxfuse_lint/calibrate/jf203.py; the rule sets `no_fix` elsewhere).
The rewrite itself is safe when the value is cheap (array creation, elementwise arithmetic,
layout, the module's functions built from those) and pure, and every free name means the same
inside the body; a name the body rebinds is accepted only when the value reads it for its shape
alone and the rebinding is the loop carry initialised from that very name (lax loops keep the
carry's shape and dtype). Pure but costly values (FFTs, matmuls, reductions, sorts) and unproven
shadowing get an unsafe fix.

Dtype condition: the recomputed value is the same expression of the same names, so it has the
same dtype and weak type as the captured one — except through a carry: lax promotes a weakly
typed init to the dtype the body returns, so reading the carry's `.dtype` (or `.weak_type`) is
safe only when the init is known to be strongly typed; otherwise the fix is unsafe.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.codemods._expressions import in_context
from jaxfuse_lint.codemods._lookups import free_name_nodes, is_inside
from jaxfuse_lint.codemods._purity import ExprInfo, Purity
from jaxfuse_lint.codemods._layout import fitted
from jaxfuse_lint.codemods._statements import insert_before, remove_statement, replace_within, top_of_body
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.model import keyword, positional
from jaxfuse_lint.model.scopes import Function
from jaxfuse_lint.model.computed_arrays import computed_array

CODE = "JF203"

# lax loop -> (index of the carry parameter of its functions, position of the init argument, its keyword)
_CARRY = {
    "jax.lax.fori_loop": (1, 3, "init_val"),
    "jax.lax.while_loop": (0, 2, "init_val"),
    "jax.lax.scan": (0, 1, "init"),
}


MAX_CHAIN = 8


def build_fix(violation, model, settings):
    read: cst.Name = violation.node
    data = violation.data
    bindings, owner, body, site = data.get("bindings"), data.get("owner"), data.get("body"), data.get("loop")
    if not bindings or len(bindings) != 1 or owner is None or body is None or site is None:
        return None
    b = bindings[0]
    if b.kind != "assign" or b.index is not None or b.value is None or not isinstance(b.target, cst.Name):
        return None
    if not isinstance(owner.node, cst.FunctionDef):
        return None
    stmt = _own_statement(model, b, owner)
    if stmt is None:
        return None
    name = b.name
    value = b.value
    purity = Purity.of(model)
    # The value and the local bindings it is computed from (`ix, iy, iz = jnp.indices(...)`
    # then `k2 = ix**2 + iy**2 + iz**2`): the whole chain moves into the loop body.
    def carried(n: str) -> bool:
        # In the body, `n` is the loop's carry initialised from that very binding: its shape
        # (and, with a strongly typed init, its dtype) can be read there as it is (_names_agree).
        at_body, at_owner = model.lookup(n, body), model.lookup(n, owner)
        return (at_body is not None and at_owner is not None and at_body[0] is body
                and all(bd.kind == "param" for bd in at_body[1]) and _is_carry_from(model, body, site, n, at_owner))

    chain = _chain(model, purity, b, stmt, owner, carried)
    if chain is None:
        return None
    info = chain.info
    if not info.pure or info.closure:
        return None
    if any(n.value == "<scope>" for n in free_name_nodes(value)):
        return None
    if len(chain.statements) > 1 and body.is_lambda:
        return None  # a lambda body has room for one expression, not a chain of statements

    all_reads = _reads_of(model, name, b, owner)
    if read not in [r.name for r in all_reads]:
        return None
    # The bodies of this loop that read the value (a while_loop's cond and body): all of them get the
    # recomputation when together they hold every read, and then the outer binding goes away.
    bodies = _bodies_reading(model, site, all_reads)
    others = [f for f in bodies if f is not body]
    covered = [r for f in bodies for r in bodies[f]]
    group = [body] + others if len(covered) == len(all_reads) else [body]
    if len(chain.statements) > 1 and any(f.is_lambda for f in group):
        group = [body]

    replacements: dict[cst.CSTNode, object] = {}
    safe = info.cheap
    for fn in group:
        verdict = _fix_body(model, fn, bodies.get(fn, []), chain, value, info, owner, site, replacements)
        if verdict is None:
            if fn is body:
                return None
            # Another body cannot take it: fix this one only and keep the outer binding.
            replacements = {}
            group = [body]
            verdict = _fix_body(model, body, bodies.get(body, []), chain, value, info, owner, site, replacements)
            if verdict is None:
                return None
            safe = info.cheap and verdict
            break
        safe = safe and verdict
    fixed_regions = [fn.node for fn in group]
    removed = _remove_unread(model, chain, fixed_regions, replacements, owner)
    if not _fit_lambda_lines(model, [fn for fn in group if fn.is_lambda], replacements):
        return None

    where = " and ".join("the lambda" if fn.is_lambda else f"`{fn.name}`" for fn in group)
    what = "recompute" if stmt in removed else "also compute"
    # The title (before the first "; ") says what the fix does; the rest is why.
    msg = f"{what.capitalize()} `{name}` inside {where} instead of capturing it"
    why = [f"`{name}` is captured from `{owner.display_name}`"]
    if len(chain.statements) > 1:
        names = [n for st in chain.statements[:-1] for n in chain.names[st]]
        why[0] += " and recomputed with " + ", ".join(f"`{n}`" for n in names) + ", which it is computed from"
    if not info.cheap:
        why.append("unsafe: it is not cheap: this trades memory for compute in every iteration")
    elif not safe:
        why.append("unsafe: a name it uses is rebound inside the loop body: check it means the same")
    msg += "; " + "; ".join(why)
    return plan(safe, msg, replacements)


class _Chain:
    """Statements of the owner, in order, that compute the captured value (the last one binds it)."""

    def __init__(self) -> None:
        self.statements: list[cst.SimpleStatementLine] = []
        self.names: dict[cst.CSTNode, list[str]] = {}  # statement -> names it binds
        self.bindings: dict[cst.CSTNode, list] = {}  # statement -> its Bindings
        self.info = ExprInfo()


def _own_statement(model, b, owner):
    """The one-assignment statement line, directly in owner's body, that makes binding b."""
    assign = b.node
    stmt = model.parent(assign)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(stmt, cst.SimpleStatementLine)
            and len(stmt.body) == 1):
        return None
    if model.parent(stmt) is not owner.node.body:
        return None
    return stmt


def _chain(model, purity, b, stmt, owner, carried=lambda n: False) -> "_Chain | None":
    """The captured value's statement and, before it, the owner's local statements its names come
    from (each bound once, by a plain assignment in the same block); None when one cannot move.
    `carried(n)`: names whose shape the body reads from the loop's carry instead (not moved)."""
    chain = _Chain()
    order = {s: i for i, s in enumerate(owner.node.body.body)}
    todo = [stmt]
    seen: set = set()
    infos: dict = {}
    while todo:
        st = todo.pop()
        if st in seen:
            continue
        seen.add(st)
        if len(seen) > MAX_CHAIN:
            return None
        assign = st.body[0]
        value = assign.value
        target = assign.targets[0].target
        flat = _flat_names(target)
        if not flat:
            return None
        names = [n.value for n in flat]
        own = [bd for n in names for bd in owner.bindings.get(n, ()) if bd.node is assign]
        chain.names[st] = names
        chain.bindings[st] = own
        info = purity.info(value, owner)
        infos[st] = info
        for n in sorted(info.value | info.static):
            found = model.lookup(n, owner)
            if found is None or found[0] is not owner:
                continue
            bds = found[1]
            if any(bd.kind in ("param", "def", "class", "import") for bd in bds):
                if len(bds) != 1:
                    return None  # rebound later (`x = x / n`): the body would see another value
                continue
            if n not in info.value and carried(n):
                continue  # only `rho.shape` / `rho.dtype`, read from the carry that `rho` initialises
            if len(bds) != 1 or bds[0].kind != "assign":
                return None
            if bds[0].index is None and bds[0].value is not None and not computed_array(model, bds[0].value, owner):
                continue  # an alias or a field of an input (`h = potential`): read in place, not moved
            dep = _own_statement(model, bds[0], owner)
            if dep is None or order.get(dep, 1 << 30) >= order[st]:
                return None
            if _flat_names(dep.body[0].targets[0].target) is None:
                return None
            todo.append(dep)
    chain.statements = sorted(seen, key=lambda s: order[s])
    defined = {n for st in chain.statements for n in chain.names[st]}
    total = ExprInfo()
    for st in chain.statements:
        total.merge(infos[st])
    total.value -= defined
    total.static -= defined
    chain.info = total
    return chain


def _flat_names(target: cst.BaseExpression):
    """`k2` or `ix, iy, iz`: the names a plain target binds; None for anything else."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)) and target.elements and all(
            isinstance(el, cst.Element) and isinstance(el.value, cst.Name) for el in target.elements):
        return [el.value for el in target.elements]
    return None


def _remove_unread(model, chain: _Chain, fixed_regions, replacements, owner) -> set:
    """Remove the chain's outer statements whose names nothing outside the fixed bodies (or the
    statements removed with them) reads any more; the others stay and are computed twice."""
    removed: set = set()
    for st in reversed(chain.statements):
        ok = True
        for bd in chain.bindings[st]:
            for r in _reads_of(model, bd.name, bd, owner):
                if any(is_inside(model, r.name, n) for n in fixed_regions):
                    continue
                if any(is_inside(model, r.name, other) for other in removed):
                    continue
                ok = False
        if ok:
            removed.add(st)
    for st in chain.statements:  # document order keeps the blank lines tidy
        if st in removed and not remove_statement(model, st, replacements):
            removed.discard(st)
    # Several statements removed from the top of the block: the one now first opens the block
    # without a blank line (remove_statement sees one statement at a time).
    block = model.parent(chain.statements[0])
    stmts = list(block.body) if isinstance(block, cst.IndentedBlock) else []
    i = 0
    while i < len(stmts) and stmts[i] in removed:
        i += 1
    if 1 < i < len(stmts):
        current = replacements.get(stmts[i], stmts[i])
        if isinstance(current, cst.CSTNode) and hasattr(current, "leading_lines"):
            lines = list(current.leading_lines)
            while lines and lines[0].comment is None:
                lines.pop(0)
            replacements[stmts[i]] = current.with_changes(leading_lines=lines)
    return removed


def _bodies_reading(model, site, reads) -> dict:
    """{body Function of this lax loop: [reads inside it]}."""
    out: dict = {}
    for fn in site.bodies:
        inside = [r for r in reads if is_inside(model, r.name, fn.node)]
        if inside and fn not in out:
            out[fn] = inside
    # A body nested in another body: the outer one is where the value goes.
    for fn in list(out):
        if any(other is not fn and is_inside(model, fn.node, other.node) for other in out):
            del out[fn]
    return out


def _fit_lambda_lines(model, lambdas, replacements) -> bool:
    """A lambda given the value in place of its read keeps its statement within the line width
    (`_layout`): laid out over lines where that helps (`return lax.fori_loop(\n    ...\n)`).
    False when it cannot fit."""
    for fn in lambdas:
        stmt = model.statement_of(fn.node)
        inner = {k: v for k, v in replacements.items() if k is not stmt and is_inside(model, k, fn.node)}
        new_stmt = replace_within(replacements.get(stmt, stmt), inner)
        laid = fitted(model, stmt, new_stmt)
        if laid is None:
            return False
        if laid is not new_stmt:
            for k in inner:
                del replacements[k]
            replacements[stmt] = laid
    return True


def _fix_body(model, fn, reads, chain, value, info, owner, site, replacements) -> bool | None:
    """Add the recomputation to one loop body. True: safe; False: unproven names; None: cannot."""
    if not reads:
        return None
    names = {n for st in chain.statements for n in chain.names[st]}
    if fn.is_lambda:
        scopes = list({id(r.scope): r.scope for r in reads}.values())
    else:
        if any(n in fn.nonlocals or n in fn.globals or n in fn.params or n in fn.bindings for n in names):
            return None
        scopes = [fn]
    verdicts = []
    for st in chain.statements:
        part = Purity.of(model).info(st.body[0].value, owner)
        verdicts.extend(_names_agree(model, st.body[0].value, part, owner, sc, fn, site, names) for sc in scopes)
    if None in verdicts:
        return None
    if fn.is_lambda:
        for r in reads:
            replacements[r.name] = in_context(model, r.name, value)
    else:
        first = top_of_body(fn.node)
        if first is None:
            return None
        new_stmts = [st.with_changes(leading_lines=[ln for ln in st.leading_lines if ln.comment is not None])
                     for st in chain.statements]
        sentinel = insert_before(first, new_stmts[-1])
        replacements[first] = cst.FlattenSentinel([*new_stmts[:-1], *sentinel.nodes])
    return all(verdicts)


def _reads_of(model, name: str, binding, owner):
    """The reads of `name` that may see `binding`, one of `owner`'s."""
    out = []
    for r in model.index.reads_named(name, owner):
        found = model.lookup(name, r.scope)
        if found is not None and binding in found[1]:
            out.append(r)
    return out


def _names_agree(model, value, info, owner: Function, target, body: Function, site,
                 moved: set[str] = frozenset()) -> bool | None:
    """True: every free name means the same at `target`; False: only unproven; None: it would break.
    Names in `moved` are bound by statements that move into the body with the value."""
    ok = True
    for node in free_name_nodes(value):
        n = node.value
        if n in moved:
            continue
        at_owner = model.lookup(n, owner)
        at_target = model.lookup(n, target)
        if at_owner is None and at_target is None:
            continue
        if at_owner is None or at_target is None:
            return None
        if at_owner[0] is at_target[0]:
            scope, bindings = at_owner
            if isinstance(scope, Function) and len(bindings) != 1 and not all(bd.kind == "def" for bd in bindings):
                ok = False
            continue
        # Shadowed between owner and target.
        shadow_scope, shadow = at_target
        if any(bd.kind != "param" for bd in shadow):
            return None  # a local of the body: reading it first would fail or differ
        if shadow_scope is not body or not _is_carry_from(model, body, site, n, at_owner):
            ok = False
            continue
        if n in info.value:
            ok = False  # the value (not only the shape) of the carry is read
        elif _reads_dtype_of(value, n) and not _strongly_typed(model, n, at_owner[0]):
            ok = False  # a weakly typed init is promoted to the body's dtype: the carry's dtype may differ
    return ok


def _reads_dtype_of(value: cst.CSTNode, name: str) -> bool:
    from jaxfuse_lint.model.scopes import walk

    return any(isinstance(n, cst.Attribute) and n.attr.value in ("dtype", "weak_type") and isinstance(n.value, cst.Name)
               and n.value.value == name for n in walk(value))


def _strongly_typed(model, name: str, scope) -> bool:
    """The loop's init has a known, strongly typed dtype: lax keeps it as the carry's dtype."""
    fact = model.dtype(cst.Name(name), scope)
    return fact is not None and len(fact) == 1 and not next(iter(fact)).weak


def _is_carry_from(model, body: Function, site, name: str, at_owner) -> bool:
    spec = _CARRY.get(site.qualified_name)
    if spec is None:
        return False
    param_i, init_pos, init_kw = spec
    if param_i >= len(body.params) or body.params[param_i] != name:
        return False
    init = positional(site.call, init_pos) or keyword(site.call, init_kw)
    if not isinstance(init, cst.Name):
        return False
    found = model.lookup(init.value, site.scope)
    return found is not None and found[0] is at_owner[0] and found[1] == at_owner[1]
