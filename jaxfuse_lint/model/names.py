"""Name resolution: which binding a name refers to, and the qualified name of an expression.

Resolution follows Python's rules closely enough for linting: function scopes
chain outward, class bodies are skipped from inside methods, names bound
nowhere are builtins. It is flow-insensitive: a name bound anywhere in a scope
belongs to that scope (which is also what Python's compiler decides).
"""
from __future__ import annotations

import builtins

import libcst as cst

from jaxfuse_lint.model.scopes import Binding, ClassInfo, Function, Scope

_BUILTINS = frozenset(dir(builtins))


class NameResolver:
    def __init__(self, module_scope: Scope, jax_modules: tuple[str, ...]) -> None:
        self.module_scope = module_scope
        self.jax_roots = frozenset(jax_modules) | {"jax"}
        self._qn_cache: dict[tuple[int, int], str | None] = {}
        # (name, id of the scope that binds it) -> its qualified name: a name imported in many
        # places of one scope was resolved anew at each read (quadratic in a long module).
        self._name_qn: dict[tuple[str, int], str | None] = {}
        self._aliases: dict[str, str | None] = {}  # module_alias, per module: asked once per fix

    def lookup(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        """The innermost scope that binds `name`, seen from `scope`, and its bindings there."""
        s: Scope | None = scope
        first = True
        while s is not None:
            if isinstance(s, Function) and name in s.globals:
                s = self.module_scope
            if isinstance(s, ClassInfo) and not first:
                s = s.parent  # class bodies are invisible to the functions inside them
                continue
            bindings = s.bindings.get(name)
            if bindings:
                return s, bindings
            first = False
            s = s.parent
        return None

    def canonical(self, qualified: str) -> str:
        """Rewrite a configured JAX root (a fork, a vendored copy) to `jax`."""
        root, _, rest = qualified.partition(".")
        if root in self.jax_roots and root != "jax":
            return "jax" + ("." + rest if rest else "")
        return qualified

    def qualified_name(self, expr: cst.CSTNode, scope: Scope) -> str | None:
        """`jnp.sum` -> `jax.numpy.sum`; `np.fft.fftfreq` -> `numpy.fft.fftfreq`; None if not an import."""
        key = (id(expr), id(scope))
        if key in self._qn_cache:
            return self._qn_cache[key]
        result = self._qualified_name(expr, scope)
        self._qn_cache[key] = result
        return result

    def _qualified_name(self, expr: cst.CSTNode, scope: Scope) -> str | None:
        if isinstance(expr, cst.Name):
            found = self.lookup(expr.value, scope)
            if found is None:
                return f"builtins.{expr.value}" if expr.value in _BUILTINS else None
            owner, bindings = found
            key = (expr.value, id(owner))
            if key not in self._name_qn:
                self._name_qn[key] = self._imported_name(bindings)
            return self._name_qn[key]
        if isinstance(expr, cst.Attribute):
            base = self.qualified_name(expr.value, scope)
            if base is None or base.startswith("builtins."):
                return None
            return f"{base}.{expr.attr.value}"
        return None

    def _imported_name(self, bindings: list[Binding]) -> str | None:
        """The qualified name a name bound by BINDINGS stands for: one import's, else None."""
        imports = [b for b in bindings if b.kind == "import"]
        if len(imports) != len(bindings) or not imports:
            return None
        names = {b.qualified_name for b in imports}
        if len(names) != 1:
            return None
        qn = names.pop()
        if not qn or qn.startswith("."):
            return None
        return self.canonical(qn)

    def is_jax(self, qn: str | None, *prefixes: str) -> bool:
        return qn is not None and any(qn == p or qn.startswith(p + ".") for p in prefixes)

    def module_alias(self, module: str) -> str | None:
        """The module-level name bound to `import module as X` / `from a import b as X`, if any."""
        if module not in self._aliases:
            self._aliases[module] = next((
                name for name, bindings in self.module_scope.bindings.items()
                if len(bindings) == 1 and bindings[0].kind == "import"
                and self.canonical(bindings[0].qualified_name or "") == module), None)
        return self._aliases[module]


def canonical_short(qualified: str) -> str:
    """The conventional short spelling of a canonical name (`jax.numpy.sum` -> `jnp.sum`)."""
    for long, short in (("jax.numpy.", "jnp."), ("jax.lax.", "lax."), ("numpy.", "np.")):
        if qualified.startswith(long):
            return short + qualified[len(long):]
    return qualified


def dotted(node: cst.CSTNode) -> str | None:
    """`np.linalg.norm` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def as_written(node: cst.CSTNode, qualified: str, same_name: bool = False) -> str:
    """How the code spells a callee or transform, for messages: `np.sum` under `import jax.numpy
    as np`, `onp.ones`, `jit` after `from jax import jit`. `node` is the callee expression, a
    call (its callee), or a decorator (`@partial(jax.jit, ...)` names `jax.jit`: the first
    dotted name in it that ends like `qualified`). `same_name`: only a spelling that ends like
    `qualified` (where `node` may be another call than the callee named). Anything else: the
    canonical short name."""
    if isinstance(node, cst.Decorator):
        expr = node.decorator
        last = qualified.rsplit(".", 1)[-1]
        candidates = [expr]
        if isinstance(expr, cst.Call):
            candidates += [expr.func] + [a.value for a in expr.args if a.keyword is None]
        for c in candidates:
            text = dotted(c)
            if text is not None and text.rsplit(".", 1)[-1] == last:
                return text
        return canonical_short(qualified)
    if isinstance(node, cst.Call):
        node = node.func
    text = dotted(node)
    if text is None or (same_name and text.rsplit(".", 1)[-1] != qualified.rsplit(".", 1)[-1]):
        return canonical_short(qualified)
    return text
