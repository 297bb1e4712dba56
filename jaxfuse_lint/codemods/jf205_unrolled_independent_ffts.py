"""JF205 codemod (unsafe): a Python accumulation loop becomes a `lax.fori_loop`.

    for i in range(start, stop):
        acc = acc + term(i)
becomes
    acc = jax.lax.fori_loop(start + 1, stop, lambda i, acc: acc + term(i), acc + term(start))

The first iteration is peeled off as the initial carry, so the carry has the term's shape and
dtype even when the accumulator starts as a Python `0`.

    python -m libcst.tool codemod -x --no-format \
        jaxfuse_lint.engine.libcst_commands.FoldIntoForiLoopCommand PATH --unsafe-fixes

Dtype condition (why it stays unsafe): the carry's dtype is fixed by the peeled first term. A
Python loop re-promotes on every `acc + term`; `fori_loop` requires the body to return the
carry's dtype, so a later term of another dtype (or a weakly typed accumulator) raises or is
cast where the loop promoted.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods._layout import allowed_width
from jaxfuse_lint.codemods._names import fresh_name
from jaxfuse_lint.codemods.plan import FixPlan, ImportSpec
from jaxfuse_lint.model import positional, walk
from jaxfuse_lint.model.accumulation import accumulation, small_statements
from jaxfuse_lint.model.api import JNP_ELEMENTWISE

CODE = "JF205"


class _Substitute(cst.CSTTransformer):
    def __init__(self, names: set[cst.Name], value: cst.BaseExpression) -> None:
        super().__init__()
        self.names = names
        self.value = value

    def leave_Name(self, original_node, updated_node):  # type: ignore[override]
        if original_node in self.names:
            return self.value
        return updated_node


def _index_reads_ok(model, var: str, term: cst.BaseExpression, loop: cst.For, scope) -> list[cst.Name] | None:
    """The reads of the loop variable in the term, when each is plain arithmetic (an operand of
    `+ - * / **`, or an argument of an elementwise jnp function) and none is outside the term."""
    reads = [n for n in walk(term) if isinstance(n, cst.Name) and n.value == var]
    for n in reads:
        parent = model.parent(n)
        if isinstance(parent, cst.Attribute) and parent.attr is n:
            return None
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is None:
            call = model.parent(parent)
            if isinstance(call, cst.Call) and model.qn(call.func, scope) in JNP_ELEMENTWISE:
                continue
        return None
    # The loop variable must not be read anywhere else in the function (e.g. after the loop).
    found = model.lookup(var, scope)
    if found is None or found[0] is not scope or len(found[1]) != 1 or found[1][0].node is not loop:
        return None
    read_ids = {id(n) for n in reads}
    for r in model.index.reads_named(var, scope):
        if id(r.name) in read_ids:
            continue
        fr = model.lookup(var, r.scope)
        if fr is not None and fr[0] is scope:
            return None
    return reads


_LOW_PRECEDENCE = (cst.Add, cst.Subtract, cst.LeftShift, cst.RightShift, cst.BitAnd, cst.BitOr, cst.BitXor)


def _needs_parens(term: cst.BaseExpression) -> bool:
    """Whether `acc + term` would regroup the term (and so change its rounding) without parentheses."""
    if term.lpar:
        return False
    if isinstance(term, cst.BinaryOperation):
        return isinstance(term.operator, _LOW_PRECEDENCE)
    return isinstance(term, (cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.Lambda, cst.NamedExpr))


def _jax_prefix(model) -> tuple[str, tuple[ImportSpec, ...]]:
    lax = model.resolver.module_alias("jax.lax")
    if lax:
        return f"{lax}.fori_loop", ()
    jax = model.resolver.module_alias("jax")
    if jax:
        return f"{jax}.lax.fori_loop", ()
    return "jax.lax.fori_loop", (ImportSpec("jax"),)


def build_fix(violation, model, settings) -> FixPlan | None:
    facts = violation.data.get("facts")
    scope = violation.data.get("scope")
    if facts is None:
        return None
    loop: cst.For = facts.loop
    stmts = small_statements(loop.body)
    if stmts is None or len(stmts) != 1:
        return None
    acc = accumulation(stmts[0])
    if acc is None or acc.name in facts.carried - {acc.name} or not isinstance(loop.target, cst.Name):
        return None
    var = loop.target.value
    if var == acc.name:
        return None
    if any(isinstance(n, cst.Name) and n.value == acc.name for n in walk(acc.term)):
        return None  # the term reads the accumulator: not independent
    if any(isinstance(n, (cst.NamedExpr, cst.Yield, cst.Await, cst.Lambda, cst.ListComp, cst.GeneratorExp,
                          cst.DictComp, cst.SetComp)) for n in walk(acc.term)):
        return None
    it = loop.iter
    if len(it.args) == 1:
        start_text, stop = "0", positional(it, 0)
        start_expr: cst.BaseExpression = cst.Integer("0")
    elif len(it.args) == 2:
        start_expr, stop = positional(it, 0), positional(it, 1)
        start_text = model.module.code_for_node(start_expr).strip()
    else:
        return None
    reads = _index_reads_ok(model, var, acc.term, loop, scope)
    if reads is None:
        return None
    code = model.module.code_for_node
    # The peeled first term: the loop variable replaced by the start (parenthesised when compound).
    start_value = start_expr if isinstance(start_expr, (cst.Integer, cst.Name, cst.Attribute)) else \
        cst.parse_expression(f"({start_text})")
    first_term = acc.term.visit(_Substitute(set(reads), start_value))
    term_text = code(acc.term).strip()
    first_text = code(first_term).strip()
    if isinstance(acc.statement, cst.AugAssign):
        op = "+" if isinstance(acc.statement.operator, cst.AddAssign) else "-"
        paren = _needs_parens(acc.term)
        body = f"{acc.name} {op} ({term_text})" if paren else f"{acc.name} {op} {term_text}"
        init = f"{acc.name} {op} ({first_text})" if paren else f"{acc.name} {op} {first_text}"
    else:
        v = acc.statement.value
        op = "+" if isinstance(v.operator, cst.Add) else "-"
        term_p = f"({term_text})" if _needs_parens(acc.term) else term_text
        first_p = first_text if term_p == term_text else f"({first_text})"
        if isinstance(v.left, cst.Name) and v.left.value == acc.name:
            body, init = f"{acc.name} {op} {term_p}", f"{acc.name} {op} {first_p}"
        else:
            body, init = f"{term_p} {op} {acc.name}", f"{first_p} {op} {acc.name}"
    try:
        start_int = int(start_text)
        lower = str(start_int + 1)
    except ValueError:
        lower = f"{start_text} + 1" if isinstance(start_expr, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)) \
            else f"({start_text}) + 1"
    fori, imports = _jax_prefix(model)
    stop_text = code(stop).strip()
    indent = "".join(a.indent if a.indent is not None else model.module.default_indent
                     for a in model.ancestors(loop) if isinstance(a, cst.IndentedBlock))
    width = allowed_width(model, loop)
    step = model.module.default_indent

    def call_text(fn: str) -> str:
        one = f"{acc.name} = {fori}({lower}, {stop_text}, {fn}, {init})\n"
        if len(indent) + len(one) <= width:
            return one
        # Continuation lines are relative: libcst adds the block's indentation when it renders them.
        return f"{acc.name} = {fori}(\n{step}{lower},\n{step}{stop_text},\n{step}{fn},\n{step}{init},\n)\n"

    # The body as a lambda where it fits on its line, else as a `def` of its own before the loop.
    texts = [call_text(f"lambda {var}, {acc.name}: {body}")]
    if any(len(indent) + len(line) > width for line in texts[0].splitlines()):
        name = fresh_name(model, "step")
        texts = [f"def {name}({var}, {acc.name}):\n{step}return {body}\n", call_text(name)]
    if any(len(indent) + len(line) > width for text in texts for line in text.splitlines()):
        return None  # no layout fits: not a rewrite a person would keep
    try:
        statements = [cst.parse_statement(text) for text in texts]
    except cst.ParserSyntaxError:
        return None
    comment = loop.body.header if isinstance(loop.body, cst.IndentedBlock) else None
    statements[0] = statements[0].with_changes(leading_lines=loop.leading_lines)
    if len(statements) == 2:
        statements[1] = statements[1].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    if comment is not None and comment.comment is not None:
        statements[-1] = statements[-1].with_changes(trailing_whitespace=comment)
    new = statements[0] if len(statements) == 1 else cst.FlattenSentinel(statements)
    return FixPlan(
        applicability=Applicability.UNSAFE,
        message=(f"Run the accumulation into `{acc.name}` as a `lax.fori_loop` (first iteration peeled off); "
                 f"unsafe: the carry keeps the dtype of the first term, where the Python loop promoted "
                 f"`{acc.name}` on every addition: a later term of a wider dtype (or a weakly typed "
                 f"`{acc.name}`) is cast or raises"),
        replacements={loop: new},
        imports=imports,
    )
