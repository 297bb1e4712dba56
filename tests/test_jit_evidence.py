"""JF301/JF302 report the harm that really happens: a recompilation only for a new function
object, a second compilation only with evidence that the function runs again."""
from __future__ import annotations

import re
import textwrap
from dataclasses import replace

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source


def messages(src: str, code: str, preview: bool = False) -> list[str]:
    result = check_source(textwrap.dedent(src), "m.py", replace(Settings(), select=(code,), preview=preview))
    assert not result.errors
    return [d.message for d in result.diagnostics if d.code == code]


HEAD = "import jax\nimport chex\nfrom functools import partial\n\n\ndef loss(p):\n    return p * p\n\n\n"


@pytest.mark.parametrize("setup,callable_,recompiles", [
    ("", "loss", False),
    ("    def body(v):\n        return v\n", "body", False),  # one function, made before the loop
    ("    body = lambda v: v\n", "body", False),
    ("", "jax.grad(loss)", True),
    ("", "jax.vmap(loss)", True),
    ("", "partial(loss)", True),
    ("", "chex.assert_max_traces(loss, 1)", True),  # a new wrapper each time
    ("", "lambda v: loss(v)", True),
])
def test_jf301_says_recompiles_only_for_a_new_function_object(setup, callable_, recompiles):
    src = HEAD + f"def g(xs):\n{setup}    for x in xs:\n        x = jax.jit({callable_})(x)\n    return xs\n"
    (msg,) = messages(src, "JF301", preview=True)
    assert ("compiles again each time" in msg) is recompiles, msg
    assert ("cached" in msg) is not recompiles, msg
    # A recompilation per iteration needs a second iteration, which any loop over `xs` is written for; a new
    # wrapper per iteration (a cache lookup) matters only over many iterations, which `xs` does not show.
    assert len(messages(src, "JF301")) == int(recompiles)
    if not recompiles:
        assert re.search(r"\(preview: assumes the loop on line \d+ runs many times", msg), msg
        stepping = src.replace("for x in xs:", "for _ in range(n):").replace("def g(xs)", "def g(xs, n)")
        assert len(messages(stepping, "JF301")) == 1  # `range(n)` steps a number of times the code does not bound
        few = src.replace("for x in xs:", "for x in (1.0, 2.0, 3.0):")
        assert messages(few, "JF301", preview=True) == []  # three wrappers: disproved, not reported at all


def test_jf301_result_of_an_unknown_call_states_both_outcomes():
    # Whether it compiles again is not shown (the call may return the same function each time): preview only.
    src = HEAD + "def g(xs, reg):\n    for x in xs:\n        x = jax.jit(reg.get('f'))(x)\n"
    assert messages(src, "JF301") == []
    result = check_source(textwrap.dedent(src), "m.py", replace(Settings(), select=("JF301",), preview=True))
    (d,) = result.diagnostics
    assert "if that is a new function" in d.message and "(preview: " in d.message and d.fix is None


@pytest.mark.parametrize("src,count", [
    # factories: compiled once per factory call
    ("def make(k):\n    return jax.jit(lambda v: v * k)\nclass T:\n    def __init__(self, k):\n"
     "        self.f = make(k)\n", 0),
    ("def make(k):\n    return jax.jit(lambda v: v * k)\ndef train(xs, k):\n    f = make(k)\n"
     "    return [f(x) for x in xs]\n", 0),
    ("def make(k):\n    return jax.jit(lambda v: v * k)\ndef sweep(x, ks):\n    return [make(k)(x) for k in ks]\n", 0),
    ("def make(k):\n    return jax.jit(lambda v: v * k)\nC = {}\ndef get(k):\n    if k not in C:\n"
     "        C[k] = make(k)\n    return C[k]\ndef run(x, ks):\n    return [get(k)(x) for k in ks]\n", 0),
    ("def make(k):\n    return jax.jit(lambda v: v * k)\ndef run(x, k):\n    for _ in range(3):\n"
     "        x = make(k)(x)\n    return x\n", 1),
    # called in the same call: once, many, unknown
    ("def once(x):\n    return jax.jit(lambda v: v)(x)\nY = once(1.0)\n", 0),
    ("def test_it():\n    assert jax.jit(lambda v: v)(1.0) == 1.0\n", 0),
    ("def once(x):\n    return jax.jit(lambda v: v)(x)\ndef main():\n    once(1.0)\n"
     "if __name__ == '__main__':\n    main()\n", 0),
    ("def many(x):\n    return jax.jit(lambda v: v)(x)\ndef main():\n    for i in range(3):\n        many(i)\n", 1),
    ("def api(x):\n    return jax.jit(lambda v: v)(x)\n", 1),
])
def test_jf302_reports_only_with_evidence_of_a_second_compilation(src, count):
    assert len(messages("import jax\n" + src, "JF302")) == count


def test_a_bound_method_read_in_the_loop_is_a_new_object_each_time():
    src = ("import jax\nclass S:\n    def update(self, v):\n        return v\n"
           "    @staticmethod\n    def st(v):\n        return v\n"
           "    def run(self, xs):\n        for x in xs:\n            x = jax.jit(self.update)(x)\n"
           "            x = jax.jit(self.st)(x)\n        f = self.update\n"
           "        return [jax.jit(f)(x) for x in xs]\n")
    bound, static, once = messages(src, "JF301", preview=True)
    assert "bound method" in bound and "compiles again each time" in bound
    assert "cached" in static and "cached" in once
    assert "staticmethod of `S`" in static
    # Only the recompiling one is reported by default: the other two only build a wrapper per item of `xs`.
    assert messages(src, "JF301") == [bound]


# -- the premises (issue 40): fresh-callable, same-program, called-repeatedly ------------------------------

def premises(src: str, code: str, filename: str = "m.py", who: str | None = None) -> list[dict[str, tuple[str, str]]]:
    """Every candidate finding of `code` (those the ledger silences and those in the preview tier too):
    claim -> (status, inference); with `who`, JF302's for that function only."""
    import libcst as cst

    from jaxfuse_lint.engine.pipeline import Analysis
    from jaxfuse_lint.rules import all_rules

    rule = next(r for r in all_rules() if r.code == code)
    analysis = Analysis(cst.parse_module(textwrap.dedent(src)), filename, replace(Settings(), select=(code,)))
    found = list(rule.check(analysis.model, analysis.settings))
    return [{p.claim: (p.status, p.inference) for p in v.premises} for v in found
            if who is None or any(p.claim == "called-repeatedly" and p.subject == f"`{who}`" for p in v.premises)]


def test_jf301_one_function_in_a_while_loop_is_a_wrapper_per_step_proven():
    """The JIT documentation's `g_inner_jitted_normal`: the cache hits, a `while` loop steps a number
    of times the code does not bound. Stated as what it is: a new wrapper (cache hit), proven."""
    src = HEAD + "def g(x, n):\n    i = 0\n    while i < n:\n        i = jax.jit(loss)(i)\n    return x + i\n"
    (p,) = premises(src, "JF301")
    assert p == {"fresh-callable": ("proven", "new-wrapper"), "same-program": ("proven", "one-function"),
                 "called-repeatedly": ("proven", "stepping-loop")}
    (msg,) = messages(src, "JF301")
    assert "cached" in msg and "if it is a method" not in msg


def test_jf301_a_module_attribute_is_one_function_not_a_hedge():
    src = ("import jax\nimport jax.numpy as jnp\n\ndef g(x, n):\n    for _ in range(n):\n"
           "        x = jax.jit(jnp.tanh)(x)\n    return x\n")
    (msg,) = messages(src, "JF301")
    assert "a function of the module `jax.numpy`" in msg and "cached" in msg and "if it is a method" not in msg
    unknown = src.replace("jnp.tanh", "solver.update").replace("def g(x, n)", "def g(x, n, solver)")
    assert messages(unknown, "JF301") == []
    (p,) = premises(unknown, "JF301")
    assert p["fresh-callable"][0] == "assumed"


def test_jf301_a_program_per_item_kept_for_reuse_is_disproved():
    src = ("import jax, functools\ndef project(x, kind):\n    return kind.project(x)\n"
           "def build(kinds):\n    out = {}\n    for kind in kinds:\n"
           "        out[kind.name] = jax.jit(functools.partial(project, kind=kind))\n    return out\n")
    (p,) = premises(src, "JF301")
    assert p["same-program"] == ("disproved", "kept-for-reuse")
    assert messages(src, "JF301", preview=True) == []
    # Called in its iteration and dropped, the same partial is reported (the value could be an argument).
    dropped = src.replace("        out[kind.name] = jax.jit(functools.partial(project, kind=kind))\n    return out\n",
                          "        out = jax.jit(functools.partial(project, kind=kind))(out)\n    return out\n")
    (p,) = premises(dropped, "JF301")
    assert p["same-program"] == ("proven", "loop-values-as-arguments")


def test_jf301_few_iterations_disprove_a_wrapper_but_not_a_recompilation():
    wrapper = HEAD + "def g(x):\n    for _ in range(3):\n        x = jax.jit(loss)(x)\n    return x\n"
    (p,) = premises(wrapper, "JF301")
    assert p["called-repeatedly"] == ("disproved", "loop-count")
    fresh = wrapper.replace("jax.jit(loss)", "jax.jit(lambda v: loss(v))")
    (p,) = premises(fresh, "JF301")
    assert p["called-repeatedly"] == ("proven", "loop-count")
    once = fresh.replace("range(3)", "range(1)")
    (p,) = premises(once, "JF301")
    assert p["called-repeatedly"] == ("disproved", "loop-count")


APPLY_ONCE = "import jax\ndef apply_once(x):\n    return jax.jit(lambda v: v * 2 + 1)(x)\n"


def test_jf302_entry_point_only_for_an_uncalled_public_function_of_a_script(tmp_path):
    """The JIT documentation's `apply_once`: a public top-level function of a script that nothing
    calls. That it runs more than once is the rule's stated convention (`entry-point`), kept by default;
    every other unknown count is assumed."""
    (p,) = premises(APPLY_ONCE, "JF302")
    assert p["called-repeatedly"] == ("proven", "entry-point")
    assert p["same-program"] == ("proven", "closes-over-nothing")
    private = APPLY_ONCE.replace("apply_once", "_apply_once")
    (p,) = premises(private, "JF302")
    assert p["called-repeatedly"][0] == "assumed"
    # Called once by a function whose own count is not shown (a rendezvous at the end of `train`): assumed.
    at_the_end = APPLY_ONCE + "def train(x, n):\n    for _ in range(n):\n        x = x + 1\n    return apply_once(x)\n"
    (p,) = premises(at_the_end, "JF302")
    assert p["called-repeatedly"][0] == "assumed"
    assert messages(at_the_end, "JF302") == []
    # ... and where the project shows that `train` runs once: disproved.
    (p,) = premises(at_the_end + "if __name__ == '__main__':\n    train(1.0, 3)\n", "JF302")
    assert p["called-repeatedly"] == ("disproved", "runs-once")
    # A package's function nothing calls: its users' calls, assumed.
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(APPLY_ONCE)
    (p,) = premises(APPLY_ONCE, "JF302", filename=str(package / "ops.py"))
    assert p["called-repeatedly"][0] == "assumed"


def test_jf302_a_function_run_only_under_an_outer_trace_never_compiles_on_its_own():
    src = ("import jax\ndef make_step(model_fn):\n    def step(p, b):\n        return p - model_fn(p, b)\n"
           "    return jax.jit(step)\n"
           "def net(p, b):\n    return jax.jit(lambda q: q * b)(p)\n"
           "STEP = make_step(net)\n")
    (p,) = premises(src, "JF302", who="net")
    assert p["called-repeatedly"] == ("disproved", "runs-under-trace")
    # Also called from host code, per item: its host calls count.
    host = src + "def run(p, bs):\n    return [net(p, b) for b in bs]\n"
    assert premises(host, "JF302", who="net")[0]["called-repeatedly"] == ("proven", "call-frequency")


def test_jf302_what_a_lambda_reads_of_the_call_through_shapes_is_the_same_program():
    """A converter's lambdas read a local computed from the weight's shape (the argument they are given:
    JAX's cache keys on it) and a head count the loop passes unchanged: the same program per shape."""
    src = ("import jax\ndef split(w, heads):\n    d = w.shape[-1] // heads\n"
           "    return jax.jit(lambda x: x[:, :d])(w)\n"
           "def convert(ws, heads):\n    return [split(w, heads) for w in ws]\n")
    (p,) = premises(src, "JF302")
    assert p["same-program"] == ("proven", "same-arguments")
    assert len(messages(src, "JF302")) == 1
    # A head count the loop changes: a different program per call, necessary.
    per_call = src.replace("[split(w, heads) for w in ws]", "[split(w, h) for w, h in zip(ws, heads)]")
    (p,) = premises(per_call, "JF302")
    assert p["same-program"] == ("disproved", "program-per-call")


def test_jf301_a_while_loop_against_a_literal_bound_is_not_a_stepping_loop():
    src = HEAD + "def g(x):\n    i = 0\n    while i < 3:\n        x = jax.jit(loss)(x)\n        i += 1\n    return x\n"
    (p,) = premises(src, "JF301")
    assert p["called-repeatedly"][0] == "assumed"
    fresh = src.replace("jax.jit(loss)", "jax.jit(lambda v: loss(v))")
    (p,) = premises(fresh, "JF301")
    assert p["called-repeatedly"] == ("proven", "loop")


def test_jf302_entry_point_methods_and_defaults(tmp_path):
    """A public method of a public class of a script is an entry point like a public function (its
    users call it); a parameter with a default nothing overrides is one object for the calls that
    leave it out. A private method, a parameter without a default: assumed."""
    method = ("import jax\nclass Evaluator:\n    def score(self, b):\n        def f(v):\n            return v * 2\n"
              "        return jax.jit(f)(b)\n")
    (p,) = premises(method, "JF302")
    assert p["called-repeatedly"] == ("proven", "entry-point")
    (p,) = premises(method.replace("def score", "def _score"), "JF302")
    assert p["called-repeatedly"][0] == "assumed"
    (p,) = premises(method.replace("def score", "def __call__"), "JF302")
    assert p["called-repeatedly"][0] == "assumed"
    default = "import jax\ndef apply(x, k=2.0):\n    return jax.jit(lambda v: v * k)(x)\n"
    (p,) = premises(default, "JF302")
    assert p["same-program"] == ("proven", "defaults")
    assert p["called-repeatedly"] == ("proven", "entry-point")
    (p,) = premises(default.replace("k=2.0", "k"), "JF302")
    assert p["same-program"][0] == "assumed"
    # A call in the project that passes another value: its calls are the evidence, not the default.
    (p,) = premises(default + "def run(x, ks):\n    return [apply(x, k) for k in ks]\n", "JF302")
    assert p["same-program"] != ("proven", "defaults")


def test_jf302_compiling_transform_through_a_name_a_helper_and_an_instance_call():
    """`pm = partial(jax.pmap, ...)` holds a compiling transform; `maybe_jit(fn)` returning `jit(fn)`
    applies one; `obj(x)` calls `__call__`; `nnx.jit` compiles per application, even of one function."""
    base = ("import jax\nfrom functools import partial\nfrom flax import nnx\n"
            "pm = partial(jax.pmap, axis_name='i')\n"
            "def maybe_jit(fn, **kw):\n    if DEBUG:\n        return fn\n    return jax.jit(fn, **kw)\n"
            "def energy(s):\n    return s * s\n")
    for call in ("pm(lambda v: v + 1)(x)", "maybe_jit(lambda v: v + 1)(x)", "nnx.jit(energy)(x)"):
        src = base + f"def step(x):\n    return {call}\n" + "def run(x):\n    for _ in range(9):\n        x = step(x)\n"
        (p,) = premises(src, "JF302")
        assert p["fresh-callable"][0] == "proven", call
        assert p["called-repeatedly"] == ("proven", "call-frequency"), call
    (p,) = premises(base + "def step(x):\n    return jax.jit(energy)(x)\n", "JF302") or [None]
    assert p is None  # one module-level function under `jax.jit`: the cache finds it
    inst = ("import jax\nclass Pipe:\n    def __call__(self, x):\n        return jax.jit(lambda v: v * 2)(x)\n"
            "pipe = Pipe()\nfor _ in range(3):\n    pipe(1.0)\n")
    (p,) = premises(inst, "JF302")
    assert p["called-repeatedly"] == ("proven", "call-frequency")


def test_jf302_a_fresh_callable_as_a_static_argument():
    """Static arguments are keys compared by hash and equality: a lambda or a partial made per call
    is a new key (a compilation per call); a bound method compares equal (silent); another static
    argument the loop changes makes every call a new program anyway (silent)."""
    src = ("import jax\nfrom functools import partial\n"
           "@partial(jax.jit, static_argnames=('f', 'n'))\ndef run(x, f, n=3):\n    return f(x) * n\n"
           "class M:\n    def g(self, v):\n        return v\n"
           "def step(x, m):\n    return run(x, f=ARG)\n"
           "def loop(x, m):\n    for _ in range(9):\n        x = step(x, m)\n    return x\n")
    for arg, expected in (("lambda v: v + 1", "static-argument"), ("partial(abs)", "static-argument"),
                          ("m.g", None), ("abs", None)):
        found = premises(src.replace("ARG", arg), "JF302")
        assert [p["fresh-callable"][1] for p in found] == ([expected] if expected else []), arg
    changing = src.replace("ARG", "lambda v: v + 1").replace("run(x, f=lambda v: v + 1)",
                                                              "run(x, f=lambda v: v + 1, n=k)")
    changing = changing.replace("def step(x, m):", "def step(x, m, k):").replace("step(x, m)", "step(x, m, i)")
    changing = changing.replace("for _ in range(9)", "for i in range(9)")
    (p,) = premises(changing, "JF302")
    assert p["same-program"][0] == "disproved"


def test_jf302_a_branch_decides_whether_the_jit_is_built_not_what_it_compiles():
    """`if not x.is_fully_addressable: pjit(lambda v: v)(x)`: the program is the same whatever the
    test; whether more than one call takes the branch is what the test's values decide: proven by a
    loop that passes the same values, assumed where the calls vary them."""
    src = ("import jax\ndef gather(x, flag):\n    if flag:\n        return jax.jit(lambda v: v)(x)\n    return x\n"
           "def run(xs):\n    return [gather(x, FLAG) for x in xs]\n")
    (p,) = premises(src, "JF302")
    assert p["same-program"] == ("proven", "closes-over-nothing")
    assert p["called-repeatedly"] == ("proven", "call-frequency")
    varying = src.replace("if flag:", "if x.ndim:").replace("gather(x, FLAG)", "gather(x, 1)")
    (p,) = premises(varying, "JF302")
    assert p["same-program"] == ("proven", "closes-over-nothing")
    assert p["called-repeatedly"][0] == "assumed"
    # The transform's options are part of the program: a parameter they read counts like one the callable reads.
    options = ("import jax\ndef put(x, spec):\n    return jax.jit(lambda v: v, out_shardings=spec)(x)\n"
               "def run(xs, specs):\n    return [put(x, s) for x, s in zip(xs, specs)]\n")
    (p,) = premises(options, "JF302")
    assert p["same-program"][0] != "proven"


def test_jf302_a_filtered_jit_compares_pytrees_by_their_contents():
    """`eqx.filter_jit` flattens a `jax.tree_util.Partial` and compares its function (measured: a
    `Partial` of one module-level function, one compilation for five calls); a `functools.partial`
    is a leaf compared by identity (five compilations), and so is a `Partial` of a lambda."""
    src = ("import functools, jax, equinox as eqx\n@eqx.filter_jit\ndef run(f, x):\n    return f(x)\n"
           "def g(a, x):\n    return a * x\n"
           "def step(x, a):\n    return run(ARG, x)\n"
           "def loop(x):\n    for _ in range(9):\n        x = step(x, 2.0)\n")
    for arg, reported in (("jax.tree_util.Partial(g, a)", False), ("functools.partial(g, a)", True),
                          ("jax.tree_util.Partial(lambda v: g(a, v))", True)):
        found = premises(src.replace("ARG", arg), "JF302")
        assert bool(found) is reported, arg
