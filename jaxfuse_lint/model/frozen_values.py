"""Values frozen into a compiled program: read while a function is traced, rebound between two
calls that reuse the program (JF404's evidence).

A compiled function reads a module global, a local of an enclosing function, or an attribute
of the object its method is bound to, while it is traced; the value is baked into the program,
and a later call with arguments of the same shapes reuses it. The harm needs a timeline: a
call that traces the function, then a rebinding, then a call that reuses the program. This
module walks the host code that runs (module-level statements, functions in the order they
call each other) as a small state machine per subject:

    0 not traced yet    --call-->    1 traced (first call; the value then is frozen)
    1                   --rebind-->  2 rebound after the trace
    2                   --call-->    3 a call reuses the program with the old value: the finding

Branches are alternatives (the union of their states), a loop body runs once or twice (so a
rebinding and a call in one loop meet on the second iteration), and a call of one of the
module's host functions runs its body in place (a writer, `global g; g = v`, or a helper that
calls the jitted function), up to a few calls deep. Subjects:

- a module global (`GlobalName`): module-level assignments and `global` writes in functions;
- a local of the function that defines the jitted closure (`ClosureLocal`): only that
  function's body runs; a def inside a loop is a new function each iteration (not followed);
- an attribute of the object a jitted method is bound to (`ObjectAttribute`): `obj.E = v`,
  `self.E = v` in a method of the object called between, per object (`m` and `m2` apart);
- an attribute of an object passed as a static argument (`StaticArgumentAttribute`): the calls
  that pass that object in the static position, and `obj.E = v` between them.

Rebindings in a loop count only when the value can change from one iteration to the next
(it reads the name itself, a loop target, or a value the loop carries, such as the jitted
function's own output `field = step(field)`); `n = len(data)` recomputed each epoch does not.

After the rebinding, names assigned from the new value are followed (`opt_state = tx.init(params)`
after `tx = optax.chain(...)`): the timeline records which arguments of the call that reuses the
program carry it (`Timeline.rebuilt`), since a new pytree structure or static value there makes jit
trace again and read the new value. `jax.clear_caches()` empties every cache: the next call
traces afresh, as after a new function object.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model.scopes import Binding, ClassInfo, Function, iter_children, walk
from jaxfuse_lint.model.traced import keyword, positional

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.semantic import SemanticModel

MAX_INLINE = 4
# Calls that empty every compilation cache: the next call of any jitted function traces again.
_CLEAR_CACHES = frozenset({"jax.clear_caches", "jax.clear_backends"})
_LOOPS = (cst.For, cst.While)
_SKIP = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True, eq=False)
class Event:
    kind: str  # "use" (a call that traces or reuses the program) | "rebind" | "reset" (a new function)
    node: cst.CSTNode  # the call, or the binding statement
    # rebind: how it happens, one call away (`update_global()` on line 30 rebinds `g`)
    via: cst.Call | None = None
    # rebind: the assigned value's statement, for messages
    binding: Binding | None = None


@dataclass(frozen=True)
class Timeline:
    """The witness of a finding: the first call (tracing with `first_value`), the rebinding,
    and the later call that reuses the program. `rebuilt`: the arguments of that later call
    computed, after the rebinding, from the new value (`opt_state = tx.init(params)` after
    `tx = ...`): each (the argument, the statement that rebuilt what it reads)."""

    first_use: cst.CSTNode
    first_value: Event | None
    rebind: Event
    stale_use: cst.CSTNode
    rebuilt: tuple = ()


# A state: level -> witness. 0: (last rebind event or None,); 1: (first use, value at it);
# 2: (first use, value, rebind, names rebuilt from the new value since); 3: a Timeline.
State = dict


@dataclass
class Subject:
    """What is frozen and how the host code touches it (subclasses: a global, a closure's local,
    an object's attribute)."""

    model: "SemanticModel"
    fn: Function  # the staged function that reads the value
    entries: frozenset = field(default_factory=frozenset)

    def uses(self, call: cst.Call, scope: "Scope", selfkey) -> bool:
        raise NotImplementedError

    def rebinds(self, node: cst.CSTNode, scope: "Scope", selfkey) -> Iterator[Event]:
        raise NotImplementedError

    def read_in(self, expr: cst.CSTNode, scope: "Scope", selfkey) -> bool:
        """Whether expr reads the subject's current value."""
        return False

    def method_self(self, call: cst.Call, scope: "Scope", selfkey):
        """The object key `self` stands for in a method this call runs (attributes only)."""
        return None


def compile_entries(model: "SemanticModel", fn: Function) -> frozenset:
    """The functions whose compiled call traces fn: fn, its traced callers (up the chain) and the
    traced functions that apply a transform to it (`jax.grad(loss)` inside a jitted step)."""
    out = {fn}
    stack = [fn]
    while stack:
        f = stack.pop()
        for r in model.traced.reasons.get(f, ()):
            up = r.caller if r.caller is not None else (
                model.function_of(r.node) if r.kind in ("decorator", "transform", "control-flow", "driver") else None)
            if up is not None and up not in out and model.is_traced(up):
                out.add(up)
                stack.append(up)
    return frozenset(out)


def compiled_callees(model: "SemanticModel", call: cst.Call, scope: "Scope") -> frozenset[Function]:
    """The module's functions a call runs through a compiled program: `f(x)` for a jit-decorated
    def or a name bound to `jax.jit(f)` (`f = jax.jit(f)` included), `jax.jit(f)(x)`,
    `obj.method(x)` for a jit-decorated method, `self.step_jit(x)` set to `jax.jit(...)`.
    Computed once per call and scope: every subject's walk asks it of the same host calls."""
    memo = model.__dict__.setdefault("_compiled_callees", {})
    key = (id(call), id(scope))
    found = memo.get(key)
    if found is None:
        found = memo[key] = frozenset(_compiled_callees(model, call, scope))
    return found


def _compiled_callees(model: "SemanticModel", call: cst.Call, scope: "Scope") -> set[Function]:
    analysis = model.traced_analysis()
    func = call.func
    out: set[Function] = set()
    if isinstance(func, cst.Call):
        t = analysis.transform_of(func.func, scope)
        if t is not None and t[0] in COMPILING:
            out.update(f for f, _ in analysis.callables(positional(func, 0) or keyword(func, "fun"), scope))
        return out
    for f, _ in analysis.callables(func, scope, direct_only=True):
        if _compiled_def(model, f):
            out.add(f)
    # Through a holder: a name or attribute bound to `jax.jit(...)`.
    for value, where in _holder_values(model, func, scope):
        if isinstance(value, cst.Call):
            t = analysis.transform_of(value.func, where)
            if t is not None and t[0] in COMPILING:
                out.update(f for f, _ in analysis.callables(positional(value, 0) or keyword(value, "fun"), where))
    return out


def _compiled_def(model: "SemanticModel", fn: Function) -> bool:
    """A def decorated with (or rebound to) a compiling transform."""
    return any(r.kind in ("decorator", "transform") and r.transform in COMPILING and (
        r.kind == "decorator" or r.rebound is not None) for r in model.traced.reasons.get(fn, ()))


def _holder_values(model: "SemanticModel", func: cst.BaseExpression, scope: "Scope"):
    if isinstance(func, cst.Name):
        found = model.lookup(func.value, scope)
        if found is not None and len(found[1]) <= 4:
            for b in found[1]:
                if b.kind == "assign" and b.index is None and b.value is not None:
                    yield b.value, found[0]
    elif isinstance(func, cst.Attribute):
        from jaxfuse_lint.model.instances import instances

        inst = instances(model)
        ci = inst.instance_class(func.value, scope)
        if ci is not None:
            # (An instance attribute shadows a method of its name: `self.compute = jax.jit(self.compute)`.)
            for v in inst.attribute_values(ci).get(func.attr.value, []):
                if not isinstance(v, cst.Annotation):
                    yield v, model.scope_of(v)


class _Walker:
    """Runs the state machine of one subject over host code."""

    def __init__(self, subject: Subject) -> None:
        self.s = subject
        self.model = subject.model
        self.active: list[int] = []
        self.calls: list[cst.Call] = []  # the host calls being run in place, outermost first
        self.analysis = self.model.traced_analysis()

    # -- states ------------------------------------------------------------------------------
    @staticmethod
    def union(a: State, b: State) -> State:
        out = dict(a)
        for k, v in b.items():
            out.setdefault(k, v)
        return out

    def event(self, st: State, e: Event, scope: "Scope | None" = None) -> State:
        out: State = {}
        for level, w in st.items():
            if e.kind == "reset":
                # A new function object (a lambda or an inner def evaluated again), or the caches
                # cleared (`jax.clear_caches()`): the next call traces afresh with the current value.
                nxt = (level, w) if level in (0, 3) else (0, (w[1] if level == 1 else w[2],))
            elif e.kind == "use":
                if level == 0:
                    nxt = (1, (e.node, w[0]))
                elif level == 2:
                    nxt = (3, Timeline(w[0], w[1], w[2], e.node, self._rebuilt_arguments(e.node, scope, w[3])))
                else:
                    nxt = (level, w)
            else:
                if level == 0:
                    nxt = (0, (e,))
                elif level == 1:
                    nxt = (2, (w[0], w[1], e, ()))
                else:
                    nxt = (level, w)
            out.setdefault(*nxt)
        return out

    def derive(self, st: State, node: cst.CSTNode, scope: "Scope", selfkey, together: bool = False) -> State:
        """After the rebinding, a name assigned from the new value (or from a name so assigned)
        carries it: `opt_state = tx.init(params)` after `tx = optax.chain(...)`; so does one the
        rebinding assigns with it (`tx, opt_state = make_optimizer(config)`)."""
        w = st.get(2)
        if w is None or not isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) or node.value is None:
            return st
        rebuilt = w[3]
        known = {name for name, where, _ in rebuilt if where == id(scope)}
        if not (together or self.s.read_in(node.value, scope, selfkey) or any(
                isinstance(n, cst.Name) and n.value in known for n in walk(node.value))):
            return st
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        names = tuple((n.value, id(scope), node) for t in targets for n in walk(t) if isinstance(n, cst.Name)
                      and n.value not in known)
        if not names:
            return st
        out = dict(st)
        out[2] = (*w[:3], rebuilt + names)
        return out

    def _rebuilt_arguments(self, call: cst.CSTNode, scope: "Scope | None", rebuilt: tuple) -> tuple:
        """The arguments of the call that reuses the program which carry the new value."""
        if not isinstance(call, cst.Call) or scope is None:
            return ()
        by_name = {name: node for name, where, node in rebuilt if where == id(scope)}
        out = []
        for arg in call.args:
            for n in walk(arg.value):
                if isinstance(n, cst.Name) and n.value in by_name:
                    out.append((arg, by_name[n.value]))
                    break
            else:
                if self.s.read_in(arg.value, scope, None):
                    out.append((arg, None))
        return tuple(out)

    # -- code ------------------------------------------------------------------------------
    def block(self, stmts, st: State, scope: "Scope", selfkey, exits: list) -> State:
        for stmt in stmts:
            if not st:
                return st
            st = self.statement(stmt, st, scope, selfkey, exits)
        return st

    def statement(self, stmt: cst.CSTNode, st: State, scope: "Scope", selfkey, exits: list) -> State:
        if isinstance(stmt, _SKIP):
            return self._reset(stmt, st)
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                st = self.expression(small, st, scope, selfkey)
                if isinstance(small, (cst.Return, cst.Raise)):
                    exits.append(st)
                    return {}
            return st
        if isinstance(stmt, cst.If):
            st = self.expression(stmt.test, st, scope, selfkey)
            a = self.block(stmt.body.body, st, scope, selfkey, exits)
            if stmt.orelse is None:
                b = st
            elif isinstance(stmt.orelse, cst.If):
                b = self.statement(stmt.orelse, st, scope, selfkey, exits)
            else:
                b = self.block(stmt.orelse.body.body, st, scope, selfkey, exits)
            return self.union(a, b)
        if isinstance(stmt, _LOOPS):
            if isinstance(stmt, cst.For):
                st = self.expression(stmt.iter, st, scope, selfkey)
            out = st
            cur = st
            for _ in range(3):  # zero, one, two (and three) iterations
                if isinstance(stmt, cst.While):
                    cur = self.expression(stmt.test, cur, scope, selfkey)
                else:
                    cur = self.targets(stmt, cur, scope, selfkey)
                cur = self.block(stmt.body.body, cur, scope, selfkey, exits)
                merged = self.union(out, cur)
                if merged.keys() == out.keys():
                    out = merged
                    break
                out = merged
            if stmt.orelse is not None:
                out = self.block(stmt.orelse.body.body, out, scope, selfkey, exits)
            return out
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                st = self.expression(item.item, st, scope, selfkey)
            return self.block(stmt.body.body, st, scope, selfkey, exits)
        if isinstance(stmt, cst.Try):
            body = self.block(stmt.body.body, st, scope, selfkey, exits)
            out = body
            for h in stmt.handlers:
                out = self.union(out, self.block(h.body.body, self.union(st, body), scope, selfkey, exits))
            if stmt.orelse is not None:
                out = self.union(out, self.block(stmt.orelse.body.body, body, scope, selfkey, exits))
            if stmt.finalbody is not None:
                out = self.block(stmt.finalbody.body.body, out, scope, selfkey, exits)
            return out
        body = getattr(stmt, "body", None)
        if isinstance(body, cst.BaseSuite) and hasattr(body, "body"):
            return self.block(body.body, st, scope, selfkey, exits)
        return st

    def targets(self, loop: cst.For, st: State, scope: "Scope", selfkey) -> State:
        for e in self.s.rebinds(loop, scope, selfkey):
            st = self.event(st, self._made_by(e))
        return st

    def _made_by(self, e: Event) -> Event:
        """A rebinding made inside a host call run in place is shown as made by that call (the
        innermost one: `update_global()` on line 30)."""
        return Event(e.kind, e.node, self.calls[-1], e.binding) if self.calls and e.via is None else e

    def expression(self, node: cst.CSTNode, st: State, scope: "Scope", selfkey) -> State:
        """Events of a small statement or expression, in evaluation order: a call after its
        arguments, an assignment after its value."""
        for n in self._order(node):
            if isinstance(n, cst.Lambda):
                st = self._reset(n, st)
                continue
            if isinstance(n, cst.Call):
                if self.s.uses(n, scope, selfkey):
                    st = self.event(st, Event("use", n), scope)
                elif self.model.qn(n.func, scope) in _CLEAR_CACHES:
                    st = self.event(st, Event("reset", n))
                else:
                    st = self.inline(n, st, scope, selfkey)
            rebound = False
            for e in self.s.rebinds(n, scope, selfkey):
                st = self.event(st, self._made_by(e))
                rebound = True
            st = self.derive(st, n, scope, selfkey, together=rebound)
            if not st:
                break
        return st

    def _order(self, node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
        """`_evaluation_order` of a statement, computed once per model (every subject walks the
        same host code: walking its nodes again for each would make the analysis quadratic)."""
        memo = self.model.__dict__.setdefault("_evaluation_orders", {})
        found = memo.get(id(node))
        if found is None:
            binding_nodes = _binding_nodes(self.model)
            found = memo[id(node)] = tuple(n for n in _evaluation_order(node)
                                           if isinstance(n, (cst.Lambda, cst.Call, cst.Assign, cst.AugAssign,
                                                             cst.AnnAssign)) or id(n) in binding_nodes)
        return found

    def _reset(self, node: cst.CSTNode, st: State) -> State:
        """A def or lambda that makes a compiled function anew each time it runs: the next call
        traces it again (`f = jax.jit(lambda p: p @ ROT)` in a function called per frame)."""
        fn = self.model.index.function_of.get(node)
        if fn is not None and fn in self.s.entries:
            # (At module level too: a notebook that defines `step` again starts a new function.)
            return self.event(st, Event("reset", node))
        return st

    def inline(self, call: cst.Call, st: State, scope: "Scope", selfkey) -> State:
        """A call of one of the module's host functions (or `jax.grad(f)(x)` of one): its body runs
        here. A rebinding found inside is reported as happening through this call."""
        if len(self.active) >= MAX_INLINE:
            return st
        targets = self._inline_targets(call, scope)
        if len(targets) != 1:
            return st
        callee = targets[0]
        if callee.is_lambda or id(callee) in self.active or self.model.is_traced(callee) and not self._eager(callee):
            return st
        inner_self = self.s.method_self(call, scope, selfkey)
        self.active.append(id(callee))
        self.calls.append(call)
        try:
            exits: list = []
            out = self.block(callee.node.body.body, st, callee, inner_self, exits)
            for e in exits:
                out = self.union(out, e)
        finally:
            self.active.pop()
            self.calls.pop()
        return out

    def _inline_targets(self, call: cst.Call, scope: "Scope") -> list[Function]:
        """The host functions a call runs, once per call and scope (the same for every subject)."""
        memo = self.model.__dict__.setdefault("_inline_targets", {})
        key = (id(call), id(scope))
        found = memo.get(key)
        if found is None:
            func = call.func
            if isinstance(func, cst.Call) and self.model.qn(func.func, scope) in _eager_transforms():
                found = [f for f, _ in self.analysis.callables(positional(func, 0), scope)]
            else:
                found = [f for f, _ in self.analysis.callables(func, scope, direct_only=True)]
            memo[key] = found
        return found

    def _eager(self, fn: Function) -> bool:
        """Traced only by eager transforms applied in host code (`jax.grad(loss)(E)`): its
        Python runs on every call, in the host's order."""
        from jaxfuse_lint.model.staging import staging

        return not staging(self.model).is_staged(fn, cached=True)

    # -- roots ---------------------------------------------------------------------------
    def run(self, body, scope: "Scope", selfkey=None) -> Timeline | None:
        exits: list = []
        st = self.block(body, {0: (None,)}, scope, selfkey, exits)
        for e in exits:
            st = self.union(st, e)
        found = st.get(3)
        return found


def _eager_transforms() -> frozenset:
    from jaxfuse_lint.model.staging_transforms import DIFFERENTIATING

    return DIFFERENTIATING | frozenset({"jax.vmap", "jax.jvp", "jax.vjp", "jax.linearize"})


def _binding_nodes(model: "SemanticModel") -> set[int]:
    """The nodes of every binding of the module: with calls, lambdas and assignments (attribute
    writes), the only nodes a subject's `uses` and `rebinds` can answer for."""
    found = model.__dict__.get("_binding_nodes")
    if found is None:
        scopes = {id(sc): sc for sc in (model.index.scope, *model.index.functions,
                                        *model.index.scope_of_node.values())}
        found = {id(b.node) for sc in scopes.values() for bs in sc.bindings.values() for b in bs}
        model.__dict__["_binding_nodes"] = found
    return found


def _evaluation_order(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Nodes of a small statement in the order Python evaluates them (roughly): children before
    their parent; an assignment's value before its targets. Nested defs, lambdas and classes
    are skipped (their bodies run later)."""
    if isinstance(node, cst.Lambda):
        yield node  # evaluated here (a new function object), its body runs later
        return
    if isinstance(node, _SKIP):
        return
    if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        if node.value is not None:
            yield from _evaluation_order(node.value)
        yield node
        return
    for _, child in iter_children(node):
        yield from _evaluation_order(child)
    yield node


# -- subjects ------------------------------------------------------------------------------------
def changes_per_iteration(model: "SemanticModel", b: Binding, loops: list[cst.CSTNode]) -> bool:
    """Whether a rebinding inside loops takes a new value each iteration: an augmented
    assignment, a `for` target, or a value that reads the name itself, a loop's target, or a
    name the loop carries from one iteration to the next (`field = step(field)` then
    `eps = field ** 2`)."""
    if b.kind in ("augassign", "for"):
        return True
    if b.value is None:
        return False
    carried = _carried(loops)
    return any(isinstance(n, cst.Name) and (n.value == b.name or n.value in carried) for n in walk(b.value))


def _carried(loops: list[cst.CSTNode]) -> set[str]:
    """Names whose value changes from one iteration of the loops to the next: loop targets,
    augmented assignments, and assignments whose value reads one of them or the name itself."""
    names: set[str] = set()
    assigns: list[tuple[set[str], set[str]]] = []
    for loop in loops:
        if isinstance(loop, cst.For):
            names |= {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
        for n in walk(loop.body):
            if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name):
                names.add(n.target.value)
            elif isinstance(n, cst.Assign):
                targets = {t.value for a in n.targets for t in walk(a.target) if isinstance(t, cst.Name)}
                reads = {r.value for r in walk(n.value) if isinstance(r, cst.Name)}
                assigns.append((targets, reads))
            elif isinstance(n, cst.For) and n is not loop:
                names |= {t.value for t in walk(n.target) if isinstance(t, cst.Name)}
    changed = True
    while changed:
        changed = False
        for targets, reads in assigns:
            if not targets <= names and (reads & names or targets & reads):
                names |= targets
                changed = True
    return names


def _loops_between(model: "SemanticModel", node: cst.CSTNode, stop: cst.CSTNode | None) -> list[cst.CSTNode]:
    out = []
    for a in model.ancestors(node):
        if a is stop:
            break
        if isinstance(a, _LOOPS):
            out.append(a)
    return out


@dataclass
class GlobalName(Subject):
    """A module-level name: module-level assignments and `global` writes in functions."""

    name: str = ""
    bindings: tuple = ()
    ignore: frozenset = frozenset()  # writer functions that set and restore it (bookkeeping)

    def uses(self, call, scope, selfkey) -> bool:
        return bool(compiled_callees(self.model, call, scope) & self.entries)

    def read_in(self, expr, scope, selfkey) -> bool:
        for n in walk(expr):
            if isinstance(n, cst.Name) and n.value == self.name:
                found = self.model.lookup(self.name, scope)
                return found is not None and found[0] is self.model.index.scope
        return False

    def rebinds(self, node, scope, selfkey) -> Iterator[Event]:
        for b in self.bindings:
            if b.node is node and b.kind not in ("import", "def", "class"):
                writer = self.model.function_of(b.node)
                if writer is not None and writer in self.ignore:
                    continue
                loops = _loops_between(self.model, b.node, writer.node if writer is not None else None)
                if loops and not changes_per_iteration(self.model, b, loops):
                    continue
                yield Event("rebind", b.node, None, b)


@dataclass
class ClosureLocal(Subject):
    """A local of the function that defines the staged closure."""

    name: str = ""
    owner: Function | None = None
    bindings: tuple = ()

    def uses(self, call, scope, selfkey) -> bool:
        return bool(compiled_callees(self.model, call, scope) & self.entries)

    def read_in(self, expr, scope, selfkey) -> bool:
        for n in walk(expr):
            if isinstance(n, cst.Name) and n.value == self.name:
                found = self.model.lookup(self.name, scope)
                return found is not None and found[0] is self.owner
        return False

    def rebinds(self, node, scope, selfkey) -> Iterator[Event]:
        for b in self.bindings:
            if b.node is node and self.model.function_of(b.node) is self.owner:
                loops = _loops_between(self.model, b.node, self.owner.node)
                if loops and not changes_per_iteration(self.model, b, loops):
                    continue
                yield Event("rebind", b.node, None, b)


@dataclass
class ObjectAttribute(Subject):
    """`self.<attr>` read by a jitted method whose `self` is static: per object, calls of the
    method (or of a name bound to `jax.jit(obj.method)`) and writes of `obj.<attr>`."""

    cls: ClassInfo | None = None
    attr: str = ""
    key: tuple = ()  # the object followed

    def object_key(self, expr: cst.BaseExpression, scope: "Scope", selfkey) -> tuple | None:
        if isinstance(expr, cst.Name):
            if isinstance(scope, Function) and scope.params and expr.value == scope.params[0] \
                    and scope.cls is not None:
                found = self.model.lookup(expr.value, scope)
                if found is not None and found[0] is scope:
                    # The method's own object: the caller's object where a call runs it in place,
                    # else the method's own key (the same one wherever it is looked at).
                    return selfkey if selfkey is not None else ("self", id(scope))
            found = self.model.lookup(expr.value, scope)
            if found is None:
                return None
            return ("name", id(found[0]), expr.value)
        if isinstance(expr, cst.Attribute):
            base = self.object_key(expr.value, scope, selfkey)
            return None if base is None else ("attr", base, expr.attr.value)
        return None

    def _instance(self, expr, scope) -> bool:
        from jaxfuse_lint.model.instances import instances

        return instances(self.model).instance_class(expr, scope) is self.cls

    def uses(self, call, scope, selfkey) -> bool:
        if not (compiled_callees(self.model, call, scope) & self.entries):
            return False
        return self.used_object(call, scope, selfkey) == self.key

    def used_object(self, call: cst.Call, scope: "Scope", selfkey) -> tuple | None:
        func = call.func
        if isinstance(func, cst.Attribute) and self._instance(func.value, scope):
            return self.object_key(func.value, scope, selfkey)
        if isinstance(func, cst.Call):
            target = positional(func, 0)
            if isinstance(target, cst.Attribute) and self._instance(target.value, scope):
                return self.object_key(target.value, scope, selfkey)
        for value, where in _holder_values(self.model, func, scope):
            if isinstance(value, cst.Call):
                target = positional(value, 0)
                if isinstance(target, cst.Attribute) and self._instance(target.value, where):
                    return self.object_key(target.value, where, selfkey if where is scope else None)
        return None

    def read_in(self, expr, scope, selfkey) -> bool:
        return any(isinstance(n, cst.Attribute) and n.attr.value == self.attr and self._instance(n.value, scope)
                   and self.object_key(n.value, scope, selfkey) == self.key for n in walk(expr))

    def rebinds(self, node, scope, selfkey) -> Iterator[Event]:
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        else:
            return
        for t in targets:
            for n in walk(t):
                if isinstance(n, cst.Attribute) and n.attr.value == self.attr and self._instance(n.value, scope) \
                        and self.object_key(n.value, scope, selfkey) == self.key:
                    yield Event("rebind", node)
                    return

    def method_self(self, call, scope, selfkey):
        func = call.func
        if isinstance(func, cst.Attribute) and self._instance(func.value, scope):
            return self.object_key(func.value, scope, selfkey)
        return None


@dataclass
class StaticArgumentAttribute(ObjectAttribute):
    """`v.<attr>` read by a compiled function whose parameter `v` is static (`static_argnums`,
    `static_argnames`): per object, the calls that pass it in that position, and writes of
    `obj.<attr>` (jit keeps the object itself as the cache key, not a copy of its state)."""

    param: str = ""

    def used_object(self, call: cst.Call, scope: "Scope", selfkey) -> tuple | None:
        arg = self.model.argument_for(call, self.fn, self.param)
        if arg is None or not self._instance(arg, scope):
            return None
        return self.object_key(arg, scope, selfkey)

    def method_self(self, call, scope, selfkey):
        return None


def run_timeline(subject: Subject, body, scope: "Scope", selfkey=None) -> Timeline | None:
    return _Walker(subject).run(body, scope, selfkey)


def host_roots(model: "SemanticModel") -> list[Function]:
    """Host functions nothing in the module calls (entry points: `main`, a library's API, a
    test): their bodies are walked on their own; the module's code runs first."""
    from jaxfuse_lint.model.instances import instances

    found = model.__dict__.get("_host_roots")
    if found is not None:
        return found
    inst = instances(model)
    out = []
    for fn in model.index.functions:
        if fn.is_lambda or model.is_traced(fn) or not isinstance(fn.node.body, cst.IndentedBlock):
            continue
        name = fn.cls.name if fn.name == "__init__" and fn.cls is not None else fn.name
        if not any(not model.is_traced_scope(s.scope) and inst.calls(s.call.func, s.scope, fn)
                   for s in inst.sites_named(name)):
            out.append(fn)
    model.__dict__["_host_roots"] = out
    return out

