"""One walk over the CST: scopes, bindings, imports, reads and call sites.

libcst's own visitor and metadata providers cost several times the parse
(measured on the installed jax source: parse 28 s, a no-op CSTVisitor 18 s,
PositionProvider 56 s). This walk reads dataclass fields directly, keeps its
own stack, and records only what the rules ask about, for about a sixth of the
parse. It is iterative, so deeply nested expressions cannot overflow the stack.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, Union

import libcst as cst

FunctionNode = Union[cst.FunctionDef, cst.Lambda]
PYTHON_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def child_fields(node: cst.CSTNode) -> tuple[str, ...]:
    t = type(node)
    names = _FIELD_NAMES.get(t)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(node)
            # Whitespace, commas and operators carry no names or calls.
            # (`star` is the `*`/`**` token of a Param; `star_arg`/`star_kwarg` are parameters.)
            if f.name in ("star_arg", "star_kwarg") or not f.name.startswith((
                "whitespace", "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after", "header",
                "footer", "colon", "equal", "star", "dot", "lbracket", "rbracket", "lbrace", "rbrace",
                "asynchronous", "operator"))
        )
        _FIELD_NAMES[t] = names
    return names


def _node_types() -> set[type]:
    out: set[type] = set()
    todo = [cst.CSTNode]
    while todo:
        t = todo.pop()
        for sub in t.__subclasses__():
            if sub not in out:
                out.add(sub)
                todo.append(sub)
    return out


# isinstance() against libcst's abstract base classes runs ABCMeta.__instancecheck__, a
# Python-level call; the walk asks it for every field of every node. Exact types are
# looked up in sets instead (a type first seen later is classified once, by isinstance).
_NODE_TYPES: set[type] = _node_types()
_LEAF_TYPES: set[type] = {str, type(None), bool, int, float, bytes}


def _is_node(value: object) -> bool:
    t = type(value)
    if t in _NODE_TYPES:
        return True
    if t in _LEAF_TYPES:
        return False
    if isinstance(value, cst.CSTNode):
        _NODE_TYPES.add(t)
        return True
    if not isinstance(value, (list, tuple)):
        _LEAF_TYPES.add(t)
    return False


def iter_children(node: cst.CSTNode) -> Iterator[tuple[str, cst.CSTNode]]:
    for name in child_fields(node):
        value = getattr(node, name)
        t = type(value)
        if t is tuple or t is list:
            for item in value:
                if type(item) in _NODE_TYPES or _is_node(item):
                    yield name, item
        elif t in _NODE_TYPES or _is_node(value):
            yield name, value


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node` (pre-order, document order), without recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        children = [c for _, c in iter_children(n)]
        stack.extend(reversed(children))


@dataclass(eq=False)
class Binding:
    """One place where a name gets a value in a scope."""

    name: str
    kind: str  # assign | augassign | annassign | for | with | import | def | class | param | walrus | except | global
    node: cst.CSTNode  # the statement or construct that binds
    value: cst.BaseExpression | None = None
    # For `a, b = value`: the position of the name in the target tuple (None: the whole value).
    index: int | None = None
    qualified_name: str | None = None  # imports: what the name refers to
    function: "Function | None" = None  # defs and lambdas assigned to a name
    target: cst.CSTNode | None = None  # the Name node that is bound


@dataclass(eq=False)
class Scope:
    node: cst.CSTNode
    parent: "Scope | None"
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    def bind(self, b: Binding) -> None:
        self.bindings.setdefault(b.name, []).append(b)


@dataclass(eq=False)
class ClassInfo(Scope):
    name: str = ""


@dataclass(eq=False)
class Function(Scope):
    """A def or a lambda: a unit of code that may run under tracing."""

    name: str = "<lambda>"
    cls: ClassInfo | None = None  # set when this def is a method (directly in a class body)
    params: list[str] = field(default_factory=list)
    param_nodes: dict[str, cst.Param] = field(default_factory=dict)
    params_with_default: set[str] = field(default_factory=set)
    star_params: set[str] = field(default_factory=set)
    calls: list["CallSite"] = field(default_factory=list)
    reads: list["Read"] = field(default_factory=list)
    nested: list["Function"] = field(default_factory=list)
    returns: list[cst.BaseExpression] = field(default_factory=list)
    asserts: list[cst.Assert] = field(default_factory=list)
    statements: list[cst.CSTNode] = field(default_factory=list)

    @property
    def is_lambda(self) -> bool:
        return isinstance(self.node, cst.Lambda)

    @property
    def is_classmethod(self) -> bool:
        """A `@classmethod` of a class: its first parameter is bound to the class whether it is called
        on the class (`Cls.make(x)`) or on an instance."""
        return self.cls is not None and isinstance(self.node, cst.FunctionDef) and any(
            (isinstance(d.decorator, cst.Name) and d.decorator.value == "classmethod")
            or (isinstance(d.decorator, cst.Attribute) and d.decorator.attr.value == "classmethod")
            for d in self.node.decorators)

    @property
    def display_name(self) -> str:
        if self.cls is not None:
            return f"{self.cls.name}.{self.name}"
        return self.name

    def enclosing_functions(self) -> Iterator["Function"]:
        s = self.parent
        while s is not None:
            if isinstance(s, Function):
                yield s
            s = s.parent


@dataclass(eq=False)
class CallSite:
    call: cst.Call
    scope: Scope  # the function (or module/class) whose code makes the call
    loop: cst.CSTNode | None  # innermost Python loop/comprehension around the call within its scope


@dataclass(eq=False)
class Read:
    name: cst.Name
    scope: Scope


@dataclass
class ModuleIndex:
    """Everything the walk found, for the model to query."""

    module: cst.Module
    scope: Scope
    functions: list[Function]
    function_of: dict[cst.CSTNode, Function]
    parents: dict[cst.CSTNode, cst.CSTNode]
    calls: list[CallSite]
    reads: list[Read]
    stores: set[cst.Name]
    scope_of_node: dict[cst.CSTNode, Scope]
    # (name, id of a scope or None) -> the reads of name in that scope and the scopes nested in
    # it (None: anywhere), built on first use: a question about one variable costs what its own
    # reads cost, not every read of the module (`x` is read in every function of a long file:
    # asking about each one's reads made analysis and fixes quadratic in the file's size).
    _reads_named: dict[tuple[str, int | None], list[Read]] | None = field(default=None, repr=False, compare=False)

    def reads_named(self, name: str, within: Scope | None = None) -> list[Read]:
        """The reads of `name`, in the module's order; with `within` (not the module's scope),
        only those in it or in the scopes nested in it (where a variable it binds is visible)."""
        if self._reads_named is None:
            index: dict[tuple[str, int | None], list[Read]] = {}
            for read in self.reads:
                index.setdefault((read.name.value, None), []).append(read)
                s: Scope | None = read.scope
                while s is not None and s is not self.scope:
                    index.setdefault((read.name.value, id(s)), []).append(read)
                    s = s.parent
            self._reads_named = index
        key = None if within is None or within is self.scope else id(within)
        return self._reads_named.get((name, key), [])

    _calls_named: dict[str, list[CallSite]] | None = field(default=None, repr=False, compare=False)
    _attributes_named: dict[str, list[cst.Attribute]] | None = field(default=None, repr=False, compare=False)

    def calls_named(self, *names: str) -> list[CallSite]:
        """The calls whose callee is spelled `name(...)` or `<anything>.name(...)` for one of
        `names`, in the module's order (built on first use, as reads_named)."""
        if self._calls_named is None:
            index: dict[str, list[CallSite]] = {}
            for site in self.calls:
                func = site.call.func
                key = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(
                    func, cst.Attribute) else None
                if key is not None:
                    index.setdefault(key, []).append(site)
            self._calls_named = index
        if len(names) == 1:
            return self._calls_named.get(names[0], [])
        found = {id(site) for name in names for site in self._calls_named.get(name, [])}
        return [site for site in self.calls if id(site) in found] if found else []

    def attributes_named(self, name: str) -> list[cst.Attribute]:
        """Every `<anything>.name` of the module, in the order of the walk."""
        if self._attributes_named is None:
            index: dict[str, list[cst.Attribute]] = {}
            for node in self.parents:
                if isinstance(node, cst.Attribute):
                    index.setdefault(node.attr.value, []).append(node)
            self._attributes_named = index
        return self._attributes_named.get(name, [])


def target_names(target: cst.BaseExpression) -> Iterator[tuple[cst.Name, int | None]]:
    """Names bound by an assignment target, with their index in a flat tuple target."""
    if isinstance(target, cst.Name):
        yield target, None
    elif isinstance(target, (cst.Tuple, cst.List)):
        flat = all(isinstance(e.value, cst.Name) for e in target.elements)
        for i, el in enumerate(target.elements):
            if isinstance(el, cst.StarredElement):
                yield from ((n, None) for n, _ in target_names(el.value))
            elif isinstance(el.value, cst.Name) and flat:
                yield el.value, i
            else:
                yield from ((n, None) for n, _ in target_names(el.value))
    elif isinstance(target, cst.StarredElement):
        yield from ((n, None) for n, _ in target_names(target.value))


def dotted_name(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


# The node types the walk handles, compared by exact type: isinstance() against libcst's
# abstract base classes runs ABCMeta.__instancecheck__, a Python-level call, for every
# node and every branch (none of these classes has subclasses).
_BINDS = frozenset({
    cst.Call, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.WithItem,
    cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal, cst.Return, cst.Assert, cst.ExceptHandler,
    cst.ExceptStarHandler,
})
_LOOP_TYPES = frozenset(PYTHON_LOOPS)

# (parent type, field) pairs whose Name children are not reads.
_NOT_READ = {
    (cst.Attribute, "attr"), (cst.Arg, "keyword"), (cst.FunctionDef, "name"), (cst.ClassDef, "name"),
    (cst.Param, "name"), (cst.ImportAlias, "name"), (cst.ImportAlias, "asname"), (cst.AsName, "name"),
    (cst.ImportFrom, "module"), (cst.Import, "names"), (cst.Global, "names"), (cst.Nonlocal, "names"),
    (cst.NameItem, "name"), (cst.ExceptHandler, "name"), (cst.ExceptStarHandler, "name"),
    (cst.MatchAs, "name"), (cst.MatchStar, "name"), (cst.MatchKeywordElement, "key"),
}


class _Builder:
    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.functions: list[Function] = []
        self.function_of: dict[cst.CSTNode, Function] = {}
        self.calls: list[CallSite] = []
        self.reads: list[Read] = []
        self.stores: set[cst.Name] = set()
        self.scope_of_node: dict[cst.CSTNode, Scope] = {}
        self.module_scope = Scope(node=module, parent=None)
        # `f = lambda v: ...`: the binding is made before the walk reaches the lambda; it gets its
        # Function when the lambda is seen (so that `f` names that function, like a `def`).
        self._lambda_bindings: dict[int, list[Binding]] = {}

    # -- bindings ---------------------------------------------------------------------------
    def _bind_target(self, scope: Scope, target: cst.BaseExpression, kind: str, node: cst.CSTNode,
                     value: cst.BaseExpression | None) -> None:
        for name, index in target_names(target):
            self.stores.add(name)
            b = Binding(name.value, kind, node, value, index, target=name)
            if isinstance(value, cst.Lambda) and index is None:
                b.function = self.function_of.get(value)
                if b.function is None:
                    self._lambda_bindings.setdefault(id(value), []).append(b)
            self._bind(scope, b)

    def _bind(self, scope: Scope, b: Binding) -> None:
        if isinstance(scope, Function) and b.name in scope.globals:
            self.module_scope.bind(b)
        else:
            scope.bind(b)

    def _bind_import(self, scope: Scope, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted_name(alias.name) or ""
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self._bind(scope, Binding(alias.asname.name.value, "import", node, qualified_name=full))
                else:
                    root = full.split(".")[0]
                    self._bind(scope, Binding(root, "import", node, qualified_name=root))
            return
        if node.relative:
            base = "." * len(node.relative) + (dotted_name(node.module) or "" if node.module else "")
        else:
            base = dotted_name(node.module) if node.module else ""
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            self._bind(scope, Binding(local, "import", node, qualified_name=f"{base}.{name}" if base else name))

    def _bind_params(self, fn: Function, params: cst.Parameters) -> None:
        for p in (*params.posonly_params, *params.params):
            self._param(fn, p)
        if isinstance(params.star_arg, cst.Param):
            self._param(fn, params.star_arg)
            fn.star_params.add(params.star_arg.name.value)
        for p in params.kwonly_params:
            self._param(fn, p)
        if params.star_kwarg is not None:
            self._param(fn, params.star_kwarg)
            fn.star_params.add(params.star_kwarg.name.value)

    def _param(self, fn: Function, p: cst.Param) -> None:
        name = p.name.value
        fn.params.append(name)
        fn.param_nodes[name] = p
        if p.default is not None:
            fn.params_with_default.add(name)
        fn.bind(Binding(name, "param", p, target=p.name))

    # -- the walk ---------------------------------------------------------------------------
    def build(self) -> ModuleIndex:
        # Stack entries: (node, parent, field, scope, loop). Children are pushed reversed so
        # that nodes are seen in document order, which the rules rely on for "first" reads.
        stack: list[tuple[cst.CSTNode, cst.CSTNode | None, str, Scope, cst.CSTNode | None]] = [
            (self.module, None, "", self.module_scope, None)
        ]
        parents = self.parents
        while stack:
            node, parent, fname, scope, loop = stack.pop()
            if parent is not None:
                parents[node] = parent
            self.scope_of_node[node] = scope
            inner_scope, inner_loop = scope, loop
            pushed: list[tuple[cst.CSTNode, cst.CSTNode | None, str, Scope, cst.CSTNode | None]] = []

            t = type(node)
            if t is cst.Name:
                if (type(parent), fname) not in _NOT_READ and node not in self.stores:
                    r = Read(node, scope)
                    self.reads.append(r)
                    if isinstance(scope, Function):
                        scope.reads.append(r)
                continue
            if t is cst.FunctionDef or t is cst.Lambda:
                fn = Function(node=node, parent=scope)
                if t is cst.FunctionDef:
                    fn.name = node.name.value
                    if isinstance(scope, ClassInfo):
                        fn.cls = scope
                    b = Binding(fn.name, "def", node, function=fn, target=node.name)
                    self._bind(scope, b)
                self.functions.append(fn)
                self.function_of[node] = fn
                for pending in self._lambda_bindings.pop(id(node), ()):
                    pending.function = fn
                if isinstance(scope, Function):
                    scope.nested.append(fn)
                elif isinstance(scope, ClassInfo):
                    # Methods close over the module, not the class body.
                    fn.parent = scope
                self._bind_params(fn, node.params)
                # Decorators, defaults and annotations run in the enclosing scope; the body in fn.
                for fname2, child in iter_children(node):
                    if fname2 == "body":
                        pushed.append((child, node, fname2, fn, None))
                    elif fname2 == "params":
                        pushed.append((child, node, fname2, scope, loop))
                    else:
                        pushed.append((child, node, fname2, scope, loop))
                if t is cst.Lambda:
                    fn.returns.append(node.body)
                stack.extend(reversed(pushed))
                continue
            if t is cst.ClassDef:
                ci = ClassInfo(node=node, parent=scope, name=node.name.value)
                self._bind(scope, Binding(ci.name, "class", node, target=node.name))
                for fname2, child in iter_children(node):
                    pushed.append((child, node, fname2, ci if fname2 == "body" else scope, loop if fname2 != "body" else None))
                stack.extend(reversed(pushed))
                continue

            if t not in _BINDS:
                pass
            elif t is cst.Call:
                site = CallSite(node, scope, loop)
                self.calls.append(site)
                if isinstance(scope, Function):
                    scope.calls.append(site)
            elif t is cst.Assign:
                for t in node.targets:
                    self._bind_target(scope, t.target, "assign", node, node.value)
            elif t is cst.AnnAssign:
                self._bind_target(scope, node.target, "annassign", node, node.value)
            elif t is cst.AugAssign:
                # The target is read and written: keep it a read, and record the binding.
                if isinstance(node.target, cst.Name):
                    self._bind(scope, Binding(node.target.value, "augassign", node, node.value, target=node.target))
            elif t is cst.For or t is cst.CompFor:
                self._bind_target(scope, node.target, "for", node, node.iter)
            elif t is cst.NamedExpr:
                self._bind_target(scope, node.target, "walrus", node, node.value)
            elif t is cst.WithItem:
                if node.asname is not None:
                    self._bind_target(scope, node.asname.name, "with", node, node.item)
            elif t is cst.Import or t is cst.ImportFrom:
                self._bind_import(scope, node)
            elif t is cst.Global or t is cst.Nonlocal:
                names = {n.name.value for n in node.names}
                if t is cst.Global:
                    scope.globals |= names
                else:
                    scope.nonlocals |= names
            elif t is cst.Return and isinstance(scope, Function) and node.value is not None:
                scope.returns.append(node.value)
            elif t is cst.Assert and isinstance(scope, Function):
                scope.asserts.append(node)
            elif t is cst.ExceptHandler or t is cst.ExceptStarHandler:
                if node.name is not None and isinstance(node.name.name, cst.Name):
                    self._bind(scope, Binding(node.name.name.value, "except", node, target=node.name.name))

            if t in _LOOP_TYPES:
                inner_loop = node
            for fname2, child in iter_children(node):
                # A loop's iterable is evaluated once, outside the loop.
                child_loop = loop if (t is cst.For and fname2 == "iter") else inner_loop
                pushed.append((child, node, fname2, inner_scope, child_loop))
            stack.extend(reversed(pushed))

        return ModuleIndex(
            module=self.module, scope=self.module_scope, functions=self.functions,
            function_of=self.function_of, parents=self.parents, calls=self.calls, reads=self.reads,
            stores=self.stores, scope_of_node=self.scope_of_node,
        )


def build_index(module: cst.Module) -> ModuleIndex:
    return _Builder(module).build()
