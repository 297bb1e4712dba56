"""JF404 mutable-global-in-traced-code."""
from __future__ import annotations

from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.scopes import Binding, Function, walk
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts
from jaxfuse_lint.core.targets import Claim, tracing

_LOOPS = (cst.For, cst.While)


class MutableGlobalInTracedCode(Rule):
    code = "JF404"
    name = "mutable-global-in-traced-code"
    summary = "traced code reads a module-level variable that is rebound elsewhere (frozen at first trace)"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in a function that is staged and compiled (`jax.jit`, `pmap`,
    `checkpoint`, a lax loop body or branch, or a function they call), a read
    of a module-level name that the module rebinds:
    - inside a function, through `global name`;
    - at module level (a second assignment, `name += 1`) between two
      module-level uses of the traced function — traced and compiled with the
      old value, then called again after the change — or by a module-level
      `for` loop whose body uses the function.

    The same holds for a local of an enclosing function read by a nested staged
    function (a closure): flagged when the enclosing function calls the nested
    one, rebinds the local, and calls it again (or rebinds it in a loop that
    calls it).

    A function that sets a flag and restores it before it returns (a write in
    a `finally:` block, `old = NAME ... NAME = old`, a counter incremented and
    decremented: trace-time bookkeeping around a trace, by design) does not
    count as a rebinding, nor do the writes of a context manager class whose
    `__enter__` and `__exit__` both assign the flag.

    Constants bound once, imports, functions and classes are never flagged, nor
    are names whose bindings are alternatives of one `if`/`try` statement. A
    function that itself declares the name `global` and assigns it is left to
    JF403.

    ## Why is this bad?
    A global is read while the function is traced, and its value at that
    moment is baked into the compiled program as a constant. Later calls with
    arguments of the same shapes and dtypes reuse the cached program, so a
    rebinding is silently ignored — until some call with a new shape retraces
    and picks the new value up (the notes' `impure_uses_globals`: first call
    `4.0`, after `g = 10.` still `5.0`, then `[14.]`).

    ## Known problems
    The rule cannot know whether a function that rebinds the name runs before
    the first trace (configuration code that runs once at start-up is
    harmless); if it does, pass the value as an argument anyway or silence the
    line. Module-level rebindings count only between module-level uses of the
    function (or of what jits or calls it): uses from inside other functions
    are not followed, and notebook-style scripts that redefine the function
    before using it again are left alone. `make_jaxpr`/`eval_shape` (traced
    once, nothing cached) and eager transforms are not checked.

    ## Example
    ```python
    g = 0.0

    @jax.jit
    def impure_uses_globals(x):
        return x + g

    def update_global():
        global g
        g = 10.0
    ```

    ## Use instead
    ```python
    @jax.jit
    def pure_uses_argument(x, g):
        return x + g
    ```
    (or `static_argnames=["g"]` when it must stay a Python value: a new value
    then triggers a new compilation instead of being ignored).

    ## Fix safety
    No automatic fix: it changes the function's signature and every call site.
    """
    backends = (
        Claim(
            "A mutable global read by traced code is baked in at trace time; later changes are not seen",
            gpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            cpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
            tpu=tracing("it happens while JAX traces the function, before any backend compiler runs"),
        ),
    )
    valid = (
        "import jax\nSCALE = 2.0\n@jax.jit\ndef f(x):\n    return x * SCALE\n",
        "import jax\ntry:\n    DTYPE = jax.numpy.float64\nexcept AttributeError:\n    DTYPE = None\n"
        "@jax.jit\ndef f(x):\n    return x.astype(DTYPE)\n",
        "g = 0.0\ndef host(x):\n    return x + g\ndef update():\n    global g\n    g = 1.0\n",
    )
    invalid = (
        "import jax\ng = 0.0\n@jax.jit\ndef f(x):\n    return x + g\ndef update():\n    global g\n    g = 10.0\n",
        "import jax\ndef make():\n    scale = 1.0\n    @jax.jit\n    def inner(x):\n        return x * scale\n"
        "    y = inner(1.0)\n    scale = 2.0\n    return inner(y)\n",
        "import jax\ng = 0.0\ndef f(x):\n    return x + g\nf_jit = jax.jit(f)\nprint(f_jit(1.0))\ng = 10.0\n"
        "print(f_jit(1.0))\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        module_scope = model.index.scope
        top = _top_level_index(model)
        uses = _ModuleUses(model, top)
        for fn in model.traced.reasons:
            if not st.is_staged(fn, cached=True):
                continue
            seen: set[str] = set()
            holders = None
            for read in fn.reads:
                name = read.name.value
                if name in seen or name.startswith("__"):
                    continue
                found = model.lookup(name, fn)
                if found is not None and isinstance(found[0], Function) and found[0] is not fn:
                    violation = _frozen_local(model, fn, read, found[0], found[1])
                    if violation is not None:
                        seen.add(name)
                        yield violation
                    continue
                if found is None or found[0] is not module_scope:
                    continue
                owner, bindings = found
                if name in fn.globals and any(model.scope_of(b.node) is fn for b in bindings):
                    continue  # fn writes it itself: JF403
                if holders is None:
                    holders = _trace_holders(model, fn, top)
                rebind = _rebinding(model, bindings, top, _top_level_of(model, fn.node, top), uses, holders)
                if rebind is None:
                    continue
                seen.add(name)
                where = model.function_of(rebind.node)
                inside = f" in `{where.display_name}`" if where is not None else ""
                yield Violation(
                    read.name,
                    message(
                        f"`{fn.display_name}` reads module-level `{name}`, which is rebound on line ",
                        LineOf(rebind.node), f"{inside}: its value is frozen into the compiled program when "
                        f"`{fn.display_name}` is traced (",
                        *reason_parts(model.trace_reason(fn)),
                        "), and later rebindings are ignored until something forces a retrace; pass it as an "
                        "argument",
                    ),
                    data={"name": name, "rebinding": rebind},
                )


def _frozen_local(model: SemanticModel, fn: Function, read, owner: Function,
                  bindings: list[Binding]) -> Violation | None:
    """A closure's frozen local: `fn` (staged, nested in `owner`) reads `owner`'s local `name`,
    and `owner` calls fn, rebinds the name, and calls fn again (or rebinds it in a loop that
    calls fn): the second call reuses the program traced with the old value."""
    name = read.name.value
    if any(b.kind in ("import", "def", "class", "param") for b in bindings) or name in fn.nonlocals:
        return None
    body = owner.node.body
    if not isinstance(body, cst.IndentedBlock):
        return None
    index = {stmt: i for i, stmt in enumerate(body.body)}
    if any(isinstance(a, _LOOPS) for a in _ancestors_below(model, fn.node, owner.node)):
        return None  # the def runs again each iteration: a new function, traced with current values
    holders = _closure_holders(model, fn, owner)
    if not holders:
        return None
    used_at = sorted({i for r in owner.reads if r.name.value in holders
                      and (i := _top_level_of(model, r.name, index)) is not None})
    if not used_at:
        return None
    for b in bindings:
        if model.function_of(b.node) is not owner:
            continue
        at = _top_level_of(model, b.node, index)
        if at is None:
            continue
        loops = [a for a in _ancestors_below(model, b.node, owner.node) if isinstance(a, _LOOPS)]
        # In a loop, only a value that changes from one iteration to the next counts (`lr = lr * 0.5`,
        # `scale = s` for the loop's `s`), not one recomputed the same each time (`n = len(data)`).
        in_loop = bool(loops) and _changes_per_iteration(model, b, loops)
        if (in_loop and at in used_at) or (any(u < at for u in used_at) and any(u > at for u in used_at)):
            return Violation(
                read.name,
                message(
                    f"`{fn.display_name}` reads `{name}` of the enclosing `{owner.display_name}`, which is rebound "
                    "on line ", LineOf(b.node), " after the first call: its value is frozen into the compiled "
                    f"program when `{fn.display_name}` is traced (", *reason_parts(model.trace_reason(fn)),
                    "), and the later calls reuse that program with the old value; pass it as an argument",
                ),
                data={"name": name, "rebinding": b},
            )
    return None


def _changes_per_iteration(model: SemanticModel, b: Binding, loops: list[cst.CSTNode]) -> bool:
    """Whether a rebinding inside loops takes a new value each iteration: an augmented
    assignment, a `for` target, or a value that reads the name itself or a loop's target."""
    if b.kind in ("augassign", "for"):
        return True
    if b.value is None:
        return False
    names = {b.name}
    for loop in loops:
        if isinstance(loop, cst.For):
            names |= {n.value for n in walk(loop.target) if isinstance(n, cst.Name)}
    return any(isinstance(n, cst.Name) and n.value in names for n in walk(b.value))


def _ancestors_below(model: SemanticModel, node: cst.CSTNode, stop: cst.CSTNode):
    for a in model.ancestors(node):
        if a is stop:
            return
        yield a


def _closure_holders(model: SemanticModel, fn: Function, owner: Function) -> set[str]:
    """The names of `owner` through which it calls the staged fn: fn's own name (a decorated
    def, `f = jax.jit(f)`) and names bound to a transform of it (`f_jit = jax.jit(f)`)."""
    if fn.parent is not owner or fn.is_lambda:
        return set()
    names = set()
    for r in model.traced.reasons.get(fn, ()):
        if r.kind == "decorator":
            names.add(fn.name)
        elif r.kind == "transform" and isinstance(r.node, cst.Call):
            node: cst.CSTNode | None = r.node
            while isinstance(node, (cst.Call, cst.Arg)):
                node = model.parent(node)
            if isinstance(node, cst.Assign) and model.function_of(node) is owner:
                names |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    return names


_ENTER_EXIT = {"__enter__": "__exit__", "__exit__": "__enter__",
               "__aenter__": "__aexit__", "__aexit__": "__aenter__"}


def _set_and_restored(model: SemanticModel, writer: Function, name: str, bindings: list[Binding]) -> bool:
    """Trace-time bookkeeping by design: the function that rebinds the global restores it
    before it returns (a write in a `finally:` block, `old = NAME ... NAME = old`, or a counter
    both incremented and decremented), so the name changes only around a trace, on purpose."""
    writes = [b for b in bindings if model.function_of(b.node) is writer]
    if name not in writer.globals or not writes:
        return False
    if writer.cls is not None and writer.name in _ENTER_EXIT:
        # A context manager class: `__enter__` sets the flag, `__exit__` puts it back.
        other = _ENTER_EXIT[writer.name]
        if any(f is not None and f.cls is writer.cls and f.name == other
               for f in (model.function_of(b.node) for b in bindings)):
            return True
    for b in writes:
        if any(isinstance(a, cst.Finally) for a in _ancestors_below(model, b.node, writer.node)):
            return True
    ops = {type(b.node.operator) for b in writes if b.kind == "augassign" and isinstance(b.node, cst.AugAssign)}
    if cst.AddAssign in ops and cst.SubtractAssign in ops:
        return True
    saved = set()
    for local, bs in writer.bindings.items():
        if local == name:
            continue
        for lb in bs:
            value = lb.value
            if lb.index is not None and isinstance(value, (cst.Tuple, cst.List)) and lb.index < len(value.elements):
                value = value.elements[lb.index].value
            if isinstance(value, cst.Name) and value.value == name:
                saved.add(local)
    for b in writes:
        value = b.value
        if b.index is not None and isinstance(value, (cst.Tuple, cst.List)) and b.index < len(value.elements):
            value = value.elements[b.index].value
        if isinstance(value, cst.Name) and value.value in saved:
            return True
    return False


def _top_level_index(model: SemanticModel) -> dict[cst.CSTNode, int]:
    return {stmt: i for i, stmt in enumerate(model.module.body)}


def _top_level_of(model: SemanticModel, node: cst.CSTNode, top: dict[cst.CSTNode, int]) -> int | None:
    if node in top:
        return top[node]
    for a in model.ancestors(node):
        if a in top:
            return top[a]
    return None


def _in_loop(model: SemanticModel, b: Binding) -> bool:
    if b.kind == "for":
        return True
    return any(isinstance(a, _LOOPS) for a in model.ancestors(b.node))


class _ModuleUses:
    """Where module-level code (outside any def) uses a name, and where it binds it."""

    def __init__(self, model: SemanticModel, top: dict[cst.CSTNode, int]) -> None:
        self.model = model
        self.top = top
        self.by_name: dict[str, list[int]] = {}
        for read in model.index.reads:
            if read.scope is model.index.scope:
                index = _top_level_of(model, read.name, top)
                if index is not None:
                    self.by_name.setdefault(read.name.value, []).append(index)

    def live_uses(self, names: set[str], since: int) -> list[int]:
        """Top-level statements after `since` that use one of `names` before the module binds
        that name again (a notebook redefining `step_fn` uses a new function from then on)."""
        out = []
        for name in names:
            module_scope = self.model.index.scope
            # `f = jax.jit(f)` wraps the same function: not a new holder.
            bound_at = sorted(i for b in module_scope.bindings.get(name, ())
                              if (i := _top_level_of(self.model, b.node, self.top)) is not None and i >= since
                              and not self.model.rewraps(b, module_scope))
            # The first binding from `since` on defines the holder (`def f`, `f_jit = jax.jit(f)`).
            stop = bound_at[1] if len(bound_at) > 1 else None
            out.extend(u for u in self.by_name.get(name, ()) if u > since and (stop is None or u < stop))
        return sorted(out)


def _holders(model: SemanticModel, stmt: cst.CSTNode) -> set[str]:
    """The module-level names a top-level statement binds (a def, a class, `f_jit = jax.jit(f)`)."""
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return {stmt.name.value}
    names = set()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    if isinstance(t.target, cst.Name):
                        names.add(t.target.value)
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                names.add(small.target.value)
    return names


def _trace_holders(model: SemanticModel, fn: Function, top: dict) -> set[str]:
    """The module-level names through which module code can trace fn: the names bound by its
    own top-level statement, by `f_jit = jax.jit(f)` statements, and those of its traced callers."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = [fn]
    while stack:
        f = stack.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        index = _top_level_of(model, f.node, top)
        if index is not None:
            names |= _holders(model, model.module.body[index])
        for r in model.traced.reasons.get(f, ()):
            if r.kind == "transform":
                index = _top_level_of(model, r.node, top)
                if index is not None:
                    names |= _holders(model, model.module.body[index])
            if r.caller is not None:
                stack.append(r.caller)
    return names


def _rebinding(model: SemanticModel, bindings: list[Binding], top: dict, fn_index: int | None,
               uses: _ModuleUses, holders: set[str]) -> Binding | None:
    """The binding that changes the name after the function may have been traced, if any:
    an assignment inside a function (`global name`), which can run at any time; or a
    module-level rebinding between two module-level uses of the traced function (traced with
    the old value, called again with the new one), or a rebinding loop that also uses it."""
    if any(b.kind in ("import", "def", "class") for b in bindings):
        return None
    for b in bindings:
        writer = model.function_of(b.node)
        if writer is not None and not _set_and_restored(model, writer, b.name, bindings):
            return b
    if fn_index is None:
        return None
    groups = {_top_level_of(model, b.node, top) for b in bindings}
    if len(groups) < 2 and not any(b.kind == "augassign" or _in_loop(model, b) for b in bindings):
        return None
    used_at = uses.live_uses(holders, fn_index)
    for b in bindings:
        index = _top_level_of(model, b.node, top)
        if index is None or index <= fn_index:
            continue
        if _in_loop(model, b) and index in used_at:
            return b  # `for lr in ...: step(x)`: traced on the first iteration, stale after
        if any(u < index for u in used_at) and any(u > index for u in used_at):
            return b  # traced with the old value, called again with the new one
    return None


RULE = MutableGlobalInTracedCode
