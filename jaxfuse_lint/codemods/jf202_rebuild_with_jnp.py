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
lambda the expression replaces the read. Unsafe: the array is now computed in
float32 on the device instead of float64 on the host (last-bit differences),
and later changes to the module-level array are no longer part of the story —
passing it as an argument is the other design, left to you.

Dtype condition (why it stays unsafe): as for JF201, NumPy's host result is a strongly typed
array canonicalised from float64/int64, `jnp`'s is computed in float32 without x64 and weakly
typed where it comes from Python scalars.
"""
from __future__ import annotations

import libcst as cst

from jaxfuse_lint.codemods._expressions import in_context
from jaxfuse_lint.codemods._lookups import free_name_nodes
from jaxfuse_lint.codemods._names import jnp_name
from jaxfuse_lint.codemods._statements import assign, insert_before, replace_within, top_of_body
from jaxfuse_lint.codemods.plan import plan
from jaxfuse_lint.codemods.jf201_numpy_to_jnp import SAME_MEANING, SAME_MEANING_SUBSCRIPTS, _consumed_as_array
from jaxfuse_lint.model.scopes import walk

CODE = "JF202"


def build_fix(violation, model, settings):
    read: cst.Name = violation.node
    data = violation.data
    binding, owner = data.get("binding"), data.get("owner")
    fn = model.function_of(read)
    if binding is None or fn is None or not model.is_traced(fn):
        return None
    found = model.lookup(read.value, fn)
    if found is None or len(found[1]) != 1 or found[1][0] is not binding:
        return None
    if binding.kind != "assign" or binding.index is not None or binding.value is None:
        return None
    value = binding.value
    jnp = jnp_name(model, [fn])
    if jnp is None:
        return None
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
    reads = [r for r in fn.reads if r.name.value == read.value]
    if any(uses.uses(r.name, fn).needs_static for r in reads):
        return None  # a read needs the concrete value (an axis, a shape, a Python index): a tracer would break it
    if not all(_consumed_as_array(model, r.name, fn, 0) or _static_read(model, r.name) for r in reads):
        return None
    name = read.value
    if fn.is_lambda:
        if not _consumed_as_array(model, read, fn, 0):
            return None
        return plan(False, f"Build `{name}` with `{jnp.name}` inside the lambda",
                    {read: in_context(model, read, new_value)}, jnp.imports)
    if name in fn.globals or name in fn.nonlocals or name in fn.params:
        return None
    first = top_of_body(fn.node)
    if first is None:
        return None
    return plan(False,
                f"Build `{name}` with `{jnp.name}` inside `{fn.display_name}` instead of capturing the NumPy array",
                {first: insert_before(first, assign(name, new_value))}, jnp.imports)


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
