"""How wide the statements a fix writes are, and how a long one is laid out over lines: a fix
writes lines of at most `LINE_LENGTH` columns (ruff's and black's default), or as wide as the
lines it replaces when those were wider."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel

LINE_LENGTH = 88
# How much a line that was already wider than LINE_LENGTH may grow.
GROWTH = 4


def indent_of(model: "SemanticModel", stmt: cst.CSTNode) -> str:
    """The indentation the statement's block gives it."""
    parts = []
    for a in model.ancestors(stmt):
        if isinstance(a, cst.IndentedBlock):
            parts.append(a.indent if a.indent is not None else model.module.default_indent)
    return "".join(reversed(parts))


def code_width(model: "SemanticModel", stmt: cst.CSTNode, indent: str) -> int:
    """The widest line of `stmt` written at `indent`, its trailing comment left out (a fix does
    not write comments; a long one stays as long as the user wrote it)."""
    text = model.module.code_for_node(stmt)
    return max((len(indent) + len(line.split("  # ", 1)[0].rstrip()) for line in text.splitlines()), default=0)


def allowed_width(model: "SemanticModel", stmt: cst.CSTNode) -> int:
    """What a rewrite of `stmt` may be as wide as: LINE_LENGTH, or the statement's own width when
    that is wider (plus a few characters: `np.` may become `jnp.`, `x = ` `return `)."""
    own = code_width(model, stmt, indent_of(model, stmt))
    return own + GROWTH if own > LINE_LENGTH else LINE_LENGTH


def assignment(model: "SemanticModel", name: str, value: cst.BaseExpression, indent: str,
               width: int) -> cst.SimpleStatementLine | None:
    """`name = value` on one line, else laid out over lines (a chain of `+` one term a line, a call's
    arguments on a line of their own); None when no layout fits in `width` columns."""
    return statement(model, f"{name} = ", value, indent, width)


def statement(model: "SemanticModel", head: str, value: cst.BaseExpression, indent: str,
              width: int) -> cst.SimpleStatementLine | None:
    """`head` (`x = `, `return `) and `value`, laid out as `assignment` does."""
    code = model.module.code_for_node
    one = f"{head}{code(value).strip()}"
    if len(indent) + len(one) <= width:
        return cst.parse_statement(one + "\n")  # type: ignore[return-value]
    unit = model.module.default_indent
    broken = _broken(value, code, unit)
    if broken is None:
        return None
    text = f"{head}{broken}\n"
    # Continuation lines are relative: libcst adds the block's indentation when it renders them.
    if any(len(indent) + len(line) > width for line in text.splitlines()):
        return None
    return cst.parse_statement(text)  # type: ignore[return-value]


def fitted(model: "SemanticModel", stmt: cst.CSTNode, new_stmt: cst.CSTNode) -> cst.CSTNode | None:
    """`new_stmt` (a rewrite of `stmt`) when it fits `stmt`'s allowed width; else, for `return V` and
    `name = V`, the same laid out over lines; None when it cannot fit."""
    width, indent = allowed_width(model, stmt), indent_of(model, stmt)
    if code_width(model, new_stmt, indent) <= width:
        return new_stmt
    if not isinstance(new_stmt, cst.SimpleStatementLine) or len(new_stmt.body) != 1:
        return None
    small = new_stmt.body[0]
    if isinstance(small, cst.Return) and small.value is not None:
        head, value = "return ", small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        head, value = f"{small.targets[0].target.value} = ", small.value
    else:
        return None
    laid = statement(model, head, value, indent, width)
    if laid is None:
        return None
    return laid.with_changes(leading_lines=new_stmt.leading_lines, trailing_whitespace=new_stmt.trailing_whitespace)


def _chain(e: cst.BaseExpression) -> tuple[list[cst.BaseExpression], list[str]] | None:
    """The terms and operators of a left-associative chain of one additive or multiplicative kind."""
    if not isinstance(e, cst.BinaryOperation) or e.lpar:
        return None
    kind = (cst.Add, cst.Subtract) if isinstance(e.operator, (cst.Add, cst.Subtract)) else \
        (cst.Multiply, cst.Divide) if isinstance(e.operator, (cst.Multiply, cst.Divide)) else None
    if kind is None:
        return None
    terms: list[cst.BaseExpression] = []
    ops: list[str] = []
    node: cst.BaseExpression = e
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, kind) and not node.lpar:
        terms.append(node.right)
        ops.append("+" if isinstance(node.operator, cst.Add) else "-" if isinstance(node.operator, cst.Subtract)
                   else "*" if isinstance(node.operator, cst.Multiply) else "/")
        node = node.left
    terms.append(node)
    return list(reversed(terms)), list(reversed(ops))


def _broken(e: cst.BaseExpression, code, unit: str) -> str | None:
    unwrapped = e.with_changes(lpar=[], rpar=[]) if isinstance(e, cst.BinaryOperation) and e.lpar else e
    found = _chain(unwrapped)
    if found is not None:
        terms, ops = found
        if len(terms) == 2 and isinstance(terms[0], cst.BinaryOperation) and terms[0].lpar \
                and not isinstance(terms[1], cst.BinaryOperation) \
                and len(unit) + len(code(terms[0]).strip()) > _ARGS_ON_ONE_LINE:  # `(a + b + c) / 3`: break the sum
            inner = _broken(terms[0], code, unit)
            if inner is not None:
                text = f"{inner} {ops[0]} {code(terms[1]).strip()}"
                return f"({text})" if unwrapped is not e else text  # `((a + b) / 2)[..., None]`
        lines = [f"{unit}{code(terms[0]).strip()}"] + [f"{unit}{op} {code(t).strip()}" for op, t in zip(ops, terms[1:])]
        return "(\n" + "\n".join(lines) + "\n)"
    if isinstance(e, cst.Subscript) and not e.lpar:  # `(a + b)[..., None]`
        inner = _broken(e.value, code, unit)
        if inner is None:
            return None
        return inner + "[" + ", ".join(code(s).strip().rstrip(",") for s in e.slice) + "]"
    if isinstance(e, cst.Call) and not e.lpar and not any(a.star for a in e.args):
        func = e.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.BinaryOperation) and func.value.lpar:
            inner = _broken(func.value, code, unit)  # `(a + b).astype(t)`
            if inner is None:
                return None
            return f"{inner}.{func.attr.value}({', '.join(code(a).strip().rstrip(',') for a in e.args)})"
        args = ", ".join(code(a).strip().rstrip(",") for a in e.args)
        if len(e.args) == 1 and e.args[0].keyword is None and len(unit) + len(args) > _ARGS_ON_ONE_LINE:
            found = _chain(e.args[0].value.with_changes(lpar=[], rpar=[])
                           if isinstance(e.args[0].value, cst.BinaryOperation) else e.args[0].value)
            if found is not None:  # `jnp.sqrt(a ** 2 + b ** 2 + ...)`: the sum over lines, in the call's parentheses
                terms, ops = found
                lines = [f"{unit}{code(terms[0]).strip()}"] + [f"{unit}{op} {code(t).strip()}"
                                                               for op, t in zip(ops, terms[1:])]
                return f"{code(func).strip()}(\n" + "\n".join(lines) + "\n)"
        if len(unit) + len(args) <= _ARGS_ON_ONE_LINE or len(e.args) < 2:
            return f"{code(func).strip()}(\n{unit}{args}\n)"
        # One argument per line, a long one broken in turn (`jnp.maximum(jnp.maximum(a, b), c)`).
        parts = []
        for a in e.args:
            text = code(a).strip().rstrip(",")
            if len(unit) * 2 + len(text) > _ARGS_ON_ONE_LINE and a.keyword is None:
                text = _broken(a.value, code, unit) or text
            parts.append(unit + text.replace("\n", "\n" + unit))
        return f"{code(func).strip()}(\n" + ",\n".join(parts) + ",\n)"
    return None


# Arguments that fit in this many columns (with their indentation) stay on one line.
_ARGS_ON_ONE_LINE = 80
