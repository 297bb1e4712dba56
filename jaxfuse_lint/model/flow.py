"""Flow-sensitive facts about a function's own names: which bindings reach a read, and
what `isinstance` / `is None` tests have established about the name there.

Name resolution (model/names.py) is flow-insensitive: every binding of a name in a
scope belongs to it. For kinds and shapes that is too coarse:

    if isinstance(bins, tuple):
        if bins[0] != 0: ...           # bins is the static argument here
    else:
        bins = jnp.asarray(bins)       # ... and traced only from here on

`FunctionFlow` walks one function's statements in order (structured control flow:
`if`/`while`/`for`/`try`/`with`/`match`, `return`/`raise`/`break`/`continue`) and records,
for each read of a name bound in that function, the bindings that may reach it (a
reaching-definitions analysis) and the narrowing in force there:

* `PYTHON`: the value is a plain Python value, never a tracer — after
  `isinstance(x, int | float | bool | str | np.ndarray ...)`, `type(x) is int`, or `x is None`;
* `CONTAINER`: the value is a tuple/list/dict/... (its truthiness is a Python question;
  its items keep their own kinds).

Narrowing holds until the name is rebound, in the branch the test selects, and after an
`if` whose other branch cannot fall through (`if x is None: return ...`). Reads the walk
does not cover (nested functions reading an outer name, comprehension variables, code
after the function returns) are left out: callers fall back to all bindings.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import libcst as cst

from jaxfuse_lint.model.scopes import iter_children

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Binding, Function
    from jaxfuse_lint.model.view import ModelView

PYTHON = "python"
CONTAINER = "container"

# isinstance() targets whose instances are never tracers (canonical qualified names).
PYTHON_TYPES = frozenset({
    "builtins.int", "builtins.float", "builtins.bool", "builtins.complex", "builtins.str", "builtins.bytes",
    "builtins.slice", "builtins.range", "builtins.type", "builtins.NoneType", "types.NoneType", "numbers.Number",
    "numbers.Integral", "numbers.Real", "numbers.Complex", "numbers.Rational", "numpy.ndarray", "numpy.generic",
    "numpy.number", "numpy.integer", "numpy.floating", "numpy.complexfloating", "numpy.bool_", "numpy.int32",
    "numpy.int64", "numpy.float32", "numpy.float64", "numpy.dtype", "enum.Enum", "str", "int", "float", "bool",
})
CONTAINER_TYPES = frozenset({
    "builtins.tuple", "builtins.list", "builtins.dict", "builtins.set", "builtins.frozenset",
    "collections.abc.Sequence", "collections.abc.Mapping", "collections.abc.MutableMapping",
    "collections.abc.MutableSequence", "collections.abc.Iterable", "collections.abc.Collection",
    "typing.Sequence", "typing.Mapping", "typing.Tuple", "typing.List", "typing.Dict", "collections.OrderedDict",
})

_BOTTOM = None  # the state of unreachable code


class _TooMuchWork(Exception):
    pass


_EMPTY: frozenset[int] = frozenset()


class _Reach:
    """Reaching bindings per name: a shared `base`, never changed once shared, and this state's
    own changes (`delta`). Copying a state and joining two that share a base cost what changed
    since, not every name: the module's own statements track every module-level name, and a
    copy of all of them at each branch made a long module's flow quadratic."""

    __slots__ = ("base", "delta")

    def __init__(self, base: dict[str, frozenset[int]], delta: dict[str, frozenset[int]] | None = None) -> None:
        self.base = base
        self.delta = delta if delta is not None else {}

    def get(self, name: str, default=None):
        found = self.delta.get(name)
        if found is not None:
            return found
        return self.base.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self.delta or name in self.base

    def __setitem__(self, name: str, ids: frozenset[int]) -> None:
        self.delta[name] = ids

    def flat(self) -> dict[str, frozenset[int]]:
        return {**self.base, **self.delta} if self.delta else self.base

    def copy(self) -> "_Reach":
        if len(self.delta) > 64 and len(self.delta) * 4 > len(self.base):
            # Many changes since the base: they become the base (shared from now on), so that a
            # copy stays cheap.
            self.base, self.delta = self.flat(), {}
        return _Reach(self.base, dict(self.delta))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Reach):
            return NotImplemented
        if self.base is other.base:
            return all(self.get(k) == other.get(k) for k in self.delta.keys() | other.delta.keys())
        return self.flat() == other.flat()

    def joined(self, other: "_Reach") -> "_Reach":
        if self.base is other.base:
            out = _Reach(self.base, dict(self.delta))
            for name in other.delta.keys() - self.delta.keys():
                out.delta[name] = self.base.get(name, _EMPTY) | other.delta[name]
            for name in self.delta.keys() & other.delta.keys():
                out.delta[name] = self.delta[name] | other.delta[name]
            for name in self.delta.keys() - other.delta.keys():
                out.delta[name] = self.delta[name] | self.base.get(name, _EMPTY)
            return out
        reach = dict(self.flat())
        for name, ids in other.flat().items():
            reach[name] = reach.get(name, _EMPTY) | ids
        return _Reach(reach)


class _State:
    """Reaching bindings per tracked name, and the narrowing facts in force."""

    __slots__ = ("reach", "facts")

    def __init__(self, reach: _Reach, facts: dict[str, str]) -> None:
        self.reach = reach
        self.facts = facts

    def copy(self) -> "_State":
        return _State(self.reach.copy(), dict(self.facts))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _State) and self.reach == other.reach and self.facts == other.facts


def _join(a: "_State | None", b: "_State | None") -> "_State | None":
    if a is None:
        return b.copy() if b is not None else None
    if b is None:
        return a.copy()
    reach = a.reach.joined(b.reach)
    facts = {}
    for name, fact in a.facts.items():
        other = b.facts.get(name)
        if other is None:
            continue
        facts[name] = fact if fact == other else CONTAINER if CONTAINER in (fact, other) else fact
    return _State(reach, facts)


def _weaker(a: str, b: str) -> str:
    return a if a == b else CONTAINER


class FunctionFlow:
    """The flow facts of one function (built once, on first use)."""

    MAX_LOOP_PASSES = 4
    # Nested loops multiply the passes: past this many statement visits the function keeps the
    # flow-insensitive answer (every binding) rather than costing seconds.
    MAX_WORK = 10_000

    def __init__(self, model: "ModelView", fn: "Function") -> None:
        self.model = model
        self.fn = fn
        self.reaching: dict[cst.Name, tuple["Binding", ...]] = {}
        self.narrowed: dict[cst.Name, str] = {}
        self._by_node: dict[int, list["Binding"]] = {}
        self._bindings: list["Binding"] = []
        untracked = set()
        for name, bindings in fn.bindings.items():
            if any(b.kind == "for" and isinstance(b.node, cst.CompFor) for b in bindings):
                untracked.add(name)  # comprehension variables: their own little scopes
        for name, bindings in fn.bindings.items():
            if name in untracked or name in fn.globals or name in fn.nonlocals:
                continue
            for b in bindings:
                self._by_node.setdefault(id(b.node), []).append(b)
        self._tracked = {n for n in fn.bindings if n not in untracked and n not in fn.globals and n not in fn.nonlocals}
        self._reads = {r.name for r in fn.reads if r.name.value in self._tracked}
        self._ids: dict[int, "Binding"] = {}
        self._loops: list[tuple[list, list]] = []  # (break states, continue states)
        self._tries: list[list] = []  # states seen inside a try body
        self._work = 0
        # The bindings that may be a name's value when the body is left (returns and the end).
        self.exit: "_State | None" = None
        self.exit_known = True
        try:
            self._run()
        except _TooMuchWork:
            self.reaching.clear()
            self.narrowed.clear()
            self.exit, self.exit_known = None, False

    # -- the walk -----------------------------------------------------------------------------
    def _run(self) -> None:
        fn = self.fn
        reach: dict[str, frozenset[int]] = {}
        for name in self._tracked:
            reach[name] = frozenset()
        for name in fn.params:
            for b in fn.bindings.get(name, ()):
                if b.kind == "param":
                    self._ids[id(b)] = b
                    reach[name] = frozenset({id(b)})
        state: _State | None = _State(_Reach(reach), {})
        if isinstance(fn.node, cst.Lambda):
            self._expr(fn.node.body, state)
            return
        body = fn.node.body
        if isinstance(fn.node, cst.Module):
            self._exit(self._block(body, state))
        elif isinstance(body, cst.IndentedBlock):
            self._exit(self._block(body.body, state))
        elif isinstance(body, cst.SimpleStatementSuite):
            self._exit(self._block(body.body, state))

    def _exit(self, state: "_State | None") -> None:
        if state is not None:
            self.exit = _join(self.exit, state.copy())

    def exit_bindings(self, name: str) -> tuple["Binding", ...] | None:
        """The bindings of `name` that may hold when the body is left (None: unknown)."""
        if not self.exit_known or name not in self._tracked:
            return None
        if self.exit is None:
            return ()
        return tuple(self._ids[i] for i in self.exit.reach.get(name, ()) if i in self._ids)

    def _block(self, stmts, state: "_State | None") -> "_State | None":
        for s in stmts:
            if state is None:
                return None
            state = self._stmt(s, state)
            if self._tries and state is not None:
                self._tries[-1].append(state.copy())
        return state

    def _suite(self, suite: cst.BaseSuite | None, state: "_State | None") -> "_State | None":
        if suite is None or state is None:
            return state
        return self._block(suite.body, state)

    def _gen(self, node: cst.CSTNode, state: "_State", join: bool = False) -> None:
        """The bindings `node` makes take effect (replacing earlier ones unless `join`)."""
        for b in self._by_node.get(id(node), ()):
            self._ids[id(b)] = b
            if join:
                state.reach[b.name] = state.reach.get(b.name, _EMPTY) | {id(b)}
            else:
                state.reach[b.name] = frozenset({id(b)})
            state.facts.pop(b.name, None)

    def _stmt(self, s: cst.CSTNode, state: "_State") -> "_State | None":
        self._work += 1
        if self._work > self.MAX_WORK:
            raise _TooMuchWork
        t = type(s)
        if t is cst.SimpleStatementLine or t is cst.SimpleStatementSuite:
            for small in s.body:
                if state is None:
                    return None
                state = self._small(small, state)
            return state
        if t is cst.If:
            return self._if(s, state)
        if t is cst.While:
            return self._while(s, state)
        if t is cst.For:
            return self._for(s, state)
        if t is cst.Try or t is cst.TryStar:
            return self._try(s, state)
        if t is cst.With:
            for item in s.items:
                self._expr(item.item, state)
                self._gen(item, state)
            return self._suite(s.body, state)
        if t is cst.FunctionDef or t is cst.ClassDef:
            for d in s.decorators:
                self._expr(d.decorator, state)
            if t is cst.FunctionDef:
                self._params_defaults(s.params, state)
            else:
                for a in s.bases + s.keywords:
                    self._expr(a.value, state)
            self._gen(s, state)
            return state
        if t is cst.Match:
            self._expr(s.subject, state)
            out = None
            for case in s.cases:
                branch = state.copy()
                self._pattern_binds(case.pattern, branch)
                if case.guard is not None:
                    self._expr(case.guard, branch)
                out = _join(out, self._suite(case.body, branch))
            return _join(out, state)  # no case may match
        # Anything else: record reads conservatively, keep going.
        self._expr(s, state)
        return state

    def _params_defaults(self, params: cst.Parameters, state: "_State") -> None:
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            if p.default is not None:
                self._expr(p.default, state)

    def _pattern_binds(self, pattern: cst.CSTNode, state: "_State") -> None:
        for n in _walk_no_scopes(pattern):
            self._gen(n, state, join=True)

    def _small(self, s: cst.CSTNode, state: "_State") -> "_State | None":
        t = type(s)
        if t is cst.Assign:
            self._expr(s.value, state)
            for target in s.targets:
                self._expr_targets(target.target, state)
            self._gen(s, state)
            return state
        if t is cst.AnnAssign:
            if s.value is not None:
                self._expr(s.value, state)
                self._gen(s, state)
            return state
        if t is cst.AugAssign:
            self._expr(s.target, state)
            self._expr(s.value, state)
            # `x += v` computes from the old x: the earlier bindings stay part of the value.
            self._gen(s, state, join=True)
            return state
        if t is cst.Return:
            if s.value is not None:
                self._expr(s.value, state)
            self._exit(state)
            return None
        if t is cst.Raise:
            if s.exc is not None:
                self._expr(s.exc, state)
            return None
        if t is cst.Break:
            if self._loops:
                self._loops[-1][0].append(state.copy())
            return None
        if t is cst.Continue:
            if self._loops:
                self._loops[-1][1].append(state.copy())
            return None
        if t is cst.Import or t is cst.ImportFrom:
            self._gen(s, state)
            return state
        self._expr(s, state)
        return state

    def _expr_targets(self, target: cst.CSTNode, state: "_State") -> None:
        """Reads inside an assignment target (`x[i] = ...`, `obj.attr = ...`)."""
        if isinstance(target, cst.Name):
            return
        self._expr(target, state)

    def _expr(self, e: cst.CSTNode, state: "_State | None") -> None:
        if state is None:
            return
        short: dict = {}  # reads on the right of `and` / `or`, narrowed by the left (pre-order: set first)
        for n in _walk_no_scopes(e):
            t = type(n)
            if t is cst.BooleanOperation:
                self._short_circuit(n, short)
            elif t is cst.Name:
                if n in self._reads:
                    ids = state.reach.get(n.value)
                    if ids:
                        self.reaching[n] = tuple(self._ids[i] for i in ids)
                    fact = short.get(n) or state.facts.get(n.value)
                    if fact is not None:
                        self.narrowed[n] = fact
            elif t is cst.NamedExpr:
                # Evaluated where it stands; later reads in the statement may or may not see it.
                self._gen(n, state, join=True)

    def _short_circuit(self, op: cst.BooleanOperation, out: dict) -> None:
        """In `isinstance(c, numbers.Real) and c < 0` the comparison runs only when `c` is a Python
        number: the reads on the right get the left's facts (`or`: its facts when false)."""
        yes, no = narrowing(self.model, self.fn, op.left)
        facts = yes if isinstance(op.operator, cst.And) else no
        if facts:
            for r in _walk_no_scopes(op.right):
                if isinstance(r, cst.Name) and r.value in facts:
                    out.setdefault(r, facts[r.value])

    # -- branches and loops -----------------------------------------------------------------------
    def _if(self, s: cst.If, state: "_State") -> "_State | None":
        self._expr(s.test, state)
        yes, no = narrowing(self.model, self.fn, s.test)
        body_in = self._narrow(state.copy(), yes)
        else_in = self._narrow(state.copy(), no)
        body_out = self._suite(s.body, body_in)
        if s.orelse is None:
            else_out: _State | None = else_in
        elif isinstance(s.orelse, cst.If):
            else_out = self._if(s.orelse, else_in)
        else:
            else_out = self._suite(s.orelse.body, else_in)
        return _join(body_out, else_out)

    def _narrow(self, state: "_State", facts: dict[str, str]) -> "_State":
        for name, fact in facts.items():
            if name in self._tracked or name in state.reach:
                state.facts[name] = fact
        return state

    def _loop(self, head, body, state: "_State", on_entry=None) -> tuple["_State | None", "_State | None"]:
        """Runs a loop body to a fixpoint. Returns (state at the loop's normal exit, state at break)."""
        entry = state.copy()
        breaks: list = []
        out = None
        for _ in range(self.MAX_LOOP_PASSES):
            self._loops.append((breaks, []))
            head_state = head(entry.copy())
            body_in = on_entry(head_state) if on_entry else head_state
            body_out = self._suite(body, body_in)
            _, continues = self._loops.pop()
            back = body_out
            for c in continues:
                back = _join(back, c)
            new_entry = _join(entry, back)
            out = head_state
            if new_entry == entry:
                break
            entry = new_entry
            breaks.clear()
        brk = None
        for b in breaks:
            brk = _join(brk, b)
        return out, brk

    def _while(self, s: cst.While, state: "_State") -> "_State | None":
        yes, no = narrowing(self.model, self.fn, s.test)

        def head(st: _State) -> _State:
            self._expr(s.test, st)
            return st

        exit_state, brk = self._loop(head, s.body, state, on_entry=lambda st: self._narrow(st.copy(), yes))
        normal = self._narrow(exit_state.copy(), no) if exit_state is not None else None
        if s.orelse is not None:
            normal = self._suite(s.orelse.body, normal)
        if isinstance(s.test, cst.Name) and s.test.value == "True":
            normal = None  # `while True:` leaves only through break
        return _join(normal, brk)

    def _for(self, s: cst.For, state: "_State") -> "_State | None":
        self._expr(s.iter, state)

        def head(st: _State) -> _State:
            self._gen(s, st, join=False)
            return st

        def body_entry(st: _State) -> _State:
            return st

        exit_state, brk = self._loop(head, s.body, state, on_entry=body_entry)
        # The loop may run zero times: the state before it also reaches the exit.
        normal = _join(state, exit_state)
        if s.orelse is not None:
            normal = self._suite(s.orelse.body, normal)
        return _join(normal, brk)

    def _try(self, s: cst.BaseCompoundStatement, state: "_State") -> "_State | None":
        self._tries.append([state.copy()])
        body_out = self._suite(s.body, state.copy())
        seen = self._tries.pop()
        anywhere = None
        for st in seen:
            anywhere = _join(anywhere, st)
        if self._tries and anywhere is not None:
            self._tries[-1].append(anywhere.copy())
        out = None
        for h in s.handlers:
            h_in = anywhere.copy() if anywhere is not None else None
            if h_in is not None:
                if h.type is not None:
                    self._expr(h.type, h_in)
                self._gen(h, h_in)
            out = _join(out, self._suite(h.body, h_in))
        if s.orelse is not None:
            body_out = self._suite(s.orelse.body, body_out)
        out = _join(out, body_out)
        if s.finalbody is not None:
            # The finally block also runs on the way out of a return/raise: its entry is
            # anything seen; what follows the try is the normal exits only.
            self._suite(s.finalbody.body, anywhere.copy() if anywhere is not None else None)
            out = self._suite(s.finalbody.body, out) if out is not None else None
        return out


def _walk_no_scopes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Nodes below `node` evaluated where it stands (not the bodies of lambdas, defs, classes)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, cst.Lambda):
            for p in (*n.params.posonly_params, *n.params.params, *n.params.kwonly_params):
                if p.default is not None:
                    stack.append(p.default)
            continue
        if isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n is not node:
            continue
        stack.extend(reversed([c for _, c in iter_children(n)]))


# -- narrowing tests ------------------------------------------------------------------------------

def _type_fact(model: "ModelView", scope, types: cst.BaseExpression) -> str | None:
    """PYTHON, CONTAINER or None for the second argument of isinstance() (a type, a tuple of
    types, or `A | B`)."""
    parts: list[cst.BaseExpression] = []

    def collect(e: cst.BaseExpression) -> bool:
        if isinstance(e, (cst.Tuple, cst.List)):
            return all(not isinstance(el, cst.StarredElement) and collect(el.value) for el in e.elements)
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.BitOr):
            return collect(e.left) and collect(e.right)
        parts.append(e)
        return True

    if not collect(types) or not parts:
        return None
    facts = []
    for p in parts:
        if isinstance(p, cst.Call) and model.qn(p.func, scope) == "builtins.type" and len(p.args) == 1 and (
                isinstance(p.args[0].value, cst.Name) and p.args[0].value.value == "None"):
            facts.append(PYTHON)
            continue
        if isinstance(p, cst.Name) and p.value == "None":
            facts.append(PYTHON)
            continue
        qn = model.qn(p, scope)
        if qn in PYTHON_TYPES:
            facts.append(PYTHON)
        elif qn in CONTAINER_TYPES:
            facts.append(CONTAINER)
        else:
            return None
    fact = facts[0]
    for f in facts[1:]:
        fact = _weaker(fact, f)
    return fact


def _test_facts(model: "ModelView", scope, test: cst.BaseExpression) -> tuple[dict[str, str], dict[str, str]]:
    """(facts when the test is true, facts when it is false)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yes, no = _test_facts(model, scope, test.expression)
        return no, yes
    if isinstance(test, cst.BooleanOperation):
        ly, ln = _test_facts(model, scope, test.left)
        ry, rn = _test_facts(model, scope, test.right)
        if isinstance(test.operator, cst.And):
            yes = {**ly, **ry}
            no = {n: _weaker(f, rn[n]) for n, f in ln.items() if n in rn}
            return yes, no
        no = {**ln, **rn}
        yes = {n: _weaker(f, ry[n]) for n, f in ly.items() if n in ry}
        return yes, no
    if isinstance(test, cst.Call) and model.qn(test.func, scope) == "builtins.isinstance" and len(test.args) == 2:
        subject = test.args[0].value
        if isinstance(subject, cst.Name):
            fact = _type_fact(model, scope, test.args[1].value)
            if fact is not None:
                return {subject.value: fact}, {}
        return {}, {}
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        op = comp.operator
        left, right = test.left, comp.comparator
        # x is None / x is not None
        if isinstance(op, (cst.Is, cst.IsNot)) and isinstance(left, cst.Name) and isinstance(right, cst.Name) \
                and right.value == "None":
            fact = {left.value: PYTHON}
            return (fact, {}) if isinstance(op, cst.Is) else ({}, fact)
        # type(x) is int / type(x) == int / type(x) in (int, float)
        if isinstance(left, cst.Call) and model.qn(left.func, scope) == "builtins.type" and len(left.args) == 1 \
                and isinstance(left.args[0].value, cst.Name) and isinstance(op, (cst.Is, cst.Equal, cst.In)):
            fact = _type_fact(model, scope, right)
            if fact is not None:
                return {left.args[0].value.value: fact}, {}
    return {}, {}


def narrowing(model: "ModelView", fn: "Function", test: cst.BaseExpression) -> tuple[dict[str, str], dict[str, str]]:
    return _test_facts(model, fn, test)


class Flow:
    """Per-function flow facts for the model (`model.flow`)."""

    def __init__(self, model: "ModelView") -> None:
        self.model = model
        self._functions: dict[int, FunctionFlow] = {}

    def of(self, fn: "Function") -> FunctionFlow:
        ff = self._functions.get(id(fn))
        if ff is None:
            ff = self._functions[id(fn)] = FunctionFlow(self.model, fn)
        return ff

    def reaching(self, name: cst.Name, fn: "Function") -> tuple["Binding", ...] | None:
        """The bindings of fn that may reach this read of `name` in fn's own body (None: unknown)."""
        return self.of(fn).reaching.get(name)

    def narrowed(self, name: cst.Name, fn: "Function") -> str | None:
        """PYTHON / CONTAINER when a test in force at this read narrows the name."""
        return self.of(fn).narrowed.get(name)

    def exit_bindings(self, name: str, scope) -> tuple["Binding", ...] | None:
        """The bindings of `name` in `scope` (a function, or the module) that may be its value
        once the scope's code has run: what a function defined there and called later reads."""
        from jaxfuse_lint.model.scopes import Function

        if isinstance(scope, Function):
            return self.of(scope).exit_bindings(name)
        if scope is not self.model.index.scope:
            return None
        return self._module().exit_bindings(name)

    def reaching_in(self, name: cst.Name, scope) -> tuple["Binding", ...] | None:
        """The bindings that may reach this read of `name` in `scope`'s own statements (a
        function, or the module: a notebook's cells run in order, so a call in one cell reaches
        the def the cells before it left, not a later redefinition); None: unknown."""
        from jaxfuse_lint.model.scopes import Function

        if isinstance(scope, Function):
            return self.reaching(name, scope)
        if scope is not self.model.index.scope:
            return None
        return self._module().reaching.get(name)

    def _module(self) -> "FunctionFlow":
        scope = self.model.index.scope
        ff = self._functions.get(id(scope))
        if ff is None:
            ff = self._functions[id(scope)] = FunctionFlow(self.model, _ModuleBody(self.model))
        return ff


class _ModuleBody:
    """The module's own statements, walked like a function body without parameters."""

    def __init__(self, model: "ModelView") -> None:
        scope = model.index.scope
        self.node = model.index.module
        self.parent = None  # names in its tests resolve as in the module scope (no enclosing scope)
        self.bindings = scope.bindings
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.params: list[str] = []
        self.reads = [r for r in model.index.reads if r.scope is scope]


__all__ = ["Flow", "FunctionFlow", "PYTHON", "CONTAINER", "narrowing"]
