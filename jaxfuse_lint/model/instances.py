"""Which of the module's classes an expression is an instance of, and what calling it runs.

Model code reaches tracing through objects: `model(x)` runs `Model.__call__`,
`self.layer(x)` runs the class assigned to `self.layer`, `model.apply(variables,
x)` runs a flax linen Module's `__call__`, `net.apply(params, rng, x)` runs the
function `hk.transform` wrapped. This module answers those questions from the
model's own scope index (no type inference beyond constructors, annotations and
`self.attr = Cls(...)` assignments), and answers None whenever it is unsure.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.model.routes import LIFTED_CLASS_TRANSFORMS, MODULE_BASES, route
from jaxfuse_lint.model.scopes import ClassInfo, Function, walk

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.view import ModelView

MAX_DEPTH = 6


class Instances:
    def __init__(self, model: "ModelView") -> None:
        self.model = model
        self._classes: dict[cst.ClassDef, ClassInfo] | None = None
        self._attrs: dict[int, dict[str, list[cst.BaseExpression]]] = {}
        self._derived: set[int] | None = None  # ids of the classes another local class derives from
        self._arguments: dict[tuple[int, str], list[tuple[cst.BaseExpression, "Scope"]] | None] = {}

    # -- classes -----------------------------------------------------------------------------
    def classes(self) -> dict[cst.ClassDef, ClassInfo]:
        if self._classes is None:
            out: dict[cst.ClassDef, ClassInfo] = {}
            for node, scope in self.model.index.scope_of_node.items():
                if isinstance(scope, ClassInfo) and isinstance(scope.node, cst.ClassDef):
                    out.setdefault(scope.node, scope)
            self._classes = out
        return self._classes

    def class_named(self, expr: cst.BaseExpression, scope: "Scope", depth: int = 0) -> ClassInfo | None:
        """The module's class an expression names (`Block`), if it is one; a name bound to a flax
        lifted transform of one (`ScanBlock = nn.scan(Block, ...)`) names a Module class whose
        instances run Block's methods."""
        if not isinstance(expr, cst.Name):
            return None
        found = self.model.lookup(expr.value, scope)
        if found is None or len(found[1]) != 1:
            return None
        b = found[1][0]
        if b.kind == "class":
            return self.classes().get(b.node)
        if b.kind == "assign" and b.index is None and isinstance(b.value, cst.Call) and depth < MAX_DEPTH \
                and self.model.qn(b.value.func, found[0]) in LIFTED_CLASS_TRANSFORMS and b.value.args \
                and b.value.args[0].keyword is None and not b.value.args[0].star:
            return self.class_named(b.value.args[0].value, found[0], depth + 1)
        return None

    def has_local_subclass(self, ci: ClassInfo) -> bool:
        """Whether another class of the module derives from ci (all classes' bases are resolved
        once: asking each class about every other one was quadratic)."""
        if self._derived is None:
            self._derived = {id(parent) for c in self.classes().values() for b in self.bases(c)
                             if (parent := self.class_named(b, c.parent or self.model.index.scope)) is not None
                             and parent is not c}
        return id(ci) in self._derived

    def bases(self, ci: ClassInfo) -> Iterator[cst.BaseExpression]:
        node = ci.node
        if isinstance(node, cst.ClassDef):
            for a in node.bases:
                if a.keyword is None and not a.star:
                    yield a.value

    def method(self, ci: ClassInfo, name: str, depth: int = 0) -> Function | None:
        """`name` as looked up on the class: its own def, else a local base class's."""
        fns = [b.function for b in ci.bindings.get(name, []) if b.function is not None]
        if fns:
            return fns[-1]
        if depth > MAX_DEPTH:
            return None
        for base in self.bases(ci):
            parent = self.class_named(base, ci.parent or self.model.index.scope)
            if parent is not None and parent is not ci:
                found = self.method(parent, name, depth + 1)
                if found is not None:
                    return found
        return None

    def entry_attributes(self, ci: ClassInfo, depth: int = 0) -> dict[str, int]:
        """The framework entry points (`apply`, `init`) an instance of ci has, from its bases."""
        if depth > MAX_DEPTH:
            return {}
        scope = ci.parent or self.model.index.scope
        for base in self.bases(ci):
            qn = self.model.qn(base, scope)
            if qn in MODULE_BASES:
                return dict(MODULE_BASES[qn])
            parent = self.class_named(base, scope)
            if parent is not None and parent is not ci:
                found = self.entry_attributes(parent, depth + 1)
                if found:
                    return found
        return {}

    def framework_base(self, ci: ClassInfo, depth: int = 0) -> str | None:
        """The canonical name of the framework Module class ci derives from (through the
        module's own classes), if any: `flax.linen.Module`, `equinox.Module`..."""
        if depth > MAX_DEPTH:
            return None
        scope = ci.parent or self.model.index.scope
        for base in self.bases(ci):
            qn = self.model.qn(base, scope)
            if qn in MODULE_BASES:
                return qn
            parent = self.class_named(base, scope)
            if parent is not None and parent is not ci:
                found = self.framework_base(parent, depth + 1)
                if found is not None:
                    return found
        return None

    # -- instances ---------------------------------------------------------------------------
    def instance_class(self, expr: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> ClassInfo | None:
        if expr is None or depth > MAX_DEPTH:
            return None
        m = self.model
        if isinstance(expr, cst.Call):
            if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SAME_CLASS_METHODS:
                # `state._replace(count=n)`, `state.replace(...)`: a record of the same class
                ci = self.instance_class(expr.func.value, scope, depth + 1)
                if ci is not None and self.record_kind(ci) is not None:
                    return ci
            return self.constructed_class(expr, scope)
        if isinstance(expr, cst.Name):
            found = m.bindings_at(expr, scope)  # (the bindings that reach this read: `ylm = cls(data)` after a loop over `ylm`)
            if found is None:
                return None
            owner, bindings = found
            classes = set()
            for b in bindings:
                if b.kind == "param":
                    ci = self._param_class(b.node, owner, expr.value, depth)
                elif b.kind in ("assign", "annassign") and b.index is None:
                    ci = self.instance_class(b.value, owner, depth + 1)
                    if ci is None and b.kind == "annassign" and isinstance(b.node, cst.AnnAssign):
                        ci = self.class_named(b.node.annotation.annotation, owner)
                elif b.kind == "assign" and b.index is not None and b.value is not None:
                    ci = self.item_class(b.value, b.index, owner, depth + 1)  # `params, state = carry`
                elif b.kind == "for" and b.index is None:
                    ci = self.element_class(b.value, owner, depth + 1)
                else:
                    ci = None
                if ci is None:
                    return None
                classes.add(ci)
            return classes.pop() if len(classes) == 1 else None
        if isinstance(expr, cst.Attribute):
            owner_cls = self.instance_class(expr.value, scope, depth + 1)
            if owner_cls is None:
                return None
            values = self.attribute_values(owner_cls).get(expr.attr.value, [])
            classes = {self._value_class(v, owner_cls, depth) for v in values}
            return classes.pop() if len(classes) == 1 and None not in classes else None
        if isinstance(expr, cst.Subscript):
            return self.element_class(expr.value, scope, depth + 1)
        return None

    def _param_class(self, param: cst.CSTNode, owner: "Scope", name: str, depth: int = 0) -> ClassInfo | None:
        if not isinstance(param, cst.Param):
            return None
        if isinstance(owner, Function) and owner.cls is not None and owner.params and owner.params[0] == name \
                and name in ("self", "cls") and isinstance(owner.node, cst.FunctionDef):
            return owner.cls
        if param.annotation is not None:
            return self.class_named(param.annotation.annotation, owner.parent or owner)
        if isinstance(owner, Function) and depth < MAX_DEPTH - 1:
            # `def __init__(self, handler): self.handler = handler` with `RK(Handler())`: what the
            # module's calls pass, when every one of them passes an instance of the same class (or
            # the initial carry of the lax loops that run fn).
            passed = self.arguments_for(owner, name) or self.carried(owner, name)
            if passed:
                classes = set()
                for arg, where in passed:
                    classes.add(self.instance_class(arg, where, max(depth + 2, MAX_DEPTH - 1)))
                    if None in classes or len(classes) > 1:
                        return None
                return classes.pop() if len(classes) == 1 else None
        return None

    def constructed_class(self, call: cst.Call, scope: "Scope") -> ClassInfo | None:
        """The module's class a call constructs: `C(...)` by name, or `cls(...)` in a classmethod."""
        ci = self.class_named(call.func, scope)
        if ci is not None:
            return ci
        func = call.func
        s: "Scope | None" = scope
        while s is not None and not isinstance(s, Function):
            s = s.parent
        if isinstance(func, cst.Name) and isinstance(s, Function) and s.is_classmethod and s.params \
                and s.params[0] == func.value and self.model.lookup(func.value, scope) is not None \
                and self.model.lookup(func.value, scope)[0] is s:
            return s.cls
        return None

    def is_dataclass(self, ci: ClassInfo) -> bool:
        """A class decorated with `@dataclasses.dataclass` (its generated `__init__` calls
        `__post_init__`)."""
        if not isinstance(ci.node, cst.ClassDef):
            return False
        scope = ci.parent or self.model.index.scope
        return any(self.model.qn(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, scope)
                   == "dataclasses.dataclass" for d in ci.node.decorators)

    def item_class(self, expr: cst.BaseExpression | None, index: int, scope: "Scope", depth: int = 0) -> ClassInfo | None:
        """The class of the index-th item of a tuple: a tuple display's element, through names bound
        once, and through a parameter the module's calls (or a lax loop's initial carry) pass one."""
        if expr is None or depth > MAX_DEPTH:
            return None
        m = self.model
        if isinstance(expr, (cst.Tuple, cst.List)):
            if any(isinstance(el, cst.StarredElement) for el in expr.elements) or index >= len(expr.elements):
                return None
            return self.instance_class(expr.elements[index].value, scope, depth + 1)
        if not isinstance(expr, cst.Name):
            return None
        found = m.lookup(expr.value, scope)
        if found is None or len(found[1]) != 1:
            return None
        owner, b = found[0], found[1][0]
        if b.kind == "assign" and b.index is None:
            return self.item_class(b.value, index, owner, depth + 1)
        if b.kind != "param" or not isinstance(owner, Function):
            return None
        passed = self.arguments_for(owner, expr.value) or self.carried(owner, expr.value)
        if not passed:
            return None
        classes = {self.item_class(arg, index, where, depth + 2) for arg, where in passed}
        return classes.pop() if len(classes) == 1 and None not in classes else None

    def carried(self, fn: Function, name: str) -> list[tuple[cst.BaseExpression, "Scope"]] | None:
        """The initial carries of the module's lax loops that run fn with parameter `name` as their
        carry (`while_loop(self._cond, self._body, (x, state))`: `_cond`'s first parameter after
        `self`); None where there is none. Every iteration's carry has the structure of the initial
        one (lax checks it), so the classes of its items are the initial one's."""
        params = [p for p in fn.params if p not in fn.star_params]
        out = []
        for bound, param, init, scope in self._carries().get(id(fn), ()):
            names = params[1:] if bound and params and params[0] in ("self", "cls") else params
            if param < len(names) and names[param] == name:
                out.append((init, scope))
        return out or None

    def _carries(self) -> dict[int, list]:
        """id(function) -> (bound to an instance, the parameter receiving the carry, the initial
        carry, its scope) for every lax loop of the module (resolved once)."""
        found = self.__dict__.get("_carry_map")
        if found is not None:
            return found
        m = self.model
        found = self.__dict__["_carry_map"] = {}
        for site in m.index.calls:
            r = route(m.qn(site.call.func, site.scope))
            if r is None or r.carry is None or any(a.star for a in site.call.args):
                continue
            pos, kw, param = r.carry
            init = _argument(site.call, pos, kw)
            if init is None:
                continue
            for slot_pos, slot_kw in r.slots:
                given = _argument(site.call, slot_pos, slot_kw)
                for fn, bound in self._functions_named(given, site.scope):
                    found.setdefault(id(fn), []).append((bound, param, init, site.scope))
        return found

    def _functions_named(self, expr: cst.BaseExpression | None, scope: "Scope") -> list[tuple[Function, bool]]:
        """The module's function an expression names (`body`), or a method bound to an instance
        (`self.body`, `solver.body`), with whether it is bound."""
        m = self.model
        if isinstance(expr, cst.Name):
            fn = m.function_named(expr.value, scope)
            return [(fn, False)] if fn is not None else []
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            if expr.value.value == "self":
                fn = m.method_of(scope, expr.attr.value)
                return [(fn, True)] if fn is not None else []
            ci = self.instance_class(expr.value, scope, MAX_DEPTH - 1)
            fn = self.method(ci, expr.attr.value) if ci is not None else None
            return [(fn, True)] if fn is not None else []
        return []

    # -- records: pytree classes whose fields are the pytree's children --------------------------
    def record_kind(self, ci: ClassInfo, depth: int = 0) -> str | None:
        """"namedtuple" for a `typing.NamedTuple` class (every field is a child: a leaf of a traced
        tuple is a tracer), "struct" for a flax struct dataclass / `PyTreeNode` (children unless
        declared `pytree_node=False`); None for any other class."""
        if depth > MAX_DEPTH or not isinstance(ci.node, cst.ClassDef):
            return None
        m = self.model
        scope = ci.parent or m.index.scope
        for d in ci.node.decorators:
            target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
            if m.qn(target, scope) in _STRUCT_DECORATORS:
                return "struct"
        for base in self.bases(ci):
            qn = m.qn(base, scope)
            if qn in _NAMEDTUPLE_BASES:
                return "namedtuple"
            if qn in _STRUCT_BASES:
                return "struct"
            parent = self.class_named(base, scope)
            if parent is not None and parent is not ci:
                found = self.record_kind(parent, depth + 1)
                if found is not None:
                    return found
        return None

    def own_fields(self, ci: ClassInfo) -> list[str] | None:
        """A record class's fields in the order its constructor takes them positionally; None where
        a base class of the module may add fields before them."""
        if not isinstance(ci.node, cst.ClassDef):
            return None
        scope = ci.parent or self.model.index.scope
        if any(self.class_named(b, scope) is not None for b in self.bases(ci)):
            return None
        return [small.target.value for stmt in ci.node.body.body if isinstance(stmt, cst.SimpleStatementLine)
                for small in stmt.body if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)]

    def data_field(self, ci: ClassInfo, attr: str, depth: int = 0) -> bool:
        """Whether `attr` is a field of record class ci that is a pytree child (declared with an
        annotation in the class body, and, in a struct, not `field(pytree_node=False)`)."""
        kind = self.record_kind(ci)
        if kind is None or depth > MAX_DEPTH or not isinstance(ci.node, cst.ClassDef):
            return False
        m = self.model
        scope = ci.parent or m.index.scope
        for stmt in ci.node.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) \
                        and small.target.value == attr:
                    value = small.value
                    if kind == "struct" and isinstance(value, cst.Call) and any(
                            a.keyword is not None and a.keyword.value == "pytree_node"
                            and not (isinstance(a.value, cst.Name) and a.value.value == "True") for a in value.args):
                        return False
                    return True
        if ci.bindings.get(attr):
            return False  # a method, a property or a class attribute of that name
        for base in self.bases(ci):
            parent = self.class_named(base, scope)
            if parent is not None and parent is not ci and self.data_field(parent, attr, depth + 1):
                return True
        return False

    def arguments_for(self, fn: Function, name: str) -> list[tuple[cst.BaseExpression, "Scope"]] | None:
        """The expressions the module's calls of `fn` pass for its parameter `name` (calls by name,
        `Class(...)` for `__init__`, `obj.method(...)`/`self.method(...)` for a method), with the
        scope each is evaluated in; a default value counts where a call leaves the parameter out.
        None when some call cannot be read (`*args`, `**kwargs`) or `fn` is never called here."""
        key = (id(fn), name)
        if key in self._arguments:
            return self._arguments[key]
        self._arguments[key] = None  # a cycle (an argument of fn's own call) reads as unknown
        out: list[tuple[cst.BaseExpression, "Scope"]] | None = []
        default = fn.param_nodes.get(name).default if name in fn.param_nodes else None
        m = self.model
        name_called = fn.cls.name if fn.name == "__init__" and fn.cls is not None else fn.name
        for site in self.sites_named(name_called):
            if not self.calls(site.call.func, site.scope, fn):
                continue
            if any(a.star for a in site.call.args):
                out = None
                break
            arg = m.argument_for(site.call, fn, name)
            if arg is None and default is not None:
                out.append((default, fn.parent or m.index.scope))
            elif arg is None:
                out = None
                break
            else:
                out.append((arg, site.scope))
        if out is not None and not out:
            out = None
        self._arguments[key] = out
        return out

    def sites_named(self, name: str) -> list:
        """The module's calls whose callee is written `name(...)` or `<expr>.name(...)`."""
        return self.model.index.calls_named(name)

    def calls(self, func: cst.BaseExpression, scope: "Scope", fn: Function) -> bool:
        """Whether calling `func` runs `fn` (by name, a class's constructor, a method)."""
        if isinstance(func, cst.Name):
            if fn.name == "__init__" and fn.cls is not None:
                ci = self.class_named(func, scope)
                return ci is not None and self.method(ci, "__init__") is fn
            return func.value == fn.name and self.model.function_named(func.value, scope) is fn
        if isinstance(func, cst.Attribute) and fn.cls is not None and func.attr.value == fn.name:
            ci = self.instance_class(func.value, scope, MAX_DEPTH - 1)
            return ci is not None and self.method(ci, fn.name) is fn
        return False

    def _value_class(self, v: cst.BaseExpression, ci: ClassInfo, depth: int) -> ClassInfo | None:
        scope = ci.parent or self.model.index.scope
        if isinstance(v, cst.Annotation):
            return self.class_named(v.annotation, scope) or self._element_annotation(v.annotation, scope)
        return self.instance_class(v, self.model.scope_of(v), depth + 1)

    def element_class(self, expr: cst.BaseExpression | None, scope: "Scope", depth: int = 0) -> ClassInfo | None:
        """The class of the items of a list/tuple expression (`[Block() for _ in range(n)]`,
        `self.layers`)."""
        if expr is None or depth > MAX_DEPTH:
            return None
        if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
            classes = {self.instance_class(el.value, scope, depth + 1) for el in expr.elements}
            return classes.pop() if len(classes) == 1 and None not in classes else None
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self.instance_class(expr.elt, self.model.scope_of(expr.elt), depth + 1)
        if isinstance(expr, cst.Attribute):
            owner_cls = self.instance_class(expr.value, scope, depth + 1)
            if owner_cls is None:
                return None
            values = self.attribute_values(owner_cls).get(expr.attr.value, [])
            classes = set()
            for v in values:
                if isinstance(v, cst.Annotation):
                    classes.add(self._element_annotation(v.annotation, owner_cls.parent or self.model.index.scope))
                else:
                    classes.add(self.element_class(v, self.model.scope_of(v), depth + 1))
            return classes.pop() if len(classes) == 1 and None not in classes else None
        if isinstance(expr, cst.Name):
            found = self.model.lookup(expr.value, scope)
            if found is not None and len(found[1]) == 1 and found[1][0].kind == "assign" and found[1][0].index is None:
                return self.element_class(found[1][0].value, found[0], depth + 1)
            if found is not None and len(found[1]) == 1 and found[1][0].kind == "param" \
                    and isinstance(found[0], Function) and depth < MAX_DEPTH - 1:
                # `def __init__(self, factors): self.factors = factors` with `Sum([A(), A()])`: the items
                # of what every call of the module passes.
                passed = self.arguments_for(found[0], expr.value)
                if passed:
                    classes = {self.element_class(arg, where, depth + 2) for arg, where in passed}
                    return classes.pop() if len(classes) == 1 and None not in classes else None
        return None

    def _element_annotation(self, ann: cst.BaseExpression, scope: "Scope") -> ClassInfo | None:
        """`list[Block]`, `tuple[Block, ...]`, `Sequence[Block]`."""
        if isinstance(ann, cst.Subscript) and ann.slice:
            first = ann.slice[0].slice
            if isinstance(first, cst.Index):
                return self.class_named(first.value, scope)
        return None

    def attribute_values(self, ci: ClassInfo) -> dict[str, list[cst.BaseExpression]]:
        """What each instance attribute is set to: class-level fields (annotations count) and
        `self.attr = value` in the class's methods."""
        key = id(ci)
        found = self._attrs.get(key)
        if found is not None:
            return found
        out: dict[str, list[cst.BaseExpression]] = {}
        node = ci.node
        if isinstance(node, cst.ClassDef):
            for stmt in node.body.body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                            out.setdefault(small.target.value, []).append(
                                small.value if small.value is not None else small.annotation)
                        elif isinstance(small, cst.Assign):
                            for t in small.targets:
                                if isinstance(t.target, cst.Name):
                                    out.setdefault(t.target.value, []).append(small.value)
            for n in walk(node.body):
                if isinstance(n, cst.Assign):
                    targets = [t.target for t in n.targets]
                    value = n.value
                elif isinstance(n, cst.AnnAssign) and n.value is not None:
                    targets, value = [n.target], n.value
                else:
                    continue
                for t in targets:
                    if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                        out.setdefault(t.attr.value, []).append(value)
        self._attrs[key] = out
        return out


def _argument(call: cst.Call, index: int | None, name: str | None) -> cst.BaseExpression | None:
    """The argument a call passes at a position or by keyword (no `*args` before it)."""
    positional = [a for a in call.args if a.keyword is None]
    if index is not None and index < len(positional) and not any(a.star for a in positional[:index + 1]):
        return positional[index].value
    return next((a.value for a in call.args if name is not None and a.keyword is not None
                 and a.keyword.value == name), None)


# Methods of a record that return a record of the same class.
_SAME_CLASS_METHODS = frozenset({"_replace", "replace"})
_NAMEDTUPLE_BASES = frozenset({"typing.NamedTuple", "typing_extensions.NamedTuple"})
_STRUCT_DECORATORS = frozenset({"flax.struct.dataclass", "chex.dataclass"})
_STRUCT_BASES = frozenset({"flax.struct.PyTreeNode"})


def instances(model: "ModelView") -> Instances:
    found = model.__dict__.get("_instances")
    if found is None:
        found = model.__dict__["_instances"] = Instances(model)
    return found
