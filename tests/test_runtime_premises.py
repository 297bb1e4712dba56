"""Recorded facts decide premises (issue 43): `record` keeps, for every function a trace called
(under jit, `eval_shape`, `vmap`, `grad`, a lax loop, a Flax lifted transform), which parameters
were tracers and which were Python values; `check` with the profile then disproves a `traced`
premise every recorded trace contradicts, and records one a trace confirms.

The Flax sample (fixtures/runtime_flax) is recorded once, as a user runs it:
`jaxfuse-lint record -- python -m pytest`."""
from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pytest

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.profile import FORMAT, text_digest
from jaxfuse_lint.engine import check_source
from jaxfuse_lint.runtime.use import with_profile
from tests.conftest import FIXTURES
from tests.test_runtime_record import jaxfuse

SAMPLE = FIXTURES / "runtime_flax"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    pytest.importorskip("flax")
    project = tmp_path_factory.mktemp("flax") / "project"
    shutil.copytree(SAMPLE, project)
    proc = jaxfuse("record", "--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return project, json.loads((project / ".jaxfuse_lint" / "profile.json").read_text())


def _findings(project, *args: str) -> list[dict]:
    proc = jaxfuse("check", "--no-cache", "--output-format", "json", *args, "decoder", cwd=project)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _traced(profile: dict, qualname: str) -> dict:
    (record,) = [t for t in profile["traced"] if t["qualname"] == qualname]
    return record


def test_the_profile_says_what_each_parameter_held_in_every_trace(recorded):
    _, profile = recorded
    layer = _traced(profile, "DecoderLayer.__call__")  # called by the lifted nn.scan, under jax.jit
    assert layer["params"]["carry"]["tracer"] > 0 and layer["params"]["carry"]["python"] == 0
    decode = layer["params"]["decode"]
    assert decode["tracer"] == 0 and decode["python"] > 0 and decode["values"] == ["False"]
    assert decode["where"]["python"] == "tests/test_decoder.py::test_forward"
    # `self` is a Module whose attributes may hold anything: neither a tracer nor a Python value.
    assert layer["params"]["self"]["other"] > 0
    # Called eagerly (`model.init` outside any jit) the decoder's own body is no trace; under
    # `forward`'s jit it is, once.
    assert _traced(profile, "Decoder.__call__")["calls"] == 1


def test_a_flag_every_recorded_trace_saw_as_a_python_bool_is_no_finding(recorded):
    project, _ = recorded
    # The code shows it too since the `traced` premise follows flax's rules (ptraced): `nn.scan`'s
    # `in_axes=nn.broadcast` hands `decode` over as the caller passes it, and the only traced
    # route leaves it at `decode=False`; the recorded run agrees.
    def on_decode(findings):
        return [f for f in findings if f["code"] == "JF402" and "decode" in f["message"]]

    assert not on_decode(_findings(project, "--no-profile", "--preview"))
    assert not on_decode(_findings(project))
    # Not in the preview tier either: the premise is disproved, not merely unproven.
    assert not on_decode(_findings(project, "--preview"))


def test_a_premise_only_a_convention_assumed_is_disproved_by_the_run(recorded):
    project, _ = recorded
    # `Scale.__call__(self, double)`: by the Flax convention its input is a tracer, and nothing in
    # the package shows otherwise (its callers are the tests): `if double:` is an undecided JF402...
    (preview,) = [f for f in _findings(project, "--no-profile", "--preview") if f["code"] == "JF402"]
    traced = next(p for p in preview["premises"] if p["premise"].startswith("traced("))
    assert traced["status"] == "assumed" and "by convention" in traced["source"]
    # ...which the recorded run decides: every trace of `Scale.__call__` saw a Python bool there, so
    # the premise is disproved and nothing is reported, in the preview tier either.
    assert not [f for f in _findings(project, "--preview") if f["code"] == "JF402"]


def test_a_premise_a_recorded_trace_confirms_is_recorded_and_cites_the_test(recorded):
    project, _ = recorded
    # The probe's input is a tracer only by the Flax convention: preview without a run...
    assert not [f for f in _findings(project, "--no-profile") if f["code"] == "JF401"]
    (preview,) = [f for f in _findings(project, "--no-profile", "--preview") if f["code"] == "JF401"]
    assert {p["status"] for p in preview["premises"]} == {"proven", "assumed"}
    # ...reported by default once a recorded trace had a tracer there, citing the test.
    (finding,) = [f for f in _findings(project) if f["code"] == "JF401"]
    traced = next(p for p in finding["premises"] if p["premise"].startswith("traced("))
    assert traced["status"] == "recorded"
    assert "`inputs` was a tracer when `Probe.__call__` was traced (tests/test_decoder.py::test_probe" \
        in traced["source"]


def test_every_kind_of_trace_is_recorded_not_only_jit_entries(tmp_path):
    pytest.importorskip("equinox")
    (tmp_path / "work.py").write_text(textwrap.dedent("""
        import equinox as eqx
        import jax
        import jax.numpy as jnp


        def scaled(x, factor, clip):
            y = x * factor
            return jnp.clip(y, -1, 1) if clip else y


        def step(carry, x):
            return carry + x, x


        x = jnp.ones(3)
        jax.vmap(scaled, in_axes=(0, None, None))(x, 2.0, True)
        jax.grad(lambda v: jnp.sum(scaled(v, 3.0, False)))(x)
        jax.eval_shape(lambda v: scaled(v, 4.0, True), x)
        eqx.filter_eval_shape(scaled, x, 5.0, False)
        jax.lax.scan(step, 0.0, x)
        scaled(x, 1.0, True)  # eager: no trace
    """))
    proc = jaxfuse("record", "--", sys.executable, "work.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((tmp_path / ".jaxfuse_lint" / "profile.json").read_text())
    scaled = _traced(profile, "scaled")
    assert scaled["calls"] == 4  # vmap, grad, eval_shape, equinox's filter_eval_shape; not the eager call
    assert scaled["params"]["x"]["tracer"] == 4
    assert scaled["params"]["factor"]["python"] == 4 and scaled["params"]["factor"]["values"] == ["2.0", "3.0",
                                                                                                    "4.0", "5.0"]
    assert scaled["params"]["clip"]["values"] == ["True", "False"]
    step = _traced(profile, "step")  # the body of an eager lax.scan
    assert step["params"]["carry"]["tracer"] == 1 and step["params"]["x"]["tracer"] == 1


STEP = textwrap.dedent("""\
    import jax
    import jax.numpy as jnp


    def update(x, flag, mask):
        if flag:
            x = x + 1
        if jnp.any(mask):
            x = x * 2
        return x


    @jax.jit
    def step(x, flag, mask):
        return update(x, flag, mask)
""")


def _param(kind: str, values: list[str], types: list[str]) -> dict:
    return {"tracer": 0, "python": 0, "other": 0, kind: 3, "values": values, "types": types,
            "where": {kind: "tests/test_step.py::test_step"}}


def test_a_python_value_disproves_only_what_no_jax_operation_stages(tmp_path):
    """`flag` was False in every recorded trace of `update`: `if flag:` raises nothing. `mask` was a
    NumPy array: `jnp.any(mask)` is staged out under the jit all the same, a tracer."""
    traced = {"file": "m.py", "sha256": text_digest(STEP), "qualname": "update", "line": 5, "calls": 3,
              "where": "tests/test_step.py::test_step",
              "params": {"x": _param("tracer", [], ["DynamicJaxprTracer"]),
                         "flag": _param("python", ["False"], ["bool"]),
                         "mask": _param("python", [], ["ndarray"])}}
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"format": FORMAT, "version": 1, "processes": [], "entries": [], "functions": [],
                                "lines": [], "traced": [traced]}))
    plain = check_source(STEP, "m.py", Settings(select=("JF402",))).diagnostics
    assert [d.location.row for d in plain] == [6, 8]
    settings, _ = with_profile(Settings(select=("JF402",)), str(path))
    assert [d.location.row for d in check_source(STEP, "m.py", settings).diagnostics] == [8]
