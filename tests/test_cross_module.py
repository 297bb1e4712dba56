"""The whole-project index: functions traced from another module are analysed as traced.

The multi-file projects live in fixtures/cross_module/<name>/ with their exact expected
diagnostics in fixtures/cross_module/<name>.expected (JAXFUSE_UPDATE_FIXTURES=1 rewrites
them; read the diff before committing).
"""
from __future__ import annotations

import os
import textwrap
from dataclasses import replace
from pathlib import Path

import libcst as cst
import pytest

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.project.import_graph import analysis_order
from jaxfuse_lint.project.index import ProjectFile, ProjectIndex, build_project
from jaxfuse_lint.project.module_names import ModuleNamer
from jaxfuse_lint.project.prescan import prescan
from jaxfuse_lint.project.summary import Summary, summarize
from jaxfuse_lint.run.runner import check_files, fix_files
from tests.fixture_harness import UPDATE

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "cross_module"
PROJECTS = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))
# The rules whose findings follow a calibration table report their raw pattern here, as in the
# fixture folders (tests/fixture_harness.py): these projects test the routes across modules.
SETTINGS = replace(Settings(), extra=(RAW,))


def files_of(name: str) -> list[Path]:
    return sorted((ROOT / name).rglob("*.py"))


def render(run) -> str:
    lines = []
    for d in run.diagnostics:
        rel = os.path.relpath(d.filename, ROOT).replace(os.sep, "/")
        lines.append(f"{rel}:{d.location.row}:{d.location.column}-{d.end_location.row}:{d.end_location.column} "
                     f"{d.code} {d.message}")
    return "".join(line + "\n" for line in lines)


def test_there_are_projects():
    assert {"trainer", "cyclic", "scripts"} <= set(PROJECTS)


@pytest.mark.parametrize("name", PROJECTS)
def test_exact_diagnostics(name):
    run = check_files(files_of(name), SETTINGS, jobs=1)
    assert run.errors == []
    expected = ROOT / f"{name}.expected"
    actual = render(run)
    if UPDATE:
        expected.write_text(actual)
    assert actual == expected.read_text()


@pytest.mark.parametrize("name", PROJECTS)
def test_order_and_workers_do_not_matter(name):
    expected = (ROOT / f"{name}.expected").read_text()
    for files, jobs in ((files_of(name)[::-1], 1), (files_of(name), 3), (files_of(name)[1:] + files_of(name)[:1], 2)):
        run = check_files(files, SETTINGS, jobs=jobs)
        assert render(run) == expected, (files, jobs)


@pytest.mark.parametrize("name", PROJECTS)
def test_cross_module_findings_need_the_index(name):
    """Checked one file at a time, functions traced only from elsewhere are not flagged."""
    alone = set()
    for f in files_of(name):
        result = check_source(f.read_bytes(), str(f), SETTINGS)
        alone |= {(d.filename, d.location.row, d.code) for d in result.diagnostics}
    run = check_files(files_of(name), SETTINGS, jobs=1)
    together = {(d.filename, d.location.row, d.code) for d in run.diagnostics}
    assert alone < together
    # Every cross-module finding names the other module in its reason.
    for d in run.diagnostics:
        if (d.filename, d.location.row, d.code) not in alone:
            assert "in `" in d.message or "from traced `" in d.message or "in traced `" in d.message, d.message


def test_trainer_details():
    run = check_files(files_of("trainer"), SETTINGS, jobs=1)
    math = [d for d in run.diagnostics if d.filename.endswith("math.py")]
    lines = (ROOT / "trainer" / "ops" / "math.py").read_text().splitlines()
    flagged_functions = set()
    for d in math:
        row = d.location.row
        while not lines[row - 1].lstrip().startswith("def "):
            row -= 1
        flagged_functions.add(lines[row - 1].split("def ")[1].split("(")[0])
    # Traced through the re-export, a fori_loop body, a 2-module call chain and Class.method;
    # not the pure_callback target, not a function only called eagerly, not an untraced method.
    assert flagged_functions == {"normalize", "body", "scale_twice", "apply"}


def test_fix_mode_uses_the_index(tmp_path):
    run = fix_files(files_of("scripts"), SETTINGS, unsafe=True, jobs=1)
    fixed = {Path(o.filename).name: o for o in run.fixes if o.changed}
    # helpers.py has no JAX in it, yet its traced function is rewritten.
    assert "helpers.py" in fixed
    assert "jnp.ones(4)" in fixed["helpers.py"].source
    assert [d.code for d in fixed["helpers.py"].fixed] == ["JF201"]


# -- the parts -------------------------------------------------------------------------------------

def test_prescan_reads_imports_without_parsing():
    text = textwrap.dedent("""\
        import os, pkg.sub as s
        from . import sibling
        from ..up import (a,
            b as bee,  # comment, with a comma
        )
        from .mod import *
        if True:
            from pkg import lazy
        def f():
            import pkg.deep.inner
    """)
    pre = prescan(text, "pkg.sub.mod", False)
    assert {"os", "pkg.sub", "pkg.sub.sibling", "pkg.up", "pkg.up.a", "pkg.up.b", "pkg.sub.mod", "pkg",
            "pkg.lazy", "pkg.deep.inner"} <= pre.imports | {"pkg.sub.mod"}
    assert pre.reexports == {"s": "pkg.sub", "sibling": "pkg.sub.sibling", "a": "pkg.up.a", "bee": "pkg.up.b"}
    # A relative import outside any package resolves to nothing.
    assert prescan("from . import x\n", "script", False).imports == set()


def test_module_names(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "m.py").write_text("")
    (tmp_path / "script.py").write_text("")
    (tmp_path / "not-a-module.py").write_text("")
    namer = ModuleNamer()
    assert namer.name(tmp_path / "pkg" / "sub" / "m.py") == ("pkg.sub.m", False)
    assert namer.name(tmp_path / "pkg" / "sub" / "__init__.py") == ("pkg.sub", True)
    assert namer.name(tmp_path / "script.py") == ("script", False)
    assert namer.name(tmp_path / "not-a-module.py") is None


def _summary(src: str, module: str, is_package: bool = False) -> Summary:
    return summarize(SemanticModel(cst.parse_module(textwrap.dedent(src))), module, is_package)


def test_summary_records_seeds_and_edges():
    s = _summary("""\
        import jax
        from functools import partial
        from pkg import ops
        from .util import helper

        def g(x):
            return ops.inner(x) + local(x)

        def local(x):
            return helper(x)

        def callback_user(x):
            return jax.pure_callback(ops.host, x, x)

        fast = jax.jit(partial(ops.kernel, 3))
        loop = jax.lax.fori_loop(0, 3, ops.body, 0)
    """, "pkg.main")
    assert ("pkg.ops.kernel", "transform", "jax.jit") in s.base
    # lax passes tracers to every positional parameter: the traced module is told so
    # (a function reached through `partial` is not: the partial may bind any of them).
    assert ("pkg.ops.body", "control-flow", "jax.lax.fori_loop\nparams-traced") in s.base
    # A call carries its argument pattern (`calls=1`), which the traced module checks against
    # the callee's signature (model/evidence.py).
    assert s.edges["g"] == (["local"], [("pkg.ops.inner", "called", "pkg.main.g\ncalls=1")])
    assert s.edges["local"] == ([], [("pkg.util.helper", "called", "pkg.main.local\ncalls=1")])
    # Host callbacks do not trace what they are given.
    assert not any(r[0] == "pkg.ops.host" for r in s.base)
    assert "callback_user" not in s.edges or not any(r[0] == "pkg.ops.host" for r in s.edges["callback_user"][1])
    assert Summary.from_json(s.to_json()) == s


def _index(sources: dict[str, str]) -> tuple[ProjectIndex, list[Summary]]:
    files = []
    for module, src in sources.items():
        is_package = module.endswith(".__init__")
        name = module.removesuffix(".__init__")
        files.append(ProjectFile(module, name, is_package, prescan(textwrap.dedent(src), name, is_package)))
    index = ProjectIndex(files)
    sums = [_summary(src, f.module, f.is_package) for f, src in zip(files, sources.values())]
    return index, sums


CHAIN = {
    "app.__init__": "from .core import entry as entry\n",
    "app.core": "def entry(x):\n    return app_helpers.step(x)\nimport app.helpers as app_helpers\n",
    "app.helpers": "def step(x):\n    return last(x)\ndef last(x):\n    return x\ndef cold(x):\n    return x\n",
    "main": "import jax\nimport app\nf = jax.jit(app.entry)\n",
}


def test_fixpoint_follows_reexports_and_chains():
    index, sums = _index(CHAIN)
    for i, s in enumerate(sums):
        index.add_summary(i, s)
    assert index.external(0) == {}
    # jit compiles the route: every function along it carries the compiled marker.
    assert index.external(1) == {"entry": "passed to `jax.jit` in `main`\nparams-traced compiled"}
    assert index.external(2) == {"step": "called from traced `app.core.entry`\ncalls=1 compiled"}
    assert index.external(3) == {}


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]])
def test_fixpoint_does_not_depend_on_arrival_order(order):
    index, sums = _index(CHAIN)
    changed = set()
    for i in order:
        changed |= index.add_summary(i, sums[i])
    assert changed == {1, 2}
    assert [index.external(i) for i in range(4)] == [
        {}, {"entry": "passed to `jax.jit` in `main`\nparams-traced compiled"},
        {"step": "called from traced `app.core.entry`\ncalls=1 compiled"}, {}]


EAGER = {
    "ops": "def scaled(w):\n    return w\ndef late(w):\n    return w\n",
    "train": ("import jax\nimport ops\ndef loss(w):\n    return ops.scaled(w)\ndef loss2(w):\n    return ops.late(w)\n"
              "jac = jax.jacrev(loss)\ng = jax.grad(loss2)\n"),
    "step": "import jax\nimport train\nfast = jax.jit(train.loss2)\n",
}


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 2, 1]])
def test_fixpoint_tells_compiled_routes_from_eager_ones(order):
    """`jax.jacrev`/`jax.grad` trace eagerly; a function they reach is compiled only if some
    route jits it, even when that route is found after the eager one."""
    index, sums = _index(EAGER)
    assert ("ops.late", "called", "train.loss2\ncalls=1") in sums[1].base
    assert ("ops.late", "called", "train.loss2\ncalls=1") not in sums[1].compiled  # eager in train.py alone
    assert "loss2" in sums[1].edges  # ... so its route is kept for a module that jits it
    for i in order:
        index.add_summary(i, sums[i])
    assert index.external(0) == {"scaled": "called from traced `train.loss`\ncalls=1",
                                 "late": "called from traced `train.loss2`\ncalls=1 compiled"}
    assert index.external(1) == {"loss2": "passed to `jax.jit` in `step`\nparams-traced compiled"}


def test_routes_carry_their_calls_and_a_route_with_unknown_calls_drops_them():
    """Every route's calls are checked against the signature: the phrase carries all of them, or
    none when one route's calls are not known (an escaping jitted name may be called anyhow)."""
    sources = {
        "ops": "def kernel(a, b, c):\n    return a\n",
        "old": "import jax\nimport ops\nfast = jax.jit(ops.kernel)\nfast(1.0)\nfast(1.0, b=2)\n",
        "new": "import jax\nimport ops\njax.jit(ops.kernel)(1.0, 2.0, 3.0)\n",
        "lib": "import jax\nimport ops\ndef make():\n    return jax.jit(ops.kernel)\n",
    }
    index, sums = _index({k: sources[k] for k in ("ops", "old")})
    for i, s in enumerate(sums):
        index.add_summary(i, s)
    assert index.external(0)["kernel"].endswith("calls=1|1+b compiled")
    index, sums = _index({k: sources[k] for k in ("ops", "old", "new")})
    for i, s in enumerate(sums):
        index.add_summary(i, s)
    assert "calls=1|1+b|3" in index.external(0)["kernel"]
    index, sums = _index(sources)
    for i, s in enumerate(sums):
        index.add_summary(i, s)
    assert "calls=" not in index.external(0)["kernel"]


def test_external_reason_reads_the_compiled_marker():
    from jaxfuse_lint.model.traced import external_reason

    fn = SemanticModel(cst.parse_module("def f(x, n):\n    return x\n")).index.functions[0]
    r = external_reason(fn, "passed to `jax.jit` in `main`\nparams-traced static=1 compiled")
    assert (r.compiled, r.params_traced, r.static_argnums) == (True, True, frozenset({1}))
    r = external_reason(fn, "called from traced `a.g`")
    assert (r.compiled, r.description) == (False, "called from traced `a.g`")


def test_analysis_order_puts_importers_first():
    # 0 imports 1, 1 imports 2, 3 imports 0; 4 and 5 import each other.
    graph = [{1}, {2}, set(), {0}, {5}, {4}]
    order = analysis_order(graph)
    assert sorted(order) == list(range(6))
    pos = {v: k for k, v in enumerate(order)}
    assert pos[3] < pos[0] < pos[1] < pos[2]


def test_build_project_names_files():
    index = build_project(["a/b.py", "c.py"], ["import c\n", None])
    assert [f.module for f in index.files] == ["b", "c"]
    assert index.graph() == [{1}, set()]
