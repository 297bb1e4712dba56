"""What an object's attribute holds while a function is traced: `self.a1` is what the construction
that built `self` was given for `a1`.

An object built from traced values holds tracers: `Potential(ConstantParameter(a1), ...)` inside a
jitted function stores the tracer `a1`, and a method of that object reads it back through `self`
(`self.a1(t)` in the `__check_init__` the construction runs, `self.value` in the parameter's
`__call__`). The object is followed to the expression that built it: through local names, through
`self` to the receiver of the route that runs the method (the object `obj.method(...)` is called on,
the construction that runs `__init__` or a construction hook, the object a call of a method binds
while its result is evaluated), and through an attribute to what the construction of its owner was
given for it. A construction gives an attribute the argument for it: a field of a dataclass-like
class (an equinox Module, a NamedTuple, a flax struct, a `@dataclass`) in the order of the class's
annotated fields or by keyword, or, with an explicit `__init__`, the argument for the parameter the
one `self.attr = param` of `__init__` stores (another expression stored there is evaluated with
`__init__`'s parameters taking the construction's arguments). `record._replace(attr=v)` replaces it.
A traced record whose construction is not shown (a jitted argument, a lax loop's carry) holds a
tracer in every field its class declares a child (model/instances.py `data_field`).

`ObjectFields` is a mixin of the staged value analysis (model/staged_values.py `StagedValues`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.api import ARRAY_VIEW_ATTRIBUTES, STATIC_ATTRIBUTES
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.values import STATIC, TRACED, Kind

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Function, Scope

MAX_SOURCES = 8  # receivers and construction hops followed for one object
_REPLACING = frozenset({"_replace", "replace"})


class ObjectFields:
    """The object half of the staged value analysis (mixed into `StagedValues`)."""

    # id(method) -> (receiver expression, its scope): the object a call binds to `self` while the
    # analysis evaluates that call's result (`ValueAnalysis._with_call_args`); replaced, never mutated.
    _receivers: dict = {}

    def bind_receiver(self, sub, callee: "Function", call: cst.Call, scope: "Scope") -> None:
        """Give the analysis `sub` (evaluating `call`'s result) the object `call` binds to callee's
        `self`: `obj` of `obj.method(x)`, the instance of `obj(x)` (its `__call__`)."""
        receiver = self.call_receiver(callee, call)
        if receiver is not None:
            sub._receivers = {**self._receivers, id(callee): (receiver, scope)}

    def call_receiver(self, callee: "Function", call: cst.Call) -> cst.BaseExpression | None:
        if not _binds_self(callee):
            return None
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == callee.name:
            if isinstance(func.value, cst.Name) and callee.cls is not None and func.value.value == callee.cls.name:
                return None  # `Cls.method(obj, x)`: the object is an argument
            return func.value  # `obj.method(x)`
        return func if callee.name == "__call__" else None  # `obj(x)`, `self.layer(x)`: the instance called

    # -- the attribute's kind -----------------------------------------------------------------------
    def field_kind(self, e: cst.Attribute, scope: "Scope", depth: int, sources: list | None = None) -> Kind | None:
        """The kind of `obj.attr` where the code shows what the object holds there: TRACED where one
        of the objects it may be (the routes that run the method, alternatives) holds a tracer,
        STATIC where every one holds a Python value, None where that is not shown."""
        attr = e.attr.value
        if attr in STATIC_ATTRIBUTES or attr in ARRAY_VIEW_ATTRIBUTES:
            return None
        kinds = [self._attribute_of(obj, attr, sc, depth, sources) for obj, sc in self.object_sources(e.value, scope)]
        if TRACED in kinds:
            return TRACED
        if kinds and all(k is STATIC for k in kinds):
            return STATIC
        return None

    def field_sources(self, e: cst.Attribute, scope: "Scope") -> list:
        """The expressions `field_kind` read `e` from (what the objects were built with)."""
        found: list = []
        self.field_kind(e, scope, 0, found)
        return found

    def returned_fields(self, call: cst.Call, scope: "Scope") -> list | None:
        """`param(t)` where the method that runs returns only fields of `self` (`return self.value`):
        the expressions the receiver was built with for them; None otherwise."""
        callee = self.callee(call, scope)
        receiver = self.call_receiver(callee, call) if callee is not None else None
        if receiver is None or not callee.returns or callee.is_lambda:
            return None
        out: list = []
        for r in callee.returns:
            if not (isinstance(r, cst.Attribute) and isinstance(r.value, cst.Name) and r.value.value == callee.params[0]):
                return None
            for obj, sc in self.object_sources(receiver, scope):
                self._attribute_of(obj, r.attr.value, sc, 0, out)
        return out or None

    def _attribute_of(self, obj: cst.BaseExpression, attr: str, scope: "Scope", depth: int,
                      sources: list | None) -> Kind | None:
        """The kind of attribute `attr` of the object `obj` (an expression that builds or holds it)."""
        inst = instances(self.model)
        if isinstance(obj, cst.Call) and isinstance(obj.func, cst.Attribute) and obj.func.attr.value in _REPLACING \
                and not any(a.star for a in obj.args):
            ci = inst.instance_class(obj.func.value, scope)
            if ci is None or inst.record_kind(ci) is None:
                return None
            given = next((a.value for a in obj.args if a.keyword is not None and a.keyword.value == attr), None)
            if given is not None:
                return self._value(given, scope, depth, sources)
            kinds = [self._attribute_of(o, attr, sc, depth, sources)
                     for o, sc in self.object_sources(obj.func.value, scope)]
            return TRACED if TRACED in kinds else (STATIC if kinds and all(k is STATIC for k in kinds) else None)
        if isinstance(obj, cst.Call):
            found = self.constructed_field(obj, attr, scope, depth)
            if found is None:
                return None
            if found[0] == "kind":
                return found[1]
            return self._value(found[1], found[2], depth, sources)
        if self.kind(obj, scope, depth) is not TRACED:
            return None
        ci = inst.instance_class(obj, scope)
        if ci is not None and inst.data_field(ci, attr):
            if sources is not None:
                sources.append((obj, scope))
            return TRACED  # a child of a traced record: jit (a loop's carry) traces every leaf
        return None

    def _value(self, e: cst.BaseExpression, scope: "Scope", depth: int, sources: list | None) -> Kind:
        if sources is not None:
            sources.append((e, scope))
        return self.kind(e, scope, depth)

    def constructed_field(self, call: cst.Call, attr: str, scope: "Scope", depth: int = 0):
        """What the construction `call` gives the new object's `attr`: ("expr", argument, scope), or
        ("kind", kind) where `__init__` stores a value computed from its parameters; None where the
        call is no construction of the module's classes or the attribute's value is not shown."""
        m = self.model
        inst = instances(m)
        ci = inst.constructed_class(call, scope)
        if ci is None or any(a.star for a in call.args):
            return None
        init = inst.method(ci, "__init__")
        if init is not None:
            values = [v for v in inst.attribute_values(ci).get(attr, []) if not isinstance(v, cst.Annotation)]
            if len(values) != 1 or not any(a is init.node for a in m.ancestors(values[0])):
                return None  # set elsewhere too (or not by `__init__`)
            value = values[0]
            if isinstance(value, cst.Name) and value.value in init.params and value.value not in init.star_params:
                found = m.bindings_at(value, init)
                if found is not None and found[0] is init and all(b.kind == "param" for b in found[1]):
                    arg = m.argument_for(call, init, value.value)
                    if arg is not None:
                        return "expr", arg, scope
                    p = init.param_nodes.get(value.value)
                    return ("expr", p.default, init.parent or m.index.scope) if p is not None and p.default else None
            return "kind", self._with_call_args(init, call, scope, depth, [value])
        if not (inst.record_kind(ci) is not None or inst.is_dataclass(ci) or inst.framework_base(ci) == "equinox.Module"):
            return None
        given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == attr), None)
        if given is None:
            fields = inst.own_fields(ci)
            if fields is None or attr not in fields:
                return None
            index = fields.index(attr)
            positional = [a.value for a in call.args if a.keyword is None]
            given = positional[index] if index < len(positional) else None
        return ("expr", given, scope) if given is not None else None

    # -- which objects an expression may be --------------------------------------------------------
    def object_sources(self, expr: cst.BaseExpression, scope: "Scope") -> list:
        """(expression, scope) of what may have built the object `expr` holds: itself where nothing
        further is shown."""
        out: list = []
        self._sources(expr, scope, out, set(), 0)
        return out

    def _sources(self, expr: cst.BaseExpression, scope: "Scope", out: list, seen: set, depth: int) -> None:
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        key = (id(expr), id(scope))
        if key in seen or depth > MAX_SOURCES or len(out) > MAX_SOURCES:
            out.append((expr, scope))
            return
        seen.add(key)
        if isinstance(expr, cst.Name) and isinstance(scope, Function):
            found = m.bindings_at(expr, scope)
            if found is not None and isinstance(found[0], Function) and len(found[1]) == 1:
                owner, b = found[0], found[1][0]
                if b.kind == "param" and _binds_self(owner) and owner.params[0] == expr.value:
                    receivers = self._self_receivers(owner)
                    if receivers:
                        for recv, sc in receivers:
                            self._sources(recv, sc, out, seen, depth + 1)
                        return
                elif b.kind in ("assign", "annassign") and b.index is None and b.value is not None:
                    self._sources(b.value, owner, out, seen, depth + 1)
                    return
        elif isinstance(expr, cst.Attribute) and m.qn(expr, scope) is None \
                and expr.attr.value not in STATIC_ATTRIBUTES:
            owners: list = []
            self._sources(expr.value, scope, owners, seen, depth + 1)  # (one `seen`: `self.next.step()` cycles)
            held: list | None = []
            for obj, sc in owners:
                found = self.constructed_field(obj, expr.attr.value, sc) if isinstance(obj, cst.Call) else None
                if found is None or found[0] != "expr":
                    held = None
                    break
                held.append((found[1], found[2]))
            if held:
                for value, sc in held:
                    self._sources(value, sc, out, seen, depth + 1)
                return
        out.append((expr, scope))

    def _self_receivers(self, fn: "Function") -> list:
        """The objects the routes that run method fn bind to `self`: the one a call being evaluated
        binds, else each traced call's receiver (`obj.method(...)`, the instance of `obj(...)`, the
        construction that runs `__init__` or a hook)."""
        bound = self._receivers.get(id(fn))
        if bound is not None:
            return [bound]
        out = []
        for r in self.model.traced.reasons.get(fn, ()):
            if r.kind != "called" or not isinstance(r.node, cst.Call) or r.caller is None:
                continue
            receiver = r.node if r.constructs else self.call_receiver(fn, r.node)
            if receiver is not None:
                out.append((receiver, r.caller))
        return out


def _binds_self(fn: "Function | None") -> bool:
    """A method whose first parameter is the instance (not a static or class method)."""
    if fn is None or fn.cls is None or fn.is_lambda or not fn.params or fn.is_classmethod:
        return False
    return not any((isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod")
                   or (isinstance(d.decorator, cst.Attribute) and d.decorator.attr.value == "staticmethod")
                   for d in fn.node.decorators)


__all__ = ["ObjectFields"]
