"""The staged value analysis: `StagedValues`, where TRACED means an abstract tracer derived from
a staged function's arguments (the analysis behind the trace-time hazard rules, JF401-JF403),
and `staged_values`, the one each model keeps."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from jaxfuse_lint.model.flow import PYTHON_TYPES
from jaxfuse_lint.model.instances import instances
from jaxfuse_lint.model.object_fields import ObjectFields
from jaxfuse_lint.model.api import ARRAY_VIEW_ATTRIBUTES, JNP_STATIC_FUNCTIONS, STATIC_ATTRIBUTES, TRANSFORMS
from jaxfuse_lint.model.omnistaging import STATIC_RESULT_FUNCTIONS, omnistaged_function
from jaxfuse_lint.model.staged_parameters import StagedParameters
from jaxfuse_lint.model.staging import staging
from jaxfuse_lint.model.staging_transforms import DIFFERENTIATING
from jaxfuse_lint.model.static_arguments import static_argument
from jaxfuse_lint.model.traced import positional
from jaxfuse_lint.model.values import STATIC, TRACED, UNKNOWN, Kind, combine

if TYPE_CHECKING:
    from jaxfuse_lint.model.scopes import Binding, Function, Scope
    from jaxfuse_lint.model.staging import StagingView

# Methods of arrays (and of `x.at[i]`): on a traced array they give traced arrays.
ARRAY_METHODS = frozenset(
    "all any argmax argmin argpartition argsort astype choose clip compress conj conjugate copy cumprod "
    "cumsum diagonal dot flatten max mean min nonzero prod ptp ravel repeat reshape round searchsorted "
    "sort squeeze std sum swapaxes take trace transpose var view set add multiply divide power get apply "
    "mul __getitem__ __add__ __mul__ __sub__ __truediv__ block_until_ready".split()
)
# Attributes only an array has (a dict or list has none of them).
_ARRAY_ONLY = frozenset({"shape", "ndim", "T", "mT", "reshape", "astype", "at", "dtype"})
# Methods a Python number, list, tuple or dict has not (`x.sum()`): what only an array is read with.
_ARRAY_ONLY_METHODS = frozenset({"sum", "mean", "prod", "std", "var", "argmax", "argmin", "cumsum", "cumprod",
                                 "ravel", "flatten", "squeeze", "clip", "dot", "max", "min", "any", "all"})
_ARRAY_ONLY_OPERATORS = (cst.Subtract, cst.Divide, cst.FloorDivide, cst.Power, cst.MatrixMultiply)
# Omnistaged functions whose result is a tuple or a container (of arrays, or of a pytree).
NOT_AN_ARRAY = frozenset({
    "jax.lax.cond", "jax.lax.switch", "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map",
    "jax.lax.associative_scan", "jax.lax.custom_root", "jax.lax.custom_linear_solve", "jax.lax.platform_dependent",
    "jax.lax.psum", "jax.lax.pmean", "jax.lax.pmax", "jax.lax.pmin", "jax.lax.all_gather", "jax.lax.stop_gradient",
    "jax.lax.optimization_barrier", "jax.device_put", "jax.lax.with_sharding_constraint",
})
# jax functions that take any value (a pytree, a Python number): an argument of theirs is no array.
_ANY_VALUE = frozenset({"jax.numpy.asarray", "jax.numpy.array", "jax.device_put", "jax.lax.stop_gradient",
                        "jax.lax.optimization_barrier", "jax.random.PRNGKey", "jax.random.key"})
# Framework layer classes: what their instances are called with is the layer's input (an array).
_LAYER_ROOTS = ("flax.linen.", "flax.nnx.", "haiku.", "equinox.nn.")


def _is_layer(qn: str | None) -> bool:
    return qn is not None and qn.startswith(_LAYER_ROOTS) and qn.rsplit(".", 1)[-1][:1].isupper()


# NumPy functions that hand an array argument to its own method (`np.sum(x)` runs `x.sum()`,
# `np.flip(x)` indexes it): given a tracer they return a tracer, where every other NumPy function
# converts it (`TracerArrayConversionError`, JF406). Run under `jax.jit` with jax 0.10.2, NumPy 2.
NUMPY_DELEGATING = frozenset("numpy." + n for n in (
    "sum mean max min amax amin prod std var any all cumsum cumprod argmax argmin reshape transpose swapaxes "
    "moveaxis squeeze repeat round around real imag flip searchsorted take_along_axis").split())
# jax modules whose factories return functions that compute with jax (an optimizer's
# `(init, update, get_params)`, a stax layer's `(init_fun, apply_fun)`).
JAX_FACTORIES = ("jax.example_libraries.optimizers.", "jax.example_libraries.stax.", "jax.experimental.optimizers.",
                 "jax.experimental.stax.")
# Transforms whose compiled function returns jax arrays (not equinox's filtered jit, which hands
# non-array outputs back as they are).
_COMPILING_CALLS = frozenset({"jax.jit", "jax.experimental.pjit.pjit", "jax.pmap"})

def _literal_truth(e: cst.BaseExpression) -> bool | None:
    """The truth value of a literal (`True`, `None`, `0`, `"fast"`), else None."""
    if isinstance(e, cst.Name) and e.value in ("True", "False", "None"):
        return e.value == "True"
    if isinstance(e, (cst.Integer, cst.Float, cst.SimpleString)):
        return bool(e.evaluated_value)
    return None


# pytree functions that list the leaves.
TREE_LEAVES = frozenset({"jax.tree_util.tree_leaves", "jax.tree.leaves", "jax.tree_leaves"})


class StagedValues(ObjectFields, StagedParameters):
    """TRACED here means: an abstract tracer derived from the arguments of a staged function.

    Stricter than the general analysis, to keep the rules that use it free of false
    positives: eager transforms (`grad`, `custom_jvp`) give UNKNOWN arguments; `jnp` results
    are TRACED only when computed from TRACED inputs; attributes of a traced pytree
    (`state.step`, `cfg.use_bias`) may be static fields, so they are UNKNOWN; loop variables
    over traced containers (dict keys) are UNKNOWN; `in` tests are UNKNOWN.
    """

    model: "StagingView"

    def binding_kind(self, b: "Binding", owner: "Scope", depth: int = 0) -> Kind:
        if b.kind == "for" and b.value is not None:
            return self._loop_target_kind(b, owner, depth)
        if b.kind in ("except", "with"):
            return UNKNOWN
        return super().binding_kind(b, owner, depth)

    def _loop_target_kind(self, b: "Binding", owner: "Scope", depth: int) -> Kind:
        it = b.value
        if isinstance(it, cst.Call):
            qn = self.model.qn(it.func, owner)
            args = [a.value for a in it.args if a.keyword is None and not a.star]
            if qn == "builtins.range":
                return combine(self.kind(a, owner, depth) for a in args)
            if qn == "builtins.enumerate" and args:
                if b.index == 0:
                    return STATIC
                if b.index == 1:
                    return self._element_kind(args[0], owner, depth)
                return UNKNOWN
            if qn == "builtins.zip" and b.index is not None and b.index < len(args):
                return self._element_kind(args[b.index], owner, depth)
        if b.index is None:
            return self._element_kind(it, owner, depth)
        if self.kind(it, owner, depth) is TRACED and self.is_array(it, owner, depth):
            return TRACED  # `for a, b in pairs`: the items of a traced array's rows
        return UNKNOWN

    def _element_kind(self, it: cst.BaseExpression, scope: "Scope", depth: int) -> Kind:
        """The kind of the items of an iterable: static for static iterables; unknown for a
        traced one (rows of an array are traced, but keys of a dict pytree are not), except the
        leaves of a traced pytree (`tree_leaves(params)`), which are tracers."""
        if isinstance(it, cst.Call) and self.model.qn(it.func, scope) == "builtins.range":
            return combine(self.kind(a.value, scope, depth) for a in it.args)
        if isinstance(it, cst.Call) and self.model.qn(it.func, scope) in TREE_LEAVES:
            tree = positional(it, 0)
            return TRACED if tree is not None and self.kind(tree, scope, depth) is TRACED else UNKNOWN
        if isinstance(it, (cst.Tuple, cst.List)):
            return combine(self.kind(el.value, scope, depth) for el in it.elements)
        k = self.kind(it, scope, depth)
        if k is TRACED and self.is_array(it, scope, depth):
            return TRACED  # the rows of a traced array are tracers (its leading axis is static)
        if self._captured_device_array(it, scope):
            st = staging(self.model)
            if st.omnistaged(scope) and not st.compile_time_eval(it, scope):
                return TRACED  # the rows of a captured jax array are sliced out under the trace
        return STATIC if k is STATIC else UNKNOWN

    def is_array(self, e: cst.BaseExpression, scope: "Scope", depth: int = 0) -> bool:
        """Whether e is known to be an array (not a dict, a list or another pytree): what a jax
        array operation returns, an array method, view or index of an array, arithmetic on one,
        or a name every reaching binding of which is one (a parameter counts when annotated as
        an array, given a shape, or used as one: `x.shape`, `x.T`, `x[:, 0]`)."""
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        if depth > self.MAX_DEPTH:
            return False
        depth += 1
        if isinstance(e, cst.Call):
            qn = m.qn(e.func, scope)
            if qn is not None:
                return omnistaged_function(qn) and qn not in NOT_AN_ARRAY
            if isinstance(e.func, cst.Attribute) and e.func.attr.value in ARRAY_METHODS:
                return self.is_array(e.func.value, scope, depth)
            return False
        if isinstance(e, cst.Attribute):
            return e.attr.value in ("T", "mT", "real", "imag") and self.is_array(e.value, scope, depth)
        if isinstance(e, cst.Subscript):
            return self.is_array(e.value, scope, depth)
        if isinstance(e, cst.BinaryOperation):
            if isinstance(e.operator, (cst.BitOr, cst.Add, cst.Multiply)):
                # `d1 | d2` merges dicts; `a + b`, `a * 2` join or repeat lists: both operands must be arrays
                return self.is_array(e.left, scope, depth) and self.is_array(e.right, scope, depth)
            return self.is_array(e.left, scope, depth) or self.is_array(e.right, scope, depth)
        if isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
            return self.is_array(e.expression, scope, depth)
        if not isinstance(e, cst.Name):
            return False
        found = m.bindings_at(e, scope)
        if found is None or not isinstance(found[0], Function) or not found[1]:
            return False
        owner, bindings = found
        for b in bindings:
            if b.kind == "param":
                if not self._param_is_array(owner, b.name):
                    return False
            elif b.kind in ("assign", "annassign", "walrus") and b.index is None and b.value is not None:
                if not self.is_array(b.value, owner, depth):
                    return False
            elif b.kind in ("assign", "annassign") and b.index is not None and isinstance(b.value, cst.Call):
                # `u, s, vh = jnp.linalg.svd(a)`: jax.numpy and jax.scipy functions return arrays or
                # flat tuples of arrays
                qn = m.qn(b.value.func, owner)
                if qn is None or not qn.startswith(("jax.numpy.", "jax.scipy.")) or not omnistaged_function(qn) \
                        or qn in NOT_AN_ARRAY:
                    return False
            else:
                return False
        return True

    def _param_is_array(self, fn: "Function", name: str, not_a_number: bool = False) -> bool:
        """Whether the body shows parameter `name` is an array: annotated or shaped as one, read as
        one (`x.shape`, `x.T`, `x[:, 0]`, an operand of a jax array operation or a layer), or
        passed one by a call. `not_a_number`: only the uses a Python number has not (`x - 1`,
        `x / 2`, `-x` tell an array from a container, not from a number)."""
        if name in fn.star_params:
            return False
        if self._array_annotated(fn, name):
            return True
        shape = self.model.shapes.param_shape(fn, name)
        if shape is not None and shape.rank != 0:
            return True
        if self._read_as_array(fn, name, not_a_number, 0):
            return True
        return self._passed_an_array(fn, name)

    def _read_as_array(self, fn: "Function", name: str, not_a_number: bool, depth: int) -> bool:
        """Whether fn reads `name` as an array (see `_param_is_array`); with `not_a_number`, also
        through a local computed from it by arithmetic (`y = x - 1` then `y.sum()`)."""
        for read in fn.reads:
            if read.name.value != name or self.model.bindings_at(read.name, fn) is None:
                continue
            parent = self.model.parent(read.name)
            if isinstance(parent, cst.Attribute) and parent.value is read.name and (
                    parent.attr.value in _ARRAY_ONLY or (not_a_number and parent.attr.value in _ARRAY_ONLY_METHODS
                                                         and isinstance(self.model.parent(parent), cst.Call))):
                return True
            if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _ARRAY_ONLY_OPERATORS) and (
                    not not_a_number or isinstance(parent.operator, cst.MatrixMultiply)):
                return True  # a list, tuple or dict has no `-`, `/`, `**`, `@` (a number has no `@`)
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus) and not not_a_number:
                return True
            if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star and \
                    self._array_operand(parent, fn):
                return True
            if isinstance(parent, cst.Subscript) and parent.value is read.name and len(parent.slice) > 1 and any(
                    isinstance(el.slice, cst.Slice) or (isinstance(el.slice, cst.Index) and (
                        isinstance(el.slice.value, cst.Ellipsis) or
                        (isinstance(el.slice.value, cst.Name) and el.slice.value.value == "None")))
                    for el in parent.slice):
                return True
            if not_a_number and depth < 2:
                local = self._arithmetic_target(read.name)
                if local is not None and local != name and self._read_as_array(fn, local, not_a_number, depth + 1):
                    return True
        return False

    def _arithmetic_target(self, node: cst.CSTNode) -> str | None:
        """`y` of `y = x * 2 - 1` for a read of x in the arithmetic: the local it is computed into."""
        m = self.model
        while isinstance(m.parent(node), (cst.BinaryOperation, cst.UnaryOperation)):
            node = m.parent(node)
        assign = m.parent(node)
        if node is None or not isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
            return None
        if isinstance(assign, cst.Assign) and assign.value is node and len(assign.targets) == 1 \
                and isinstance(assign.targets[0].target, cst.Name):
            return assign.targets[0].target.value
        return None

    def _array_operand(self, arg: cst.Arg, fn: "Function") -> bool:
        """Whether a positional argument is an array operand where it is passed: of a jax array
        operation (`jnp.max(x)`, `lax.conv(x, w, ...)`, `jax.nn.relu(x)`), or the input of a framework
        layer (`nn.Dense(8)(x)`, `hk.Linear(10)(x)`, `self.dense(x)` with `self.dense = nn.Dense(8)`)."""
        m = self.model
        call = m.parent(arg)
        if not isinstance(call, cst.Call) or arg not in call.args:
            return False
        if static_argument(m, arg.value, fn):
            return False  # `jnp.arange(n)`, `jnp.zeros(n)`, `random.split(key, n)`: a Python int there
        qn = m.qn(call.func, fn)
        if qn is not None:
            return omnistaged_function(qn) and qn not in NOT_AN_ARRAY and qn not in _ANY_VALUE
        layer = call.func
        if isinstance(layer, cst.Call):  # `nn.Dense(8)(x)`
            return _is_layer(m.qn(layer.func, fn))
        if isinstance(layer, cst.Attribute) and isinstance(layer.value, cst.Name) and fn.cls is not None \
                and fn.params and layer.value.value == fn.params[0]:  # `self.dense(x)`
            values = instances(m).attribute_values(fn.cls).get(layer.attr.value, [])
            return bool(values) and all(isinstance(v, cst.Call) and _is_layer(m.qn(v.func, fn.parent or fn))
                                        for v in values)
        return False

    def _passed_an_array(self, fn: "Function", name: str) -> bool:
        """Whether a call of fn in this module (by its name) passes an array for `name`: a jax
        array operation's result, or a jax or NumPy array bound to a name (`f(jnp.ones(3))`,
        `f(X_TRAIN)`)."""
        m = self.model
        for site in m.index.calls_named(fn.name):
            call = site.call
            if not isinstance(call.func, cst.Name) or any(a.star for a in call.args):
                continue
            if m.function_named(call.func.value, site.scope) is not fn:
                continue
            arg = m.argument_for(call, fn, name)
            if arg is None:
                continue
            if isinstance(arg, cst.Call):
                qn = m.qn(arg.func, site.scope)
                if omnistaged_function(qn) and qn not in NOT_AN_ARRAY:
                    return True
            if m.device_arrays.is_array(arg, site.scope) or m.numpy_arrays.is_array(arg, site.scope):
                return True
        return False

    def _made_by_jax(self, func: cst.BaseExpression, scope: "Scope") -> bool:
        """A name bound (or unpacked) from what a jax library factory returns: the functions of
        `jax.example_libraries.optimizers.adam(...)`, `stax.serial(...)`."""
        if not isinstance(func, cst.Name):
            return False
        found = self.model.lookup(func.value, scope)
        if found is None or len(found[1]) != 1:
            return False
        b = found[1][0]
        return b.kind in ("assign", "annassign") and isinstance(b.value, cst.Call) and (
            self.model.qn(b.value.func, found[0]) or "").startswith(JAX_FACTORIES)

    def _python_truth(self, e: cst.BaseExpression, scope: "Scope") -> bool | None:
        """The truth value of a Python operand where the code shows it: a literal, `not` of one, or
        a parameter every traced call passes the same literal bool (or leaves at its default)."""
        from jaxfuse_lint.model.scopes import Function

        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Not):
            inner = self._python_truth(e.expression, scope)
            return None if inner is None else not inner
        literal = _literal_truth(e)
        if literal is not None:
            return literal
        if not isinstance(e, cst.Name) or not isinstance(scope, Function):
            return None
        found = self.model.bindings_at(e, scope)
        if found is None or found[0] is not scope or not found[1] or any(b.kind != "param" for b in found[1]):
            return None
        # A parameter every route passes the same literal (or leaves at its literal default): the
        # calls of traced code that run fn; another route (a transform, an entry point) says nothing.
        truths = set()
        for r in self.model.traced.reasons.get(scope, ()):
            if r.kind != "called" or not isinstance(r.node, cst.Call) or any(a.star for a in r.node.args):
                return None
            arg = self.model.argument_for(r.node, scope, e.value)
            if arg is None:
                p = scope.param_nodes.get(e.value)
                arg = p.default if p is not None else None
            truth = _literal_truth(arg) if arg is not None else None
            if truth is None:
                return None
            truths.add(truth)
        return truths.pop() if len(truths) == 1 else None

    def _false_on_tracers(self, test: cst.BaseExpression, scope: "Scope", depth: int) -> bool:
        """`isinstance(v, float)` (a Python type), `type(v) is int`, `v is None` where v is a tracer:
        False under the trace."""
        m = self.model
        subject = None
        if isinstance(test, cst.Call) and m.qn(test.func, scope) == "builtins.isinstance" and len(test.args) == 2:
            types = test.args[1].value
            items = [el.value for el in types.elements] if isinstance(types, (cst.Tuple, cst.List)) else [types]
            while any(isinstance(t, cst.BinaryOperation) and isinstance(t.operator, cst.BitOr) for t in items):
                items = [x for t in items for x in ((t.left, t.right) if isinstance(t, cst.BinaryOperation) else (t,))]
            if all(m.qn(t, scope) in PYTHON_TYPES for t in items):
                subject = test.args[0].value
        elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(
                test.comparisons[0].operator, cst.Is):
            left, right = test.left, test.comparisons[0].comparator
            if isinstance(right, cst.Name) and right.value == "None":
                subject = left
            elif isinstance(left, cst.Call) and m.qn(left.func, scope) == "builtins.type" and left.args \
                    and m.qn(right, scope) in PYTHON_TYPES:
                subject = left.args[0].value
        return isinstance(subject, cst.Name) and self.kind(subject, scope, depth) is TRACED

    def jitted_call(self, e: cst.Call, scope: "Scope") -> bool:
        """A call, in staged code, of a function compiled by `jax.jit`/`pjit`/`pmap` (`jax.jit(f)(n)`,
        `g(n)` with `g = jax.jit(f, static_argnums=0)`, a `@jax.jit` function): the compiled call
        is staged into the outer program, so its results are tracers even where its inputs are
        Python values (jit returns arrays)."""
        from jaxfuse_lint.model.scopes import Function

        m = self.model
        if not isinstance(scope, Function):
            return False
        func = e.func
        compiled = False
        if isinstance(func, cst.Call):
            compiled = m.qn(func.func, scope) in _COMPILING_CALLS
        elif isinstance(func, cst.Name):
            found = m.lookup(func.value, scope)
            if found is not None and len(found[1]) == 1:
                b = found[1][0]
                if b.kind in ("assign", "annassign") and b.index is None and isinstance(b.value, cst.Call):
                    compiled = m.qn(b.value.func, found[0]) in _COMPILING_CALLS
                elif b.kind == "def" and b.function is not None:
                    compiled = any(r.kind == "decorator" and r.transform in _COMPILING_CALLS
                                   for r in m.traced.reasons.get(b.function, ()))
        if not compiled:
            return False
        st = staging(m)
        return st.omnistaged(scope) and not st.compile_time_eval(e, scope)

    def _captured_device_array(self, e: cst.CSTNode, scope: "Scope") -> bool:
        """A name read in staged code that holds a concrete jax array bound outside traced code
        (`K = jnp.arange(3)` at module level): any jax operation on it there is staged out."""
        from jaxfuse_lint.model.scopes import Function

        if not isinstance(e, cst.Name) or not isinstance(scope, Function):
            return False
        found = self.model.bindings_at(e, scope)
        if found is None:
            return False
        owner, bindings = found
        if owner is scope or (isinstance(owner, Function) and self.model.is_traced(owner)):
            return False
        return self.model.device_arrays.binding_is_array(bindings, owner)

    def _operates_on_captured_array(self, e: cst.CSTNode, scope: "Scope") -> bool:
        """`K[0]`, `K > 0`, `-K`, `K.sum()` on a captured jax array in staged code: a tracer,
        though K itself is a concrete value (its `.shape`, `bool(K)`, `float(K)` are not)."""
        from jaxfuse_lint.model.scopes import Function

        if isinstance(e, cst.Subscript):
            operands = [e.value]
        elif isinstance(e, cst.BinaryOperation):
            operands = [e.left, e.right]
        elif isinstance(e, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in e.comparisons):
                return False
            operands = [e.left, *(c.comparator for c in e.comparisons)]
        elif isinstance(e, cst.UnaryOperation) and not isinstance(e.operator, cst.Not):
            operands = [e.expression]
        elif isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in ARRAY_METHODS:
            operands = [e.func.value]
        else:
            return False
        if not any(self._captured_device_array(o, scope) for o in operands):
            return False
        st = staging(self.model)
        return isinstance(scope, Function) and st.omnistaged(scope) and not st.compile_time_eval(e, scope)

    def _kind(self, e: cst.CSTNode, scope: "Scope", depth: int) -> Kind:
        if self._operates_on_captured_array(e, scope):
            return TRACED
        if isinstance(e, cst.BooleanOperation) and self.strict:
            # `a and b` is b only where a is truthy (`x.dtype == jnp.float16 and jnp.isinf(x).any()`
            # is a Python False for float32): a tracer on the right is one only by a's value.
            left = self.kind(e.left, scope, depth)
            if left is TRACED:
                return TRACED
            right = self.kind(e.right, scope, depth)
            if right is TRACED:
                truth = False if self._false_on_tracers(e.left, scope, depth) else self._python_truth(e.left, scope)
                if truth is not None:
                    # `isinstance(c, float) or c < 0` with c a tracer (False), `True and flag`, `approx
                    # and jnp.allclose(...)` where every traced call leaves `approx=True`: the right
                    # operand is the value exactly when `and` meets a truthy left (`or`, a falsy one)
                    return TRACED if truth == isinstance(e.operator, cst.And) else STATIC
            return UNKNOWN if right is TRACED else combine((left, right))
        if isinstance(e, cst.Attribute):
            attr = e.attr.value
            if attr not in STATIC_ATTRIBUTES and attr not in ARRAY_VIEW_ATTRIBUTES and self.model.qn(e, scope) is None:
                # A field of a traced pytree may be declared static (flax `pytree_node=False`,
                # `eqx.field(static=True)`): only a static base is known to give a static field,
                # and a record whose class the code shows declares which fields are children.
                field = self.field_kind(e, scope, depth)
                if field is not None:
                    return field
                base = self.kind(e.value, scope, depth)
                return STATIC if base is STATIC else UNKNOWN
        if isinstance(e, cst.Comparison) and all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in e.comparisons):
            return STATIC  # `result is old_result`: object identity is a Python bool, even of tracers
        if isinstance(e, cst.Comparison) and any(isinstance(c.operator, (cst.In, cst.NotIn)) for c in e.comparisons):
            return UNKNOWN  # `"w" in params`: membership in a pytree container is static
        if isinstance(e, cst.Comparison) and any(
                isinstance(x, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                for x in (e.left, *(c.comparator for c in e.comparisons))):
            return STATIC  # `jac == "fwd"`: an option compared with a string (no array is a string)
        if isinstance(e, cst.Comparison) and all(isinstance(c.operator, (cst.Equal, cst.NotEqual))
                                                 for c in e.comparisons) and any(
                isinstance(x, (cst.Tuple, cst.List, cst.Dict)) and not getattr(x, "elements", None)
                for x in (e.left, *(c.comparator for c in e.comparisons))):
            return STATIC  # `xs == ()`: a pytree container compared with an empty one
        return super()._kind(e, scope, depth)

    def _call_kind(self, e: cst.Call, scope: "Scope", depth: int) -> Kind:
        from jaxfuse_lint.model.scopes import Function

        qn = self.model.qn(e.func, scope)
        if qn in STATIC_RESULT_FUNCTIONS:
            return STATIC
        if omnistaged_function(qn) and isinstance(scope, Function) and staging(self.model).omnistaged(scope) \
                and not staging(self.model).compile_time_eval(e, scope):
            return TRACED  # omnistaging: staged out whatever its inputs are
        if self.jitted_call(e, scope):
            return TRACED  # a jitted function called in staged code is staged out too (jax#14666)
        if qn is None and self._made_by_jax(e.func, scope):
            # `opt_init, opt_update, get_params = optimizers.sgd(0.1)`: jax's own functions compute
            # with jax; given a tracer they return tracers (jax#196: `get_params(opt_state)`)
            kinds = [self.kind(a.value, scope, depth) for a in e.args]
            return TRACED if TRACED in kinds else UNKNOWN
        if qn in NUMPY_DELEGATING and e.args and not e.args[0].star and e.args[0].keyword is None:
            # `np.all(x < 0)` runs `(x < 0).all()`: on a tracer, a tracer (numpyro#821)
            return TRACED if self.kind(e.args[0].value, scope, depth) is TRACED else UNKNOWN
        if (qn is not None and qn.startswith("jax.") and qn not in JNP_STATIC_FUNCTIONS
                and not qn.startswith(("jax.tree", "jax.debug", "jax.dtypes"))):
            # A jnp/lax result is derived from the traced arguments only if its inputs are.
            kinds = [self.kind(a.value, scope, depth) for a in e.args]
            return TRACED if TRACED in kinds else UNKNOWN
        if isinstance(e.func, cst.Call) and (transform := self.model.qn(e.func.func, scope)) in TRANSFORMS:
            # `jax.value_and_grad(loss)(params, batch)`, `jax.vmap(f)(x)`: traced in, traced out.
            kinds = [self.kind(a.value, scope, depth) for a in e.args]
            if TRACED in kinds:
                return TRACED
            if transform in DIFFERENTIATING and isinstance(scope, Function) and staging(self.model).omnistaged(scope) \
                    and not staging(self.model).compile_time_eval(e, scope):
                return TRACED  # a derivative computed in staged code is staged out, whatever its inputs
            return UNKNOWN
        if qn is None and isinstance(e.func, cst.Attribute) and e.func.attr.value not in ARRAY_METHODS:
            callee = self.callee(e, scope)
            if callee is not None and callee.returns:
                # `self.helper(x)`, `self.handler.flux(y)`, `model.floating_base()`: the module's method
                # that runs, given these arguments (its object included: a method of a traced pytree
                # that reads a static field returns a Python value, so the object being traced says
                # nothing by itself).
                if not callee.is_lambda and (callee in self.model.traced.reasons or callee.cls is not None):
                    return self._with_call_args(callee, e, scope, depth)
                return super()._call_kind(e, scope, depth)
            # `a.is_traced()`, `model.apply(...)`: a traced pytree may be any object.
            base = super()._call_kind(e, scope, depth)
            return UNKNOWN if base is TRACED else base
        return super()._call_kind(e, scope, depth)


def staged_values(model: "StagingView", strict: bool = False) -> StagedValues:
    """The model's StagedValues analysis (built once per model, kept with it); `strict`: the one
    that takes nothing from conventions (StagedParameters.strict)."""
    key = "_staged_values_strict" if strict else "_staged_values"
    v = model.__dict__.get(key)
    if v is None:
        v = model.__dict__[key] = StagedValues(model)
        v.strict = strict
    return v


__all__ = ["StagedValues", "staged_values"]
