"""JF401 fix: `print(...)` in traced code -> `jax.debug.print(format, *values)`.

`print("x:", x)` becomes `jax.debug.print("x: {}", x)`; `print(f"x={x:.3f}")` becomes
`jax.debug.print("x={:.3f}", x)`. Literal text keeps its value (braces doubled), `sep` goes
between the arguments, an `end` ending in a newline is folded in. Static shape values shown
next to traced ones (`print(f"{x.shape}: {x}")`) stay interpolated at trace time:
`jax.debug.print(f"{x.shape}: {{}}", x)`.

An f-string field holding a tuple (`{a, b}`) is passed as one tuple argument, as
`format` sees it. Fields that cannot be rendered the same way get no fix: `{x=}`, a
format spec with nested fields (`{x:{w}}`), values `jax.debug.print` cannot take, a tuple
holding Python values (`{x, 3}`: the 3 would print as an array), and a literal brace before
the first value (jax.debug.print formats only when its format's first piece is a field, and
prints the format as written, doubled braces and all, otherwise).

Dtype condition: none. The values are passed to `jax.debug.print` unchanged and the function's
results are untouched; only when and how they are printed changes.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from jaxfuse_lint.codemods._names import module_name_for
from jaxfuse_lint.core.diagnostics import Applicability
from jaxfuse_lint.codemods.plan import FixPlan, ImportSpec
from jaxfuse_lint.model import Kind, SemanticModel
from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.scopes import Function, Scope
from jaxfuse_lint.model.staged_values import staged_values
from jaxfuse_lint.model.traced_premise import traced_premise

CODE = "JF401"


class NoFix(Exception):
    """The call cannot be rewritten faithfully."""


@dataclass
class _Text:
    value: str


@dataclass
class _Value:
    expr: cst.BaseExpression
    conversion: str | None = None
    spec: str | None = None
    static: bool = False  # interpolated at trace time (a shape), not passed to jax.debug.print


def build_fix(violation, model: SemanticModel, settings) -> FixPlan | None:
    call: cst.Call = violation.data["call"]
    scope: Scope = violation.data["scope"]
    name = module_name_for(model, "jax", scope, "jax")
    if name is None:
        return None
    jax_name, add_import = name
    try:
        segments = _segments(model, call, scope)
        _check_braces(segments)
        fmt = _format_literal(model, segments, _quote_of(call))
    except NoFix:
        return None
    func = cst.Attribute(cst.Attribute(cst.Name(jax_name), cst.Name("debug")), cst.Name("print"))
    args = [cst.Arg(fmt)] + [cst.Arg(_one_argument(s.expr)) for s in segments
                             if isinstance(s, _Value) and not s.static]
    new = call.with_changes(func=func, args=args)
    return FixPlan(
        Applicability.SAFE,
        f"Replace `print` with `{jax_name}.debug.print`",
        {call: new},
        (ImportSpec("jax"),) if add_import else (),
    )


def _check_braces(segments: list) -> None:
    """jax.debug.print formats only when the format's first piece is a field (it reads the first
    item of `string.Formatter().parse`); otherwise it prints the format as written, `{{` and
    all, then the arguments. So a literal brace may only come after the first value it formats."""
    for s in segments:
        if isinstance(s, _Value) and not s.static:
            return
        if isinstance(s, _Text) and ("{" in s.value or "}" in s.value):
            raise NoFix("a literal brace before the first value")


def _one_argument(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The value as one argument: an f-string field `{a, b}` is one tuple, so it gets its
    parentheses (`jax.debug.print("{}", (a, b))` prints what `f"{a, b}"` prints; passed as two
    arguments, `str.format` would drop the second)."""
    if isinstance(expr, cst.Tuple) and not expr.lpar:
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


# -- reading the print call -------------------------------------------------------------------
def _literal_text(node: cst.SimpleString) -> str:
    if "b" in node.prefix.lower():
        raise NoFix("bytes")
    value = node.evaluated_value
    if not isinstance(value, str):
        raise NoFix("not text")
    return value


def _fstring_text(fs: cst.FormattedString, text: cst.FormattedStringText) -> str:
    """The value of a literal piece of an f-string (escapes applied, `{{` read as `{`)."""
    prefix = fs.prefix.lower().replace("f", "")
    quote = fs.end
    try:
        value = ast.literal_eval(f"{prefix}{quote}{text.value}{quote}")
    except (SyntaxError, ValueError) as exc:
        raise NoFix(str(exc)) from exc
    if not isinstance(value, str):
        raise NoFix("bytes")
    return value.replace("{{", "{").replace("}}", "}")


def _string_segments(model: SemanticModel, node: cst.BaseExpression, scope: Scope) -> list:
    if isinstance(node, cst.SimpleString):
        return [_Text(_literal_text(node))]
    if isinstance(node, cst.ConcatenatedString):
        return _string_segments(model, node.left, scope) + _string_segments(model, node.right, scope)
    if isinstance(node, cst.FormattedString):
        out: list = []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                out.append(_Text(_fstring_text(node, part)))
                continue
            if part.equal is not None:
                raise NoFix("{x=}")
            spec = None
            if part.format_spec is not None:
                if not all(isinstance(p, cst.FormattedStringText) for p in part.format_spec):
                    raise NoFix("nested replacement field")
                spec = "".join(p.value for p in part.format_spec)
            out.append(_value(model, part.expression, scope, part.conversion, spec))
        return out
    raise NoFix("not a string")


def _value(model: SemanticModel, expr: cst.BaseExpression, scope: Scope, conversion=None, spec=None):
    if isinstance(expr, (cst.Integer, cst.Float)) or (
        isinstance(expr, cst.Name) and expr.value in ("True", "False", "None")
    ):
        try:
            literal = ast.literal_eval(model.module.code_for_node(expr))
        except (SyntaxError, ValueError) as exc:
            raise NoFix(str(exc)) from exc
        text = format(repr(literal) if conversion in ("r", "a") else literal, spec or "")
        return _Text(text)
    kind = _kind(model, expr, scope)
    if isinstance(expr, cst.Tuple) and not all(
            isinstance(el, cst.Element) and _kind(model, el.value, scope) is Kind.TRACED for el in expr.elements):
        # `{x, 3}`: jax.debug.print would make the 3 an array (`Array(3, dtype=int32, ...)`)
        raise NoFix("a tuple with values that are not arrays")
    if kind is Kind.TRACED and not isinstance(expr, (cst.Yield, cst.Await, cst.NamedExpr, cst.Lambda)):
        return _Value(expr, conversion, spec)
    if kind is Kind.STATIC and _is_shape_value(expr):
        return _Value(expr, conversion, spec, static=True)
    raise NoFix("a value jax.debug.print cannot take")


def _kind(model: SemanticModel, expr: cst.BaseExpression, scope: Scope) -> Kind:
    """Traced in staged code, or carrying a tangent under an eager `jax.grad` (a JVP tracer there)."""
    kind = staged_values(model).kind(expr, scope)
    if kind is not Kind.TRACED and isinstance(scope, Function) and \
            traced_premise(model).differentiated(expr, scope) is not None:
        return Kind.TRACED
    return kind


def _is_shape_value(expr: cst.BaseExpression) -> bool:
    """`x.shape`, `x.shape[0]`, `x.dtype`, `len(x)`: static values whose text has no braces."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in STATIC_ATTRIBUTES
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len"


def _segments(model: SemanticModel, call: cst.Call, scope: Scope) -> list:
    sep, end = " ", "\n"
    positional = []
    for a in call.args:
        if a.star:
            raise NoFix("*args")
        if a.keyword is None:
            positional.append(a.value)
            continue
        if a.keyword.value not in ("sep", "end"):
            raise NoFix(f"{a.keyword.value}=")
        if isinstance(a.value, cst.Name) and a.value.value == "None":
            continue
        if not isinstance(a.value, (cst.SimpleString, cst.ConcatenatedString)):
            raise NoFix("non-literal sep/end")
        pieces = _string_segments(model, a.value, scope)
        if any(not isinstance(s, _Text) for s in pieces):
            raise NoFix("formatted sep/end")
        text = "".join(s.value for s in pieces)
        if a.keyword.value == "sep":
            sep = text
        else:
            end = text
    if not end.endswith("\n"):
        raise NoFix("end without a newline")  # jax.debug.print always ends the line
    segments: list = []
    for i, value in enumerate(positional):
        if i:
            segments.append(_Text(sep))
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            segments.extend(_string_segments(model, value, scope))
        else:
            segments.append(_value(model, value, scope))
    if end[:-1]:
        segments.append(_Text(end[:-1]))
    return segments


# -- writing the format string ------------------------------------------------------------------
def _placeholder(s: _Value) -> str:
    return "{" + (f"!{s.conversion}" if s.conversion else "") + (f":{s.spec}" if s.spec else "") + "}"


def _escape(text: str, quote: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + quote)
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(repr(ch)[1:-1])
    return "".join(out)


def _quote_of(call: cst.Call) -> str:
    """The quote character of the first string the print call writes (`'` for `print('x:', x)`),
    which the format string keeps; `"` when it writes none."""
    for arg in call.args:
        value = arg.value
        while isinstance(value, cst.ConcatenatedString):
            value = value.left
        if isinstance(value, cst.SimpleString):
            return value.quote[0]
        if isinstance(value, cst.FormattedString):
            return value.start[-1]
    return '"'


def _other(quote: str) -> str:
    return '"' if quote == "'" else "'"


def _format_literal(model: SemanticModel, segments: list, preferred: str = '"') -> cst.BaseExpression:
    """The format string: a plain literal, or an f-string when static shape values are shown. It is
    written in the `preferred` quotes unless its text holds them and not the other kind."""
    static = [s for s in segments if isinstance(s, _Value) and s.static]
    text = "".join(s.value for s in segments if isinstance(s, _Text))
    if not static:
        quote = _other(preferred) if preferred in text and _other(preferred) not in text else preferred
        body = "".join(
            _escape(s.value.replace("{", "{{").replace("}", "}}"), quote) if isinstance(s, _Text) else _placeholder(s)
            for s in segments
        )
        return cst.SimpleString(f"{quote}{body}{quote}")
    sources = [model.module.code_for_node(s.expr) for s in static]
    first = _other(preferred) if preferred in text and _other(preferred) not in text else preferred
    order = (first, _other(first))
    quote = next((q for q in order if not any(q in src for src in sources)), None)
    if quote is None or any("\\" in src or "\n" in src for src in sources):
        raise NoFix("cannot embed the static values in an f-string")
    parts = []
    for s in segments:
        if isinstance(s, _Text):
            parts.append(_escape(s.value.replace("{", "{{{{").replace("}", "}}}}"), quote))
        elif s.static:
            src = model.module.code_for_node(s.expr)
            parts.append(_placeholder(s).replace("{", "{" + src, 1))
        else:
            parts.append(_placeholder(s).replace("{", "{{").replace("}", "}}"))
    return cst.parse_expression(f"f{quote}{''.join(parts)}{quote}")
