"""JF202 (unsafe): rebuild a captured NumPy array with `jax.numpy` inside the traced function.

    K = np.fft.fftfreq(4096)                   K = np.fft.fftfreq(4096)

    @jax.jit                             ->    @jax.jit
    def smooth(x):                             def smooth(x):
        return x * jnp.exp(-K**2)                  K = jnp.fft.fftfreq(4096)
                                                   return x * jnp.exp(-K**2)

Only when the captured array is built by NumPy functions that `jax.numpy` has
with the same meaning (JF201's table) from names the traced function can see
unchanged (imports, module constants, single-binding locals of an enclosing
function), and every read of it in the function works on a traced array. In a
lambda the expression replaces the read (one read only: a second would compute it
twice). Unsafe: the array is now computed in float32 on the device instead of
float64 on the host (last-bit differences), and passing it as an argument is the
other design, left to you.

Whole or not at all: the fix rebuilds every NumPy array the function captures (and
those arrays are built from: `DAMP = np.exp(-K**2)` brings `K` along, in the order
they are bound), and every one of their diagnostics offers that same fix. When one of
them cannot be rebuilt, none is: rebuilding some would leave the function with its
constants and the kernels that rebuild the others.

Dtype condition (why it stays unsafe): as for JF201, NumPy's host result is a strongly typed
array canonicalised from float64/int64, `jnp`'s is computed in float32 without x64 and weakly
typed where it comes from Python scalars.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.codemods._expressions import in_context
from jaxfuse_lint.codemods._lookups import document_order, free_name_nodes
from jaxfuse_lint.codemods._names import jnp_name
from jaxfuse_lint.codemods._statements import assign, insert_before, replace_within, top_of_body
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.codemods.jf201_numpy_to_jnp import SAME_MEANING, SAME_MEANING_SUBSCRIPTS, _consumed_as_array
from jaxfuse_lint.model.captures import captured_attributes, captured_mixed_arrays, captured_reads
from jaxfuse_lint.model.scopes import Binding, Function, Scope, walk

CODE = "JF202"

UNSAFE = ("unsafe: `jnp` computes {it} in float32 on the device where NumPy computed {it} in float64 on the "
          "host (rounded to float32 when captured): values can differ in the last bits, and `jnp` results of "
          "Python scalars are weakly typed where NumPy's are not")


def build_fix(violation, model, settings):
    read: cst.Name = violation.node
    fn = model.function_of(read)
    if violation.data.get("binding") is None or fn is None or not model.is_traced(fn):
        return None
    reads = _captured(model, fn)
    if reads is None:
        return None
    jnp = jnp_name(model, [fn])
    if jnp is None:
        return None
    # Every array the function captures, and the arrays their expressions read, transitively.
    rebuilt: dict[str, tuple[Binding, cst.BaseExpression]] = {}
    queue = [(r.name.value, r.owner, r.bindings) for r in reads]
    brought: list[str] = []
    while queue:
        name, owner, bindings = queue.pop(0)
        if name in rebuilt:
            continue
        found = _rebuild(model, name, owner, bindings, fn, jnp)
        if found is None:
            return None
        binding, value = found
        rebuilt[name] = (binding, value)
        for n in free_name_nodes(binding.value):
            at_owner = model.lookup(n.value, owner)
            if n.value in rebuilt or at_owner is None or not model.numpy_arrays.binding_is_array(at_owner[1],
                                                                                                   at_owner[0]):
                continue
            if fn.is_lambda:
                return None  # a lambda has no statement to rebuild it in before the one that reads it
            brought.append(n.value)
            queue.append((n.value, at_owner[0], at_owner[1]))
    read_names = [name for name in rebuilt if name not in brought]
    if fn.is_lambda:
        replacements = {}
        for r in reads:
            if sum(1 for other in reads if other.name.value == r.name.value) > 1:
                return None  # two reads: the expression would be computed twice
            if not _consumed_as_array(model, r.name, fn, 0):
                return None
            replacements[r.name] = in_context(model, r.name, rebuilt[r.name.value][1])
        return plan(False, f"Build {_names(read_names)} with `{jnp.name}` inside the lambda; "
                           + UNSAFE.format(it=_it(rebuilt)), replacements, jnp.imports)
    first = top_of_body(fn.node)
    if first is None:
        return None
    order = document_order(model)
    statements = [assign(name, value)
                  for name, (binding, value) in sorted(rebuilt.items(), key=lambda item: order[item[1][0].node])]
    title = f"Build {_names(read_names)}"
    if brought:
        title += f" (and {_names(brought)}, which {'it is' if len(read_names) == 1 else 'they are'} built from)"
    return plan(False, f"{title} with `{jnp.name}` inside `{fn.display_name}`; " + UNSAFE.format(it=_it(rebuilt)),
                {first: insert_before(first, *statements)}, jnp.imports)


def _names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" and {quoted[-1]}"


def _it(rebuilt: dict) -> str:
    return "it" if len(rebuilt) == 1 else "them"


def _captured(model, fn: Function) -> list | None:
    """The reads of NumPy arrays JF202 reports in `fn`; None when one of the arrays it captures
    is of a kind no fix rebuilds (a name bound to NumPy and jax arrays on different paths,
    `self.table`)."""
    if any(c.fn is fn for c, _, _ in captured_mixed_arrays(model, "numpy")):
        return None
    if any(a.fn is fn for a in captured_attributes(model, "numpy")):
        return None
    return [c for c in captured_reads(model, model.numpy_arrays.binding_is_array) if c.fn is fn]


def _rebuild(model, name: str, owner: Scope, bindings: list[Binding], fn: Function,
             jnp) -> tuple[Binding, cst.BaseExpression] | None:
    """The one binding of `name` in `owner` and its value written with `jnp`, if `fn` can rebuild
    it under the same name: the names it reads mean the same inside `fn`, nothing changes it in
    place, and every read of it in `fn` takes a traced array."""
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    found = model.lookup(name, fn)
    if found is None or found[0] is not owner or len(found[1]) != 1 or found[1][0] is not binding:
        return None
    if binding.kind != "assign" or binding.index is not None or binding.value is None:
        return None
    value = binding.value
    new_value = _as_jnp(model, value, owner, jnp)
    if new_value is None:
        return None
    # The names the expression reads must mean the same inside fn.
    for n in free_name_nodes(value):
        if n.value == "<scope>":
            return None
        at_owner, at_fn = model.lookup(n.value, owner), model.lookup(n.value, fn)
        if (at_owner is None) != (at_fn is None):
            return None
        if at_owner is not None and (at_owner[0] is not at_fn[0] or len(at_owner[1]) != 1 and
                                     any(b.kind not in ("import", "def") for b in at_owner[1])):
            return None
    uses = model.static_uses
    if uses.name_uses([binding], owner).mutated:
        return None  # changed in place after it is built: not a constant `jnp` could rebuild
    reads = [r for r in fn.reads if r.name.value == name]
    if any(uses.uses(r.name, fn).needs_static for r in reads):
        return None  # a read needs the concrete value (an axis, a shape, a Python index): a tracer would break it
    if not all(_consumed_as_array(model, r.name, fn, 0) or _static_read(model, r.name) for r in reads):
        return None
    if not fn.is_lambda and (name in fn.globals or name in fn.nonlocals or name in fn.params):
        return None
    return binding, new_value


def _static_read(model, name: cst.Name) -> bool:
    from jaxfuse_lint.model.captures import static_use

    return static_use(model, name)


def _as_jnp(model, value, scope, jnp):
    mapping = {}
    saw_numpy = False
    for n in walk(value):
        if isinstance(n, cst.Call):
            qn = model.qn(n.func, scope)
            if qn is None:
                if isinstance(n.func, cst.Attribute) and n.func.attr.value in ("reshape", "astype", "T", "transpose"):
                    continue
                return None  # a call of something we cannot vouch for (np.load, user code)
            if qn.startswith("numpy."):
                if not model.numpy_arrays.is_array(n, scope):
                    continue
                if qn not in SAME_MEANING:
                    return None
                mapping[n.func] = jnp.attr(qn[len("numpy."):])
                saw_numpy = True
            elif not qn.startswith(("builtins.len", "builtins.int", "builtins.float", "math.")):
                return None
        elif isinstance(n, cst.Subscript):
            qn = model.qn(n.value, scope)
            if qn is not None and qn.startswith("numpy."):
                if qn not in SAME_MEANING_SUBSCRIPTS:
                    return None
                mapping[n.value] = jnp.attr(qn[len("numpy."):])
                saw_numpy = True
        elif isinstance(n, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            return None
    if not saw_numpy:
        return None
    return replace_within(value, mapping)
