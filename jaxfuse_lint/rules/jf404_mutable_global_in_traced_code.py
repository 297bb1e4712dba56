"""JF404 mutable-global-in-traced-code."""
from __future__ import annotations

import weakref
from typing import Iterator

import libcst as cst

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.api import COMPILING
from jaxfuse_lint.model.call_frequency import call_sites
from jaxfuse_lint.model.frozen_values import (
    ClosureLocal, GlobalName, ObjectAttribute, Timeline, bodies_reaching_uses, compile_entries, compiled_callees,
    host_roots, module_statements_for, run_timeline,
)
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.scopes import Binding, Function, walk
from jaxfuse_lint.model.source_text import code_of
from jaxfuse_lint.model.staging import own_nodes, staging
from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message, reason_parts, staged_reason
from jaxfuse_lint.core.targets import Claim, tracing

_LOOPS = (cst.For, cst.While)


class MutableGlobalInTracedCode(Rule):
    code = "JF404"
    name = "mutable-global-in-traced-code"
    summary = "traced code reads a value the program rebinds between compiled calls (frozen at first trace)"
    fixable = "never"
    doc = """
    ## What it does
    Flags, in a function that is staged and compiled (`jax.jit`, `pmap`,
    `checkpoint`, a lax loop body or branch, or a function they call), a read
    of a value that the program rebinds after a call that traces the function
    and before a call that reuses the compiled program:

    - a module-level name, rebound at module level, in a function through
      `global name`, or in a function the module-level code calls (the module's
      statements and the host functions they call are followed in order; a
      function nothing calls — `main` run by a test, a library entry point — is
      followed on its own);
    - a local of the function that defines a jitted closure, rebound by that
      function between two calls of the closure;
    - an attribute of the object a jitted method runs on, when `self` is
      static (`static_argnums=0`, `static_argnames="self"`, a bound method
      handed to `jax.jit`): `obj.E = ...`, or a method that sets `self.E`,
      between two calls on the same object.

    Whatever the value's origin: a rebinding in a loop that also calls the
    function counts when the value can change from one iteration to the next —
    it reads the name itself, a loop target, or a value the loop carries, such
    as the jitted function's own output (`field = step(field)` then
    `eps = field ** 2`). The message names the rebinding, the call that traced
    the function first and the value it froze, and the call that reuses it.

    A function nothing in the module calls that rebinds a global
    (`def update(): global g; g = 10.0`) can run at any time and is reported
    too; a documented setter of a setting (`def set_layout(layout):` with a
    docstring, or a getter beside it, like `jax.config.update`) is meant to be
    called before tracing: with no caller in the project it is reported only
    in the preview tier.

    Not flagged: constants bound once, imports, functions and classes; names
    whose bindings are alternatives of one `if`/`try` statement; values set
    once before the first call (at start-up, in `main` before the loop, a
    factory's locals bound before the jitted closure is defined); values read
    on the host at run time (a host callback's own body); a flag set and
    restored around a trace (a write in a `finally:` block, `old = NAME ...
    NAME = old`, a counter incremented and decremented, the `__enter__` and
    `__exit__` of a context manager class); an attribute of a pytree `self`
    (`@jax.jit` on a method of a registered pytree class: its fields are traced
    arguments), or of a flax/equinox Module. A function that itself declares
    the name `global` and assigns it is left to JF403.

    ## Why is this bad?
    A value is read while the function is traced, and its value at that
    moment is baked into the compiled program as a constant. Later calls with
    arguments of the same shapes and dtypes reuse the cached program, so a
    rebinding is silently ignored — until some call with a new shape retraces
    and picks the new value up (the notes' `impure_uses_globals`: first call
    `4.0`, after `g = 10.` still `5.0`, then `[14.]`). A solver that updates
    its coefficients from each step's output keeps the first step's
    coefficients; a gradient with respect to an attribute the method reads
    (`model.E = E` then `model.energy(u)`) comes back 0.0.

    ## Known problems
    Calls through code the module does not show (another module's loop over a
    setter) are not followed; a rebinding in a branch counts as possible.

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
            "A value read by traced code is baked in at trace time; later rebindings are not seen",
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
        "import jax\ndef make(dt):\n    scale = dt * 2\n    @jax.jit\n    def step(x):\n        return x * scale\n"
        "    return step\n",
    )
    invalid = (
        "import jax\ng = 0.0\n@jax.jit\ndef f(x):\n    return x + g\ndef update():\n    global g\n    g = 10.0\n",
        "import jax\ndef make():\n    scale = 1.0\n    @jax.jit\n    def inner(x):\n        return x * scale\n"
        "    y = inner(1.0)\n    scale = 2.0\n    return inner(y)\n",
        "import jax\ng = 0.0\ndef f(x):\n    return x + g\nf_jit = jax.jit(f)\nprint(f_jit(1.0))\ng = 10.0\n"
        "print(f_jit(1.0))\n",
        "import jax\neps = 1.0\n@jax.jit\ndef step(f):\n    return f * eps\nf = 1.0\nfor _ in range(9):\n"
        "    f = step(f)\n    eps = f * f\n",
        "import jax\nfrom functools import partial\nclass M:\n    def __init__(self):\n        self.E = 1.0\n"
        "    @partial(jax.jit, static_argnums=0)\n    def energy(self, u):\n        return self.E * u\n"
        "m = M()\nm.energy(1.0)\nm.E = 2.0\nm.energy(1.0)\n",
    )

    def check(self, model: SemanticModel, settings) -> Iterator[Violation]:
        st = staging(model)
        module_scope = model.index.scope
        roots: list[Function] | None = None
        for fn in model.traced.reasons:
            if not st.is_staged(fn, cached=True):
                continue
            seen: set[str] = set()
            entries = None
            for read in fn.reads:
                name = read.name.value
                if name in seen or name.startswith("__"):
                    continue
                found = model.lookup(name, fn)
                if found is None:
                    continue
                if entries is None:
                    entries = compile_entries(model, fn)
                if roots is None:
                    roots = host_roots(model)
                if isinstance(found[0], Function) and found[0] is not fn:
                    violation = _frozen_local(model, fn, read, found[0], found[1], entries)
                    if violation is not None:
                        seen.add(name)
                        yield violation
                    continue
                if found[0] is not module_scope:
                    continue
                owner, bindings = found
                if name in fn.globals and any(model.scope_of(b.node) is fn for b in bindings):
                    continue  # fn writes it itself: JF403
                violation = _frozen_global(model, fn, read, bindings, entries, roots)
                if violation is not None:
                    seen.add(name)
                    yield violation
            if fn.cls is not None and _self_static(model, fn):
                if entries is None:
                    entries = compile_entries(model, fn)
                if roots is None:
                    roots = host_roots(model)
                yield from _frozen_attributes(model, fn, entries, roots)


def _first_value(model: SemanticModel, t: Timeline) -> tuple:
    """`, first traced on line 12 with `g = 0.0` (line 8)`: when the program was traced and what
    it froze."""
    parts: tuple = (", first traced by the call on line ", LineOf(t.first_use))
    if t.first_value is not None:
        parts += (f" with `{_binding_text(model, t.first_value.node)}` (line ", LineOf(t.first_value.node), ")")
    return parts


def _binding_text(model: SemanticModel, node: cst.CSTNode) -> str:
    if isinstance(node, cst.For):
        return f"for {code_of(model, node.target, 30)} in {code_of(model, node.iter, 30)}"
    return code_of(model, node, 50)


def _rebind_parts(model: SemanticModel, e) -> tuple:
    """`line 16 (`eps2_x = field ** 2`)`, or through a call: `line 19 (`g = 10.0`, run by the
    call on line 30)`."""
    parts: tuple = ("line ", LineOf(e.node), f" (`{_binding_text(model, e.node)}`")
    if e.via is not None:
        parts += (", run by the call on line ", LineOf(e.via))
    return parts + (")",)


def _timeline_message(model: SemanticModel, fn: Function, what: str, t: Timeline) -> tuple:
    return message(
        f"`{fn.display_name}` reads {what}, which is rebound on ", *_rebind_parts(model, t.rebind),
        f" after `{fn.display_name}` is compiled: its value is frozen into the program when "
        f"`{fn.display_name}` is traced (", *reason_parts(staged_reason(model, fn, cached=True)), ")",
        *_first_value(model, t), *_stale_parts(t), "; pass it as an argument",
    )


def _stale_parts(t: Timeline) -> tuple:
    if t.stale_use is t.first_use:
        return (", and that call reuses the program with the old value on the next iteration",)
    return (", and the call on line ", LineOf(t.stale_use), " reuses that program with the old value")


def _frozen_global(model: SemanticModel, fn: Function, read, bindings: list[Binding], entries,
                   roots: list[Function]) -> Violation | None:
    """A module global read by staged fn and rebound where the module shows it matters: between
    a call that traces fn and one that reuses the program (module-level code and the host
    functions it calls, in order; entry points nothing calls, each on its own), or by a function
    nothing in the module calls (`def update(): global g; g = 10.0`: it can run at any time)."""
    name = read.name.value
    if any(b.kind in ("import", "def", "class") for b in bindings):
        return None
    writers = {w for b in bindings if (w := model.function_of(b.node)) is not None}
    groups = {_top_level_of(model, b.node, _top_level_index(model)) for b in bindings if model.function_of(b.node) is None}
    if not writers and len(groups) < 2 and not any(b.kind == "augassign" or _in_loop(model, b) for b in bindings):
        return None  # bound once at module level: a constant
    ignore = frozenset(w for w in writers if _set_and_restored(model, w, name, bindings))
    subject = GlobalName(model, fn, entries, name=name, bindings=tuple(bindings), ignore=ignore)
    # Only bodies that reach a call of the compiled function can hold a timeline, and of the
    # module's own statements only those that call, make or bind what the subject follows (every
    # global of every staged function walking every body made a long module quadratic).
    uses = bodies_reaching_uses(model, entries)
    t = None
    if model.index.scope in uses:
        keys = (*entries, *subject.reach(), *(id(b.node) for b in bindings))
        t = run_timeline(subject, module_statements_for(model, keys), model.index.scope)
    for root in roots:
        if t is not None:
            break
        if root in uses:
            t = run_timeline(subject, root.node.body.body, root)
    if t is not None:
        return Violation(read.name, _timeline_message(model, fn, f"module-level `{name}`", t),
                         data={"name": name, "rebinding": t.rebind.node, "timeline": t})
    # A writer nothing in the module calls: it can run at any time, after the first trace too.
    for b in bindings:
        writer = model.function_of(b.node)
        if writer is None or writer in ignore:
            continue
        sites, escapes = call_sites(model, writer)
        host_sites = [s for s in sites if not model.is_traced_scope(s.scope)]
        if host_sites:
            continue  # where it is called, the timeline above decided
        preview = None
        if escapes and not sites:
            preview = f"that `{writer.display_name}`, handed elsewhere, runs after `{fn.display_name}` is first traced"
        elif not sites and _documented_setting(model, writer, b):
            preview = (f"that the setting `{writer.display_name}` is called after `{fn.display_name}` is first "
                       "traced (a documented setter is meant to be called before)")
        return Violation(
            read.name,
            message(
                f"`{fn.display_name}` reads module-level `{name}`, which is rebound on line ",
                LineOf(b.node), f" in `{writer.display_name}`: its value is frozen into the compiled program when "
                f"`{fn.display_name}` is traced (", *reason_parts(staged_reason(model, fn, cached=True)),
                f"), and a call of `{writer.display_name}` after that is ignored until something forces a "
                "retrace; pass it as an argument",
            ),
            data={"name": name, "rebinding": b.node},
            preview=preview,
        )
    return None


def _documented_setting(model: SemanticModel, writer: Function, b: Binding) -> bool:
    """A setting's documented setter, like `jax.config.update`: it assigns the global from its own
    parameter (`def set_layout(layout): global _LAYOUT; _LAYOUT = layout`) and is documented as
    an API (a docstring), or the module reads the setting back through a getter."""
    value = b.value
    if b.index is not None and isinstance(value, (cst.Tuple, cst.List)) and b.index < len(value.elements):
        value = value.elements[b.index].value
    if value is None or not any(isinstance(n, cst.Name) and n.value in writer.params for n in walk(value)):
        return False
    body = writer.node.body
    if isinstance(body, cst.IndentedBlock) and body.body:
        first = body.body[0]
        if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Expr) and isinstance(
                first.body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
            return True
    for other in model.index.functions:
        if other is writer or other.parent is not model.index.scope or len(other.returns) != 1:
            continue
        ret = other.returns[0]
        if isinstance(ret, cst.Name) and ret.value == b.name and b.name not in other.globals:
            return True  # `def get_layout(): return _LAYOUT`
    return False


def _frozen_local(model: SemanticModel, fn: Function, read, owner: Function,
                  bindings: list[Binding], entries) -> Violation | None:
    """A closure's frozen local: `fn` (staged, nested in `owner`) reads `owner`'s local `name`,
    and `owner` calls fn, rebinds the name, and calls fn again (or rebinds it in a loop that
    calls fn, from a value the loop carries): the second call reuses the program traced with the
    old value. A factory that binds its locals once before defining fn rebinds nothing after."""
    name = read.name.value
    if any(b.kind in ("import", "def", "class", "param") for b in bindings) or name in fn.nonlocals:
        return None
    if not isinstance(owner.node.body, cst.IndentedBlock):
        return None
    if any(isinstance(a, _LOOPS) for a in _ancestors_below(model, fn.node, owner.node)):
        return None  # the def runs again each iteration: a new function, traced with current values
    subject = ClosureLocal(model, fn, entries, name=name, owner=owner, bindings=tuple(bindings))
    t = run_timeline(subject, owner.node.body.body, owner)
    if t is None:
        return None
    return Violation(
        read.name,
        message(
            f"`{fn.display_name}` reads `{name}` of the enclosing `{owner.display_name}`, which is rebound on ",
            *_rebind_parts(model, t.rebind), " after the first call: its value is frozen into the compiled "
            f"program when `{fn.display_name}` is traced (", *reason_parts(staged_reason(model, fn, cached=True)),
            ")", *_first_value(model, t), *_stale_parts(t), "; pass it as an argument",
        ),
        data={"name": name, "rebinding": t.rebind.node, "timeline": t},
    )


_SETUP_METHODS = frozenset({"__init__", "__post_init__", "setup", "__new__"})


def _self_static(model: SemanticModel, fn: Function, depth: int = 0) -> bool:
    """Whether the object a method runs on is a Python value of the trace (part of the cache
    key by identity, its attributes read as constants): the method is jitted as a bound method
    (`jax.jit(self.step)`), with `static_argnums=0` / `static_argnames="self"`, or called as
    `self.m(...)` from a method where that holds. Framework Modules (flax, equinox) are pytrees
    or fields, and are left alone."""
    if depth > 4 or not fn.params or fn.cls is None or instances(model).framework_base(fn.cls) is not None:
        return False
    for r in model.traced.reasons.get(fn, ()):
        if r.kind in ("decorator", "transform") and r.transform in COMPILING:
            if r.bound_method or 0 in r.static_argnums or fn.params[0] in r.static_argnames:
                return True
        elif r.kind == "called" and r.caller is not None and r.caller.cls is fn.cls and isinstance(r.node, cst.Call):
            func = r.node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and r.caller.params \
                    and func.value.value == r.caller.params[0] and _self_static(model, r.caller, depth + 1):
                return True
    return False


def _frozen_attributes(model: SemanticModel, fn: Function, entries, roots: list[Function]) -> Iterator[Violation]:
    """`self.E` read by a jitted method whose `self` is static, where the module rebinds `obj.E`
    (or calls a method that sets `self.E`) between a call that traces the method on `obj` and
    one that reuses the program on the same object."""
    inst = instances(model)
    ci = fn.cls
    me = fn.params[0]
    reads: dict[str, cst.Attribute] = {}
    for node in own_nodes(fn):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == me \
                and node.attr.value not in reads and inst.method(ci, node.attr.value) is None \
                and not _stored(model, node):
            reads[node.attr.value] = node
    if not reads:
        return
    written = _attributes_written_after_setup(model, inst, ci)
    candidates = {a: n for a, n in reads.items() if a in written}
    if not candidates:
        return
    keys = _used_objects(model, fn, entries, ci)
    for attr, node in candidates.items():
        for key in keys:
            subject = ObjectAttribute(model, fn, entries, cls=ci, attr=attr, key=key)
            t = run_timeline(subject, model.module.body, model.index.scope)
            for root in roots:
                if t is not None:
                    break
                t = run_timeline(subject, root.node.body.body, root)
            if t is None:
                continue
            yield Violation(
                node,
                message(
                    f"`{fn.display_name}` reads `{me}.{attr}`, which is rebound on ", *_rebind_parts(model, t.rebind),
                    f" after the method is compiled for that object: with `{me}` static (",
                    *reason_parts(staged_reason(model, fn, cached=True)),
                    f"), the object is part of the cache key but `{me}.{attr}` is frozen into the program as "
                    "a constant", *_first_value(model, t), *_stale_parts(t),
                    f" (a gradient through `{attr}` comes back 0); pass it as an argument",
                ),
                data={"name": attr, "rebinding": t.rebind.node, "timeline": t},
            )
            break


def _stored(model: SemanticModel, node: cst.Attribute) -> bool:
    parent = model.parent(node)
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, (cst.AugAssign, cst.AnnAssign))
                                                and parent.target is node):
        return True
    return False


def _attributes_written_after_setup(model: SemanticModel, inst, ci) -> set[str]:
    """Attributes of ci's instances assigned outside their set-up methods: `obj.E = ...`
    anywhere in the module on an instance of ci, `self.E = ...` in another method. (One walk of
    the module answers for every class.)"""
    by_class = model.__dict__.get("_attributes_written_after_setup")
    if by_class is None:
        by_class = {}
        for node in walk(model.module):
            if isinstance(node, cst.Assign):
                targets = [t.target for t in node.targets]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
                targets = [node.target]
            else:
                continue
            attributes = [t for t in targets if isinstance(t, cst.Attribute)]
            if not attributes:
                continue
            scope = model.scope_of(node)
            where = model.function_of(node)
            for t in attributes:
                owner = inst.instance_class(t.value, scope)
                if owner is None or (where is not None and where.cls is owner and where.name in _SETUP_METHODS):
                    continue
                by_class.setdefault(id(owner), set()).add(t.attr.value)
        model.__dict__["_attributes_written_after_setup"] = by_class
    return by_class.get(id(ci), set())


def _used_objects(model: SemanticModel, fn: Function, entries, ci) -> list[tuple]:
    """The objects (as ObjectAttribute keys) on which host code calls the compiled method."""
    keys: list[tuple] = []
    probe = ObjectAttribute(model, fn, entries, cls=ci, attr="", key=())
    for site in model.index.calls:
        if model.is_traced_scope(site.scope):
            continue
        if not (compiled_callees(model, site.call, site.scope) & entries):
            continue
        key = probe.used_object(site.call, site.scope, None)
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def _ancestors_below(model: SemanticModel, node: cst.CSTNode, stop: cst.CSTNode):
    for a in model.ancestors(node):
        if a is stop:
            return
        yield a


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


_TOP_LEVEL: "weakref.WeakKeyDictionary[SemanticModel, dict[cst.CSTNode, int]]" = weakref.WeakKeyDictionary()


def _top_level_index(model: SemanticModel) -> dict[cst.CSTNode, int]:
    """Each top-level statement's position, made once per model (per binding of each global
    read, it made a long file's analysis quadratic)."""
    index = _TOP_LEVEL.get(model)
    if index is None:
        index = _TOP_LEVEL[model] = {stmt: i for i, stmt in enumerate(model.module.body)}
    return index


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


RULE = MutableGlobalInTracedCode
