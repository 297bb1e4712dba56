"""Who reads state that outlives a trace, and how: the per-call premises of JF403 and JF404.

A write that traced code makes to state outside it (a module global, a local or parameter of an
enclosing function, an attribute of an object) happens once per trace; a value a compiled function
reads from such state is fixed once per trace. Whether that is a hazard depends on the readers:

- HOST: code that runs outside any trace (module-level statements, host functions, the body of a
  host callback, a function only eager transforms run): it runs on every call of what runs it,
  and sees how often the state changed. A count of calls read there is per-call data.
- while tracing, by what the traced code does with the value (model/static_use.py follows it):
  PROGRAM: an operand of the traced computation (the program's arrays depend on it);
  STATIC: a Python value the trace decides with (a branch, a shape, an index, a static argument);
  TEXT: formatted into text (an f-string, `str()`, `print`, a logging call): names, messages;
  UNUSED: evaluated and dropped;
  UNKNOWN: handed where the model cannot follow.

`name_reads(owner, name)` and `attribute_reads(cls, attr)` list the reads of one piece of state
(a write's own receiver is not a read: `log.append(x)`, `d[k] = v`, and the self-update
`n = n + 1` / `self.n = self.n + 1` are the write); `how(node, scope)` classifies one read.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.call_frequency import call_sites
from jaxfuse_lint.model.frozen_values import compiled_callees
from jaxfuse_lint.model.host_code import host_code
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.scopes import ClassInfo, Function, walk
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.static_use import META, PROGRAM, STATIC, static_uses

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Scope
    from jaxfuse_lint.model.semantic import SemanticModel

HOST, TEXT, UNUSED, UNKNOWN = "host", "text", "unused", "unknown"
# (PROGRAM and STATIC are model/static_use.py's.)

# Methods that change the object they are called on: a receiver of one is written, not read.
WRITING_METHODS = frozenset({
    "append", "extend", "insert", "appendleft", "extendleft", "setdefault", "popitem", "clear", "remove",
    "discard", "update", "add", "pop", "popleft", "sort", "reverse", "__setitem__", "__delitem__",
})
# Calls that turn their arguments into text.
_TEXT_CALLS = frozenset({"builtins.str", "builtins.repr", "builtins.format", "builtins.print", "warnings.warn"})
_TEXT_METHODS = frozenset({"format", "join", "debug", "info", "warning", "warn", "error", "critical", "log",
                           "write"})
_TEXT_MODULES = ("logging.", "absl.logging.")


@dataclass(frozen=True)
class StateRead:
    node: cst.CSTNode  # the Name or Attribute read
    scope: "Scope"
    how: str  # HOST | PROGRAM | STATIC | TEXT | UNUSED | UNKNOWN


class StateReads:
    """Built once per model: `state_reads(model)`."""

    def __init__(self, model: "SemanticModel") -> None:
        self.model = model
        self._host_fn: dict[int, bool] = {}

    # -- the reads of one piece of state ------------------------------------------------------------
    def name_reads(self, owner: "Scope", name: str) -> list[StateRead]:
        """Reads of `name` bound in `owner` (the module's scope or a function), wherever it is
        visible, in the module's order."""
        m = self.model
        within = owner if isinstance(owner, Function) else None
        out = []
        for read in m.index.reads_named(name, within):
            if self.owner_of(name, read.scope) is not owner:
                continue
            if self._written(read.name) or self._self_update(read.name, lambda t: isinstance(t, cst.Name)
                                                             and t.value == name):
                continue
            out.append(StateRead(read.name, read.scope, self.how(read.name, read.scope)))
        return out

    def owner_of(self, name: str, scope: "Scope") -> "Scope | None":
        """The scope whose variable `name` is, seen from scope (through `nonlocal` declarations)."""
        found = self.model.lookup(name, scope)
        while found is not None and isinstance(found[0], Function) and name in found[0].nonlocals \
                and found[0].parent is not None:
            found = self.model.lookup(name, found[0].parent)
        return found[0] if found is not None else None

    def attribute_reads(self, cls: ClassInfo, attr: str) -> list[StateRead]:
        """Reads of `<obj>.attr` on instances of `cls` (its methods' `self` included)."""
        m = self.model
        inst = instances(m)
        out = []
        for node in m.index.attributes_named(attr):
            parent = m.parent(node)
            if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
                    isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node):
                continue
            scope = m.scope_of(node)
            if inst.instance_class(node.value, scope) is not cls:
                continue
            if self._written(node) or self._self_update(node, lambda t: isinstance(t, cst.Attribute)
                                                        and t.attr.value == attr):
                continue
            out.append(StateRead(node, scope, self.how(node, scope)))
        return out

    def _written(self, node: cst.CSTNode) -> bool:
        """The read is the object a write changes: `log.append(x)`, `d[k] = v`, `del d[k]`,
        `obj.a.b = v`, `tot[0] += x`."""
        m = self.model
        cur = node
        while True:
            parent = m.parent(cur)
            if isinstance(parent, cst.Attribute) and parent.value is cur:
                grand = m.parent(parent)
                if isinstance(grand, cst.Call) and grand.func is parent:
                    return parent.attr.value in WRITING_METHODS
                cur = parent
                continue
            if isinstance(parent, cst.Subscript) and parent.value is cur:
                cur = parent
                continue
            break
        if cur is node:
            return False
        parent = m.parent(cur)
        if isinstance(parent, (cst.AssignTarget, cst.Del)):
            return True
        return isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is cur

    def _self_update(self, node: cst.CSTNode, same_target) -> bool:
        """The read is in the value of an assignment to the same state (`n = n + 1`)."""
        for a in self.model.ancestors(node):
            if isinstance(a, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in a.targets] if isinstance(a, cst.Assign) else [a.target]
                return any(same_target(n) for t in targets for n in walk(t))
            if isinstance(a, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return False
        return False

    # -- how one read is used ---------------------------------------------------------------------
    def how(self, node: cst.CSTNode, scope: "Scope") -> str:
        m = self.model
        fn = m.function_of(node)
        if fn is None or self.runs_on_host(fn):
            return HOST
        if host_code(m).at_compile_time(node, scope):
            return STATIC
        if self._text(node, scope):
            return TEXT
        uses = static_uses(m).uses(node, scope)
        if PROGRAM in uses.kinds:
            return PROGRAM
        if STATIC in uses.kinds or META in uses.kinds:
            return STATIC
        if not uses.kinds and not uses.mutated:
            return UNUSED
        return UNKNOWN

    def runs_on_host(self, fn: Function) -> bool:
        """fn's Python runs outside any trace on some call: it is not traced, only eager
        transforms run it (`jax.grad(f)(x)`: its Python runs on every call), it is the host
        function of a callback, or host code calls it directly too (not its compiled version)."""
        key = id(fn)
        if key in self._host_fn:
            return self._host_fn[key]
        m = self.model
        self._host_fn[key] = True  # a cycle of calls: reached from the host
        if not m.is_traced(fn) or not staging(m).is_staged(fn, cached=True) or host_code(m).runs_on_host(fn):
            result = True
        else:
            sites, _ = call_sites(m, fn)
            # (A call of the compiled function runs the program, not fn's Python.)
            result = any(not m.is_traced_scope(s.scope) and fn not in compiled_callees(m, s.call, s.scope)
                         for s in sites)
        self._host_fn[key] = result
        return result

    def _text(self, node: cst.CSTNode, scope: "Scope") -> bool:
        """The value is formatted into text: an f-string, `str(v)`, `"%d" % v`, `"a" + str(v)`,
        `print(v)`, `logging.info(...)`, `"{}".format(v)`, `"_".join(...)`."""
        m = self.model
        cur = node
        for _ in range(6):
            parent = m.parent(cur)
            if parent is None:
                return False
            if isinstance(parent, cst.FormattedStringExpression):
                return True
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Modulo, cst.Add)):
                other = parent.right if parent.left is cur else parent.left
                if isinstance(other, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
                    return True
                cur = parent
                continue
            if isinstance(parent, cst.Arg):
                call = m.parent(parent)
                if not isinstance(call, cst.Call):
                    return False
                qn = m.qn(call.func, scope)
                if qn is not None:
                    return qn in _TEXT_CALLS or qn.startswith(_TEXT_MODULES)
                # `"_".join(parts)`, `"{}".format(v)`, `logger.info(v)` (a logger the model cannot name)
                return isinstance(call.func, cst.Attribute) and call.func.attr.value in _TEXT_METHODS and \
                    isinstance(call.func.value, (cst.SimpleString, cst.Name))
            if isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.Subscript, cst.Index, cst.SubscriptElement)):
                cur = parent
                continue
            return False
        return False


def state_reads(model: "SemanticModel") -> StateReads:
    """The model's StateReads (built once per model, kept with it)."""
    s = model.__dict__.get("_state_reads")
    if s is None:
        s = model.__dict__["_state_reads"] = StateReads(model)
    return s


__all__ = ["HOST", "PROGRAM", "STATIC", "TEXT", "UNKNOWN", "UNUSED", "WRITING_METHODS", "StateRead", "StateReads",
           "state_reads"]
