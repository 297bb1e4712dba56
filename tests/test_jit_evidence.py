"""JF301/JF302 report the harm that really happens: a recompilation only for a new function
object, a second compilation only with evidence that the function runs again."""
from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source


def messages(src: str, code: str) -> list[str]:
    result = check_source(textwrap.dedent(src), "m.py", replace(Settings(), select=(code,)))
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
    (msg,) = messages(src, "JF301")
    assert ("compiles again each time" in msg) is recompiles, msg
    assert ("cached" in msg) is not recompiles, msg


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
    bound, static, once = messages(src, "JF301")
    assert "bound method" in bound and "compiles again each time" in bound
    assert "cached" in static and "cached" in once
