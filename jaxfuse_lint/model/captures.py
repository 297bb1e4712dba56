"""Values that compiled traced code captures: reads, inside a function `jit` compiles, of names
bound outside traced code (module level, or an enclosing function that is not traced). JAX
folds such a value into the program as a constant when it is an array (JF202 for NumPy
arrays, JF207 for jax arrays); what counts as an array is the caller's predicate."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from jaxfuse_lint.model.api import STATIC_ATTRIBUTES
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.scopes import Binding, ClassInfo, Function, Scope, walk
from jaxfuse_lint.model.staging import own_nodes, staging
from jaxfuse_lint.model.staging_transforms import ACCEPTS_STATIC_ARGNAMES, FILTERED, STAGING

if TYPE_CHECKING:
    from jaxfuse_lint.model.semantic import SemanticModel


@dataclass
class Capture:
    fn: Function  # the compiled traced function that reads it
    name: cst.Name  # the read
    owner: Scope  # where the value is bound
    bindings: list[Binding]


def captured_reads(model: "SemanticModel", is_array: Callable[[list[Binding], Scope], bool]) -> Iterator[Capture]:
    """Every read in compiled traced code of an array bound outside traced code, except reads
    that only use it as Python values (shapes, `len`, static arguments)."""
    st = staging(model)
    for fn in model.traced.reasons:
        if model.is_kernel(fn):
            continue  # a Pallas kernel cannot capture constants at all: Pallas says so itself
        if not st.is_compiled(fn):
            continue  # run eagerly (vmap, a lax loop outside jit): captured arrays are operands
        if model.host_code.runs_on_host(fn):
            continue  # a host callback's body, or code run at trace time on purpose: reads host values
        for read in fn.reads:
            found = model.lookup(read.name.value, fn)
            if found is None:
                continue
            owner, bindings = found
            if owner is fn or (isinstance(owner, Function) and model.is_traced(owner)):
                continue  # a value of traced code: JF201/JF203 territory
            if not is_array(bindings, owner) or static_use(model, read.name):
                continue
            yield Capture(fn, read.name, owner, bindings)


# Conversions that make a jax array of any array (`A = jnp.asarray(A)`, `A = jax.device_put(A)`).
_TO_DEVICE = frozenset({"jax.numpy.asarray", "jax.numpy.array", "jax.device_put"})


def array_kinds(model: "SemanticModel", bindings: list[Binding], owner: Scope) -> dict[int, str] | None:
    """For a name every binding of which makes an array: id(binding) -> "numpy" or "jax"
    (`a += 1` bindings keep the kind and are left out). None when some binding may be
    something else. A rebinding that converts the name itself to a device array
    (`A = jnp.asarray(A)` under an `if`) is a jax array when the others are arrays."""
    kinds: dict[int, str] = {}
    converted = []
    for b in bindings:
        if b.kind == "augassign":
            continue
        if b.kind not in ("assign", "annassign", "walrus") or b.value is None:
            return None
        if model.numpy_arrays.binding_is_array([b], owner):
            kinds[id(b)] = "numpy"
        elif model.device_arrays.binding_is_array([b], owner):
            kinds[id(b)] = "jax"
        elif b.index is None and _converts_itself(model, b, owner):
            converted.append(b)
        else:
            return None
    if not kinds:
        return None
    for b in converted:
        kinds[id(b)] = "jax"
    return kinds


def _converts_itself(model: "SemanticModel", b: Binding, owner: Scope) -> bool:
    value = b.value
    if not isinstance(value, cst.Call) or model.qn(value.func, owner) not in _TO_DEVICE or not value.args:
        return False
    first = value.args[0]
    return first.keyword is None and not first.star and isinstance(first.value, cst.Name) and first.value.value == b.name


def captured_mixed_arrays(model: "SemanticModel", kind: str) -> Iterator[tuple[Capture, list[Binding], bool]]:
    """Reads in compiled traced code of a name bound outside it to an array on every path,
    NumPy on some and jax on others (`A = np.ones(n)`, then `A = jnp.asarray(A)` under an
    `if`): the bindings of `kind` that may still hold when the binding code has run (for the
    module: at its end; for an enclosing function: where it returns), and whether bindings of
    the other kind may hold there too."""
    for c in captured_reads(model, lambda bindings, owner: _mixed(model, bindings, owner)):
        final = model.flow.exit_bindings(c.name.value, c.owner)
        if not final:
            continue
        # Rebindings in functions (`global A` then `A = ...`) may hold whenever they ran.
        final = list(final) + [b for b in c.bindings if model.function_of(b.node) not in (None, c.owner)
                               and b not in final]
        kinds = array_kinds(model, c.bindings, c.owner) or {}
        of_kind = [b for b in final if kinds.get(id(b)) == kind]
        if of_kind:
            yield c, of_kind, any(kinds.get(id(b)) not in (kind, None) for b in final)


def _mixed(model: "SemanticModel", bindings: list[Binding], owner: Scope) -> bool:
    kinds = array_kinds(model, bindings, owner)
    return kinds is not None and len(set(kinds.values())) == 2


@dataclass
class AttributeCapture:
    fn: Function  # the compiled traced method that reads it
    node: cst.Attribute  # the read `self.table`
    cls: ClassInfo
    values: list[cst.BaseExpression]  # what the attribute (or the element read) is set to, of the kind asked for
    route: str  # how the instance gets into the compiled code, for messages
    constructor: cst.Call | None = None  # `Mesh(4096)`: the call that made the instance, where known
    owner: Scope | None = None  # where the instance is bound (object attributes)


def captured_attributes(model: "SemanticModel", kind: str) -> Iterator[AttributeCapture]:
    """Reads `self.table` in compiled traced methods where the instance is not an argument but
    a constant of the trace — the method is jitted as a bound method (`jax.jit(self.apply)`),
    `self` is a static argument, or the method is called from compiled code on an instance
    bound outside it (`MODEL.apply(x)`) — of an attribute that every assignment in a plain
    class (no framework base, not a registered pytree) sets to an array (`kind`: "numpy" or
    "jax"). Framework modules (flax, equinox) pass their fields as pytree leaves: not reported."""
    st = staging(model)
    for fn in model.traced.reasons:
        ci = fn.cls
        if ci is None or not fn.params or fn.params[0] != "self" or model.is_kernel(fn) or not st.is_compiled(fn):
            continue
        route = _self_is_constant(model, fn, 0)
        if route is None or not _plain_class(model, ci, 0):
            continue
        attrs = _attribute_kinds(model, ci)
        for node in own_nodes(fn):
            if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"):
                continue
            found = attrs.get(node.attr.value)
            values = _attribute_values(model, node, found, kind) if found else []
            if not values:
                continue
            if instances(model).method(ci, node.attr.value) is not None or _written(model, node):
                continue
            b = model.bindings_at(node.value, fn)
            if b is None or b[0] is not fn or any(x.kind != "param" for x in b[1]):
                continue
            if static_use(model, _read_node(model, node)):
                continue
            yield AttributeCapture(fn, node, ci, values, route)


def captured_object_attributes(model: "SemanticModel", kind: str) -> Iterator[AttributeCapture]:
    """Reads `mesh.k` in compiled traced code of an instance bound outside traced code (at module
    level, or in an enclosing function that is not traced: a jitted closure) to one of the
    module's plain classes, whose attribute every assignment in the class sets to an array of
    `kind` (as `captured_attributes`). `AttributeCapture.constructor` is the call that made it."""
    st = staging(model)
    inst = instances(model)
    for fn in model.traced.reasons:
        if model.is_kernel(fn) or not st.is_compiled(fn) or model.host_code.runs_on_host(fn):
            continue
        for node in own_nodes(fn):
            if not (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)) \
                    or node.value.value in ("self", "cls"):
                continue
            found = model.lookup(node.value.value, fn)
            if found is None:
                continue
            owner, bindings = found
            if owner is fn or (isinstance(owner, Function) and model.is_traced(owner)):
                continue  # an argument or a value of traced code
            if len(bindings) != 1 or bindings[0].kind not in ("assign", "annassign") or bindings[0].index is not None:
                continue
            ci = inst.instance_class(node.value, fn)
            if ci is None or not _plain_class(model, ci, 0) or inst.method(ci, node.attr.value) is not None:
                continue
            attrs = _attribute_kinds(model, ci).get(node.attr.value)
            values = _attribute_values(model, node, attrs, kind) if attrs else []
            if not values or _written(model, node) or static_use(model, _read_node(model, node)):
                continue
            value = bindings[0].value
            constructor = value if isinstance(value, cst.Call) and inst.class_named(value.func, owner) is ci else None
            where = "at module level" if not isinstance(owner, Function) else f"in `{owner.display_name}`"
            yield AttributeCapture(fn, node, ci, values, f"`{node.value.value}` is an instance bound {where}",
                                   constructor, owner)


def _read_node(model: "SemanticModel", node: cst.Attribute) -> cst.CSTNode:
    """The read of an attribute's value: `self.t[0]` for an element of a tuple attribute."""
    parent = model.parent(node)
    if isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1 \
            and isinstance(parent.slice[0].slice, cst.Index) and isinstance(parent.slice[0].slice.value, cst.Integer):
        return parent
    return node


def _written(model: "SemanticModel", node: cst.Attribute) -> bool:
    parent = model.parent(node)
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) or (
        isinstance(parent, cst.Call) and parent.func is node)


def _self_is_constant(model: "SemanticModel", fn: Function, depth: int) -> str | None:
    """How `self` reaches fn's compiled code as a Python object, not a traced argument."""
    if depth > 4:
        return None
    for r in model.traced.reasons.get(fn, ()):
        if r.kind == "transform" and r.bound_method and r.transform in STAGING and r.transform not in FILTERED:
            return f"`{fn.name}` is jitted as a bound method: `self` is part of the function"
        if r.kind == "decorator" and r.transform in ACCEPTS_STATIC_ARGNAMES and (
                0 in r.static_argnums or "self" in r.static_argnames):
            return "`self` is a static argument"
        if r.kind in ("control-flow", "driver") and isinstance(r.node, cst.Call):
            # `lax.while_loop(cond, self._step, state)` in a method whose `self` is a constant: the
            # bound method carries the same object into the loop body.
            caller = model.function_of(r.node)
            if caller is not None and caller.cls is fn.cls and caller.params and caller.params[0] == "self" and any(
                    isinstance(a.value, cst.Attribute) and isinstance(a.value.value, cst.Name)
                    and a.value.value.value == "self" and a.value.attr.value == fn.name for a in r.node.args):
                found = _self_is_constant(model, caller, depth + 1)
                if found is not None:
                    return found
        if r.kind == "called" and isinstance(r.node, cst.Call) and isinstance(r.node.func, cst.Attribute) \
                and isinstance(r.node.func.value, cst.Name) and r.caller is not None:
            base = r.node.func.value
            caller = r.caller
            if caller.cls is not None and caller.params and caller.params[0] == base.value == "self":
                found = model.bindings_at(base, caller)
                if found is not None and found[0] is caller and _self_is_constant(model, caller, depth + 1):
                    return _self_is_constant(model, caller, depth + 1)
                continue
            found = model.lookup(base.value, caller)
            if found is None:
                continue
            owner, bindings = found
            if isinstance(owner, Function) and (owner is caller or model.is_traced(owner)):
                continue  # an argument or a value of traced code: its fields may be tracers
            if any(b.kind not in ("assign", "annassign") for b in bindings):
                continue
            if instances(model).instance_class(base, caller) is fn.cls:
                return f"`{base.value}` is an instance bound outside the compiled code"
    return None


# Class decorators that make instances pytrees (their fields become leaves of an argument).
def _plain_class(model: "SemanticModel", ci: ClassInfo, depth: int) -> bool:
    """A class with no base but local plain classes (or `object`), no decorator but
    `dataclasses.dataclass`: not a flax/equinox/haiku module, not a registered pytree."""
    node = ci.node
    if not isinstance(node, cst.ClassDef) or depth > 4 or node.keywords:
        return False
    scope = ci.parent or model.index.scope
    for d in node.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if model.qn(target, scope) != "dataclasses.dataclass":
            return False
    for base in instances(model).bases(ci):
        if model.qn(base, scope) == "builtins.object":
            continue
        parent = instances(model).class_named(base, scope)
        if parent is None or parent is ci or not _plain_class(model, parent, depth + 1):
            return False
    return not instances(model).has_local_subclass(ci)


def _attribute_kinds(model: "SemanticModel", ci: ClassInfo) -> dict[str, list[tuple[str, cst.BaseExpression]]]:
    """attr -> [(kind, value)] for the attributes every write of which in the class sets an array
    (`self.table = np.ones(n)`, `self.k = jnp.fft.fftfreq(n)`, `self.A = jnp.asarray(self.A)`);
    attributes written any other way (tuple targets, loops, `with`) are left out."""
    node = ci.node
    out: dict[str, list[tuple[str, cst.BaseExpression]]] = {}
    bad: set[str] = set()
    converted: dict[str, list[cst.BaseExpression]] = {}
    for stmt in node.body.body:  # class-level fields
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                    [small.target] if isinstance(small, cst.AnnAssign) else [])
                for t in targets:
                    if isinstance(t, cst.Name):
                        bad.add(t.value)  # a class attribute: shared, possibly rebound on the class
    for n in walk(node.body):
        if isinstance(n, (cst.Assign, cst.AnnAssign)):
            targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
            value = n.value
        elif isinstance(n, (cst.AugAssign, cst.For, cst.WithItem, cst.NamedExpr, cst.Del)):
            targets = [getattr(n, "target", None) or getattr(n, "asname", None)]
            value = None
        else:
            continue
        for t in targets:
            if isinstance(t, cst.AsName):
                t = t.name
            if t is None:
                continue
            for sub in walk(t):
                if isinstance(sub, cst.Attribute) and isinstance(sub.value, cst.Name) and sub.value.value == "self":
                    attr = sub.attr.value
                    if isinstance(n, cst.AugAssign) and sub is t:
                        continue  # `self.table *= 2` keeps an array an array
                    if sub is not t or value is None:
                        bad.add(attr)
                        continue
                    scope = model.scope_of(value)
                    if model.numpy_arrays.is_array(value, scope):
                        out.setdefault(attr, []).append(("numpy", value))
                    elif model.device_arrays.is_array(value, scope):
                        out.setdefault(attr, []).append(("jax", value))
                    elif _array_tuple(model, value, scope):
                        # `self.test_cases = (maps, starts)`: read as `self.test_cases[0]`.
                        out.setdefault(attr, []).append((TUPLE, value))
                    elif _converts_attribute(model, value, attr, scope):
                        converted.setdefault(attr, []).append(value)
                    else:
                        bad.add(attr)
    for attr, values in converted.items():
        if attr not in out:
            bad.add(attr)
            continue
        for v in values:
            # `self.A = np.ones(n)` then, in the same block, `self.A = jnp.asarray(self.A)`:
            # the NumPy array never outlives the method.
            line = model.statement_of(v)
            block = model.parent(line)
            body = list(getattr(block, "body", ()))
            out[attr] = [(k, w) for k, w in out[attr] if not (
                k == "numpy" and model.statement_of(w) in body and line in body
                and body.index(model.statement_of(w)) < body.index(line))]
            out[attr].append(("jax", v))
    return {a: v for a, v in out.items() if a not in bad}


TUPLE = "tuple"  # an attribute set to a tuple of arrays (`_attribute_kinds`)


def _array_tuple(model: "SemanticModel", value: cst.BaseExpression, scope: Scope) -> bool:
    return isinstance(value, (cst.Tuple, cst.List)) and bool(value.elements) and all(
        not isinstance(el, cst.StarredElement) and (model.numpy_arrays.is_array(el.value, scope)
                                                    or model.device_arrays.is_array(el.value, scope))
        for el in value.elements)


def _element_kind(model: "SemanticModel", value: cst.BaseExpression) -> str | None:
    scope = model.scope_of(value)
    if model.numpy_arrays.is_array(value, scope):
        return "numpy"
    if model.device_arrays.is_array(value, scope):
        return "jax"
    return None


def _attribute_values(model: "SemanticModel", node: cst.Attribute, found, kind: str) -> list[cst.BaseExpression]:
    """What the read `node` (`self.table`, `self.test_cases[0]`, `mesh.k`) gives, of `kind`: the
    attribute's values, or for a tuple attribute the element a literal index reads."""
    index = None
    if any(k == TUPLE for k, _ in found):
        parent = model.parent(node)
        if not (isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1
                and isinstance(parent.slice[0].slice, cst.Index)
                and isinstance(parent.slice[0].slice.value, cst.Integer)):
            return []  # the whole tuple: where its arrays go is not followed
        index = int(parent.slice[0].slice.value.value, 0)
    out = []
    for k, value in found:
        if k == TUPLE:
            if not isinstance(value, (cst.Tuple, cst.List)) or not -len(value.elements) <= index < len(value.elements):
                return []
            value = value.elements[index].value
            k = _element_kind(model, value) or ""
        elif index is not None:
            return []  # an array on some paths, a tuple on others
        if k == kind:
            out.append(value)
    return out


def _converts_attribute(model: "SemanticModel", value: cst.BaseExpression, attr: str, scope: Scope) -> bool:
    if not isinstance(value, cst.Call) or model.qn(value.func, scope) not in _TO_DEVICE or not value.args:
        return False
    first = value.args[0]
    v = first.value
    return first.keyword is None and not first.star and isinstance(v, cst.Attribute) and \
        isinstance(v.value, cst.Name) and v.value.value == "self" and v.attr.value == attr


def static_use(model: "SemanticModel", name: cst.Name) -> bool:
    """The read uses the array only as Python values: `.shape`/`.ndim`..., `len(...)`,
    `list(...)`, `.tolist()`, or an argument jax reads as Python numbers (`jnp.split(x, SPLITS)`)."""
    parent = model.parent(name)
    if isinstance(parent, cst.Attribute) and parent.value is name and parent.attr.value in STATIC_ATTRIBUTES:
        return True
    scope = model.scope_of(name)
    if model.host_code.at_compile_time(name, scope):
        return True  # under `jax.ensure_compile_time_eval()`: a concrete value on purpose
    # Followed further (model/static_use.py): through names, tuples and helpers to axes, shapes,
    # permutations, Python indices and control; nothing of it reaches the program.
    return model.static_uses.uses(name, scope).static_metadata
