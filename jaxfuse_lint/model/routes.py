"""Routes into tracing, as data: every way a library makes a Python function run under tracing.

A route is found by the canonical qualified name of the callable that opens it
(`jax.jit`, `flax.linen.scan`, `diffrax.ODETerm`). There are five kinds:

* TRANSFORM: takes a function (first argument, or `fun=`/`f=`) and returns a
  transformed one; usable as a decorator, `partial(transform, ...)` or a call.
* DRIVER: calls the functions it is given (at the listed argument positions or
  keywords) while tracing, like lax control flow (`lax.scan`, `hk.fori_loop`,
  `diffrax.ODETerm`, `blackjax.nuts`).
* WRAPPER: returns an object whose attributes (`apply`, `init`) run the wrapped
  function (`hk.transform(f).apply`): the function is traced where those are.
* PARTIAL: binds leading arguments and calls the function later, where the
  partial object is called (`functools.partial`, `jax.tree_util.Partial`).
* MODULE_BASES: classes whose subclasses' `__call__` is what their framework's
  entry points run (`model.apply(variables, x)` runs `Model.__call__`).

Flags say what the route does to the function's arguments (see model/staging_transforms.py):
`stages` (abstract tracers, Python run once per trace), `compiles`, `batches`,
`filtered` (non-array arguments stay Python values). Adding a framework is an
edit of this table; the analysis (model/traced.py) reads it and nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass

# Where a traced function sits among a route's arguments: (position, keyword); None for either
# side that does not apply.
Slot = tuple[int | None, str | None]


@dataclass(frozen=True)
class Route:
    kind: str  # transform | driver | wrapper | partial
    framework: str
    stages: bool = False
    compiles: bool = False
    batches: bool = False
    filtered: bool = False
    # drivers and wrappers: the arguments that hold functions
    slots: tuple[Slot, ...] = ((0, "f"),)
    # drivers: which parameters of the traced function receive tracers (positions); None: every
    # positional parameter without a default (lax's convention), (): none known
    traced_params: tuple[int, ...] | None = None
    # drivers that are loops: the function runs once per iteration (same signature as lax's)
    loop: bool = False
    # drivers: how many positional arguments the driver passes to the function in each slot
    # (parallel to `slots`; OPERANDS: as many as the call's operands, `lax.cond(p, f, g, *ops)`;
    # empty: not known). A parameter past them is not one of the driver's tracers: it has a
    # default or is bound by a partial (`fori_loop(0, n, partial(body, p=3), x)`).
    arity: tuple[int, ...] = ()
    # wrappers: the attributes of the returned object that run the wrapped function, each with
    # how many leading arguments the entry point takes for itself (`apply(params, rng, *args)`)
    entry_attributes: tuple[tuple[str, int], ...] = ()
    # wrappers of wrappers (`without_apply_rng`): offsets are added to the inner wrapper's
    relative: bool = False
    # drivers that build a record of their functions (`optax.GradientTransformation(init, update)`):
    # the attribute named like a slot's keyword (`opt.update`) runs the function in that slot
    fields: bool = False
    # loops: where the initial carry is passed (position, keyword) and which positional parameter of
    # the function receives the carry (`while_loop(cond, body, init)`: parameter 0 of both). Every
    # iteration's carry has the initial one's pytree structure (lax checks it), so its classes too.
    carry: tuple[int, str, int] | None = None


def _t(framework: str, *, stages=False, compiles=False, batches=False, filtered=False) -> Route:
    return Route("transform", framework, stages, compiles, batches, filtered)


def _d(framework: str, *slots: Slot, stages=False, traced_params=None, loop=False, arity=(), fields=False,
       carry=None) -> Route:
    return Route("driver", framework, stages, slots=slots or ((0, "f"),), traced_params=traced_params, loop=loop,
                 arity=arity, fields=fields, carry=carry)


# `Route.arity`: the function gets as many positional arguments as the call has operands.
OPERANDS = -1


def _w(framework: str, *attrs: tuple[str, int], relative: bool = False) -> Route:
    return Route("wrapper", framework, entry_attributes=attrs, relative=relative)


JIT = dict(stages=True, compiles=True)
STAGE = dict(stages=True)

ROUTES: dict[str, Route] = {
    # -- jax ---------------------------------------------------------------------------------
    "jax.jit": _t("jax", **JIT),
    "jax.pmap": _t("jax", **JIT),
    "jax.experimental.pjit.pjit": _t("jax", **JIT),
    "jax.vmap": _t("jax", batches=True),
    "jax.grad": _t("jax"),
    "jax.value_and_grad": _t("jax"),
    "jax.jacfwd": _t("jax"),
    "jax.jacrev": _t("jax"),
    "jax.hessian": _t("jax"),
    "jax.jvp": _t("jax"),
    "jax.vjp": _t("jax"),
    "jax.linearize": _t("jax"),
    "jax.checkpoint": _t("jax", **STAGE),
    "jax.remat": _t("jax", **STAGE),
    "jax.ad_checkpoint.checkpoint": _t("jax", **STAGE),
    "jax.custom_jvp": _t("jax"),
    "jax.custom_vjp": _t("jax"),
    "jax.custom_gradient": _t("jax"),
    "jax.make_jaxpr": _t("jax", **STAGE),
    "jax.eval_shape": _t("jax", **STAGE),
    "jax.named_call": _t("jax"),
    "jax.named_scope": _t("jax"),
    "jax.xla_computation": _t("jax", **STAGE),
    "jax.closure_convert": _t("jax"),
    "jax.experimental.shard_map.shard_map": _t("jax", **STAGE),
    "jax.shard_map": _t("jax", **STAGE),
    "jax.experimental.checkify.checkify": _t("jax"),
    "jax.experimental.jax2tf.convert": _t("jax", **STAGE),
    "jax.experimental.maps.xmap": _t("jax", **STAGE),
    "jax.experimental.jet.jet": _t("jax"),
    "jax.numpy.vectorize": _t("jax", batches=True),
    # `jax.tree_util.Partial(f, ...)` is a pytree-friendly partial: f runs where it is called.
    "jax.tree_util.Partial": Route("partial", "jax"),
    "functools.partial": Route("partial", "python"),
    "jax.lax.fori_loop": _d("jax", (2, "body_fun"), loop=True, arity=(2,), carry=(3, "init_val", 1)),
    "jax.lax.while_loop": _d("jax", (0, "cond_fun"), (1, "body_fun"), loop=True, arity=(1, 1),
                             carry=(2, "init_val", 0)),
    "jax.lax.scan": _d("jax", (0, "f"), loop=True, arity=(2,), carry=(1, "init", 0)),
    "jax.lax.map": _d("jax", (0, "f"), loop=True, arity=(1,)),
    "jax.lax.cond": _d("jax", (1, "true_fun"), (2, "false_fun"), arity=(OPERANDS, OPERANDS)),
    "jax.lax.switch": _d("jax", (1, "branches"), arity=(OPERANDS,)),
    "jax.lax.associative_scan": _d("jax", (0, "fn"), arity=(2,)),
    "jax.lax.custom_root": _d("jax", (0, "f"), (2, "solve"), (3, "tangent_solve"), arity=(1, 2, 2)),
    "jax.lax.custom_linear_solve": _d("jax", (0, "matvec"), (2, "solve"), (3, "transpose_solve"),
                                    arity=(1, 2, 2)),
    "jax.lax.reduce": _d("jax", (2, "computation"), arity=(2,)),
    # -- equinox: filtered transforms (non-array arguments stay static) ------------------------
    "equinox.filter_jit": _t("equinox", filtered=True, **JIT),
    "equinox.filter_pmap": _t("equinox", filtered=True, **JIT),
    "equinox.filter_vmap": _t("equinox", batches=True, filtered=True),
    "equinox.filter_grad": _t("equinox"),
    "equinox.filter_value_and_grad": _t("equinox"),
    "equinox.filter_jvp": _t("equinox"),
    "equinox.filter_vjp": _t("equinox"),
    "equinox.filter_checkpoint": _t("equinox", **STAGE),
    "equinox.filter_eval_shape": _t("equinox", **STAGE),
    "equinox.filter_make_jaxpr": _t("equinox", **STAGE),
    "equinox.filter_custom_jvp": _t("equinox"),
    "equinox.filter_custom_vjp": _t("equinox"),
    "equinox.filter_closure_convert": _t("equinox"),
    "equinox.internal.while_loop": _d("equinox", (0, "cond_fun"), (1, "body_fun"), loop=True, arity=(1, 1),
                                      carry=(2, "init_val", 0)),
    "equinox.internal.scan": _d("equinox", (0, "f"), loop=True, arity=(2,), carry=(1, "init", 0)),
    # -- flax linen: lifted transforms take a function or a Module class ----------------------
    "flax.linen.jit": _t("flax.linen", **JIT),
    "flax.linen.vmap": _t("flax.linen", batches=True),
    "flax.linen.scan": _t("flax.linen"),
    "flax.linen.remat": _t("flax.linen", **STAGE),
    "flax.linen.checkpoint": _t("flax.linen", **STAGE),
    "flax.linen.remat_scan": _t("flax.linen"),
    "flax.linen.grad": _t("flax.linen"),
    "flax.linen.value_and_grad": _t("flax.linen"),
    "flax.linen.jvp": _t("flax.linen"),
    "flax.linen.vjp": _t("flax.linen"),
    "flax.linen.custom_vjp": _t("flax.linen"),
    "flax.linen.named_call": _t("flax.linen"),
    "flax.linen.map_variables": _t("flax.linen"),
    "flax.linen.cond": _d("flax.linen", (1, "true_fun"), (2, "false_fun"), traced_params=()),
    "flax.linen.switch": _d("flax.linen", (1, "branches"), traced_params=()),
    "flax.linen.while_loop": _d("flax.linen", (0, "cond_fn"), (1, "body_fn"), traced_params=()),
    "flax.linen.fori_loop": _d("flax.linen", (2, "body_fun"), traced_params=()),
    # -- flax nnx: graph nodes (Modules) are split off; every other argument is jax.jit's --------
    "flax.nnx.jit": _t("flax.nnx", **JIT),
    "flax.nnx.vmap": _t("flax.nnx", batches=True),
    "flax.nnx.pmap": _t("flax.nnx", **JIT),
    "flax.nnx.shard_map": _t("flax.nnx", **STAGE),
    "flax.nnx.grad": _t("flax.nnx"),
    "flax.nnx.value_and_grad": _t("flax.nnx"),
    "flax.nnx.remat": _t("flax.nnx", **STAGE),
    "flax.nnx.eval_shape": _t("flax.nnx", **STAGE),
    "flax.nnx.custom_vjp": _t("flax.nnx"),
    "flax.nnx.scan": _t("flax.nnx", **STAGE),
    "flax.nnx.cond": _d("flax.nnx", (1, "true_fun"), (2, "false_fun"), traced_params=()),
    "flax.nnx.switch": _d("flax.nnx", (1, "branches"), traced_params=()),
    "flax.nnx.while_loop": _d("flax.nnx", (0, "cond_fun"), (1, "body_fun"), traced_params=()),
    "flax.nnx.fori_loop": _d("flax.nnx", (2, "body_fun"), traced_params=()),
    # -- haiku -------------------------------------------------------------------------------
    "haiku.transform": _w("haiku", ("apply", 2), ("init", 1)),
    "haiku.transform_with_state": _w("haiku", ("apply", 3), ("init", 1)),
    "haiku.without_apply_rng": _w("haiku", ("apply", -1), ("init", 0), relative=True),
    "haiku.vmap": _t("haiku", batches=True),
    "haiku.remat": _t("haiku", **STAGE),
    "haiku.jit": _t("haiku", **JIT),
    "haiku.grad": _t("haiku"),
    "haiku.value_and_grad": _t("haiku"),
    "haiku.named_call": _t("haiku"),
    "haiku.scan": _d("haiku", (0, "f"), loop=True, arity=(2,), carry=(1, "init", 0)),
    "haiku.map": _d("haiku", (0, "f"), loop=True, arity=(1,)),
    "haiku.fori_loop": _d("haiku", (2, "body_fun"), loop=True, arity=(2,), carry=(3, "init_val", 1)),
    "haiku.while_loop": _d("haiku", (0, "cond_fun"), (1, "body_fun"), loop=True, arity=(1, 1),
                           carry=(2, "init_val", 0)),
    "haiku.cond": _d("haiku", (1, "true_fun"), (2, "false_fun"), arity=(OPERANDS, OPERANDS)),
    "haiku.switch": _d("haiku", (1, "branches"), arity=(OPERANDS,)),
    # -- diffrax: vector fields run inside diffeqsolve, which is itself `filter_jit`ted ------
    "diffrax.ODETerm": _d("diffrax", (0, "vector_field"), stages=True, traced_params=(0, 1)),
    "diffrax.ControlTerm": _d("diffrax", (0, "vector_field"), stages=True, traced_params=(0, 1)),
    "diffrax.diffeqsolve": _d("diffrax", (0, "terms"), stages=True, traced_params=(0, 1)),
    # -- optax: init/update run wherever the optimizer is used (usually a jitted step) --------
    "optax.GradientTransformation": _d("optax", (0, "init"), (1, "update"), traced_params=(), fields=True),
    "optax.GradientTransformationExtraArgs": _d("optax", (0, "init"), (1, "update"), traced_params=(),
                                                fields=True),
    "optax.stateless": _d("optax", (0, "f"), traced_params=()),
    "optax.inject_hyperparams": _d("optax", (0, "inner_factory"), traced_params=()),
    # -- blackjax: the log-density is traced inside every kernel step ------------------------
    **{f"blackjax.{alg}": _d("blackjax", (0, "logdensity_fn"), traced_params=(0,))
       for alg in ("nuts", "hmc", "mala", "rmh", "sgld", "sghmc", "meads_adaptation", "window_adaptation",
                   "chees_adaptation", "pathfinder", "meanfield_vi", "elliptical_slice", "ghmc",
                   "dynamic_hmc", "barker_proposal", "mclmc", "orbital_hmc")},
    # -- numpyro: inference algorithms trace the model (and guide) inside their jitted kernels --
    **{name: _d("numpyro", (0, "model"), stages=True, traced_params=())
       for name in ("numpyro.infer.NUTS", "numpyro.infer.HMC", "numpyro.infer.hmc.NUTS", "numpyro.infer.hmc.HMC",
                    "numpyro.infer.SA", "numpyro.infer.sa.SA", "numpyro.infer.BarkerMH",
                    "numpyro.infer.barker.BarkerMH", "numpyro.infer.Predictive", "numpyro.infer.util.Predictive",
                    "numpyro.infer.log_likelihood", "numpyro.infer.util.log_likelihood")},
    **{name: _d("numpyro", (0, "model"), (1, "guide"), stages=True, traced_params=())
       for name in ("numpyro.infer.SVI", "numpyro.infer.svi.SVI")},
    **{name: _d("numpyro", (1, "model"), stages=True, traced_params=())
       for name in ("numpyro.infer.util.initialize_model", "numpyro.infer.initialize_model")},
}

# flax linen's lifted transforms: given a Module class, they return a Module class (`nn.scan(Block,
# ...)`, `nn.remat(Block)`), whose instances run the class's methods under the transform.
LIFTED_CLASS_TRANSFORMS = frozenset(n for n, r in ROUTES.items() if r.framework == "flax.linen" and r.kind == "transform")

# Framework base classes: {canonical name: the methods of an instance that run `__call__`
# (or the method named by `method=`)}. A subclass's `__call__` is traced where an instance is
# called from traced code, or where one of these entry points is.
MODULE_BASES: dict[str, tuple[tuple[str, int], ...]] = {
    "flax.linen.Module": (("apply", 1), ("init", 1), ("init_with_output", 1)),
    "flax.nnx.Module": (),
    "equinox.Module": (),
    "haiku.Module": (),
}


@dataclass(frozen=True)
class FrameworkBodies:
    """The methods of a framework's Module subclasses that the framework runs only under its
    transforms (`model.apply`, `hk.transform`, a filtered jit): traced by default, whether or
    not the module shows the call. Not known to be compiled: that needs a route to a jit."""

    phrase: str  # how a message names the route
    methods: tuple[str, ...] = ("__call__",)
    decorators: tuple[str, ...] = ()  # methods decorated with one of these are bodies too
    all_methods: bool = False  # every method but `__init__` and other dunders (haiku)


FRAMEWORK_BODIES: dict[str, FrameworkBodies] = {
    "flax.linen.Module": FrameworkBodies("flax Module method: traced when the module is applied",
                                         ("__call__", "setup"), ("flax.linen.compact",)),
    "flax.nnx.Module": FrameworkBodies("flax nnx Module `__call__`: traced when the module is called in a "
                                       "transformed step"),
    "equinox.Module": FrameworkBodies("equinox Module `__call__`: traced when the module is called in a "
                                      "transformed function"),
    "haiku.Module": FrameworkBodies("haiku Module method: traced when the transformed function runs",
                                    all_methods=True),
}
# Module bases whose instances' attribute writes in traced methods are not lost side effects:
# state the framework's transforms carry in and out (nnx Variables, linen variables), writes the
# framework refuses (a frozen linen or equinox Module), or facts on a Module object that lives
# only inside one trace (haiku builds its Modules inside the transformed function).
STATEFUL_MODULE_BASES = frozenset({"flax.nnx.Module", "flax.linen.Module", "equinox.Module", "haiku.Module"})
# A function given to one of these wrappers is traced by default, like a Module body.
WRAPPED_BODY_PHRASE = "traced when its `init`/`apply` runs"

# Annotations that say a parameter is an array: a filtered transform (`eqx.filter_jit`) traces
# it (its other parameters may be Python values it keeps static).
ARRAY_ANNOTATIONS = frozenset({"jax.Array", "jax.numpy.ndarray", "jax.typing.ArrayLike", "jaxtyping.Array"})
ARRAY_ANNOTATION_ROOTS = ("jaxtyping.",)  # `Float[Array, "n"]`, `Shaped[Array, "..."]`

# Attribute names through which a framework hands a model's entry point around
# (`TrainState.create(apply_fn=model.apply)`, then `state.apply_fn(...)` in the step).
FORWARDED_ATTRIBUTES = frozenset({"apply_fn", "apply", "model_fn", "forward_fn", "loss_fn"})

# Multiple dispatch: several defs (overloads) under one name, each decorated with the dispatcher;
# a call of the name runs the overload its arguments' types select, so every overload is a
# function the call may run (`@plum.dispatch def simplify(op: Rotate)`, `... (op: Scale)`).
# `functools.singledispatch` registers its overloads with `@base.register` instead.
DISPATCHERS = frozenset({"plum.dispatch", "multipledispatch.dispatch", "functools.singledispatch"})
# Classes whose instances dispatch like the decorators above (`dispatch = plum.Dispatcher()`).
DISPATCHER_CLASSES = frozenset({"plum.Dispatcher", "multipledispatch.Dispatcher"})


def frameworks() -> tuple[str, ...]:
    """The top-level packages of the routes' frameworks besides jax (`flax`, `haiku`...)."""
    return tuple(sorted({n.split(".", 1)[0] for n in (*ROUTES, *MODULE_BASES)} - {"jax", "functools"}))


def transforms() -> frozenset[str]:
    return frozenset(n for n, r in ROUTES.items() if r.kind == "transform")


def drivers() -> dict[str, tuple[Slot, ...]]:
    return {n: r.slots for n, r in ROUTES.items() if r.kind == "driver"}


def names(**flags: bool) -> frozenset[str]:
    """The routes whose flags all match (`names(stages=True)`)."""
    return frozenset(n for n, r in ROUTES.items() if all(getattr(r, k) == v for k, v in flags.items()))


def route(name: str | None) -> Route | None:
    return ROUTES.get(name) if name else None
