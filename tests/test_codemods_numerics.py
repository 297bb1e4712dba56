"""Fixed fixtures compute what the originals compute.

For every fixture of a fixable rule that has an expected fix (`<case>.fixed.py`,
`<case>.unsafe.py`), both versions are imported and the functions named in the
fixture's `VERIFY` dict are run on the same seeded random inputs; results must
agree (`allclose`). Convention for fixture modules:

    VERIFY = {"func_name": ["f32[64,2]", "i32[8]", "f32[]", "py:3"], ...}

An argument spec is a dtype abbreviation (f16 f32 f64 i32 i64 u8 bool c64) and a
shape (`[]` is a scalar array), or `py:<literal>` for a Python value. Functions
that are already jitted are called as they are; the others run under `jax.jit`,
except functions given a Python value or marked `"host"` (a first spec), which run
as they are (host code such as loops that call jitted functions). Every top-level function the fix changed must
be covered, directly or through a covered caller. Fixtures without `VERIFY` (the
detection fixtures) get their specs from DETECTION_VERIFY below.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import itertools
import sys
import types
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# Frameworks the route fixtures are written against (not dependencies of this project).
FRAMEWORKS = frozenset({"flax", "haiku", "equinox", "diffrax", "optax", "blackjax"})
FIXABLE = ("JF101", "JF201", "JF202", "JF203", "JF301", "JF302")

_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64", "i8": "int8",
           "u8": "uint8", "u32": "uint32", "bool": "bool", "c64": "complex64"}
_counter = itertools.count()


def fixed_pairs() -> list[tuple[Path, Path]]:
    out = []
    for code in FIXABLE:
        folder = FIXTURES / code
        if not folder.is_dir():
            continue
        for src in sorted(folder.glob("*.py")):
            if src.name.endswith((".fixed.py", ".unsafe.py")):
                continue
            fixed = src.with_name(src.stem + ".fixed.py")
            unsafe = src.with_name(src.stem + ".unsafe.py")
            if fixed.exists():
                out.append((src, fixed))
            if unsafe.exists() and not (fixed.exists() and unsafe.read_text() == fixed.read_text()):
                out.append((src, unsafe))  # (an unsafe result equal to the safe one is not run twice)
    return out


def install_jaxtyping_stub() -> None:
    """Fixtures annotate with jaxtyping; it is not a dependency, and annotations need not work."""
    try:
        import jaxtyping  # noqa: F401
    except ImportError:
        stub = types.ModuleType("jaxtyping")

        class _Any:
            def __getitem__(self, item):
                return self

            def __call__(self, *a, **k):
                return self

        for name in ("Array", "Float", "Int", "Bool", "Shaped", "Float32", "Int32", "Num", "Real", "Complex",
                     "Float16", "Int8", "UInt8"):
            setattr(stub, name, _Any())
        sys.modules["jaxtyping"] = stub


def load_module(path: Path) -> types.ModuleType:
    install_jaxtyping_stub()
    name = f"_jf_fixture_{path.stem.replace('.', '_')}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def make_arg(spec: str, rng: np.random.Generator):
    if spec.startswith("py:"):
        return ast.literal_eval(spec[3:])
    dtype_s, _, rest = spec.partition("[")
    dims = tuple(int(d) for d in rest.rstrip("]").split(",") if d.strip())
    dtype = np.dtype(_DTYPES[dtype_s])
    if dtype == np.bool_:
        return rng.random(dims) > 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 5, size=dims).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    # Positive and away from zero: fixtures take logs and divide.
    return (rng.random(dims) + 0.5).astype(dtype)


def run(fn, specs: list[str], seed: int = 0):
    import jax

    rng = np.random.default_rng(seed)
    host = specs[:1] == ["host"] or any(s.startswith("py:") for s in specs)
    specs = [s for s in specs if s != "host"]
    args = [make_arg(s, rng) for s in specs]
    if host or hasattr(fn, "lower"):
        out = fn(*args)
    else:
        out = jax.jit(fn)(*args)
    if inspect.isgenerator(out):
        out = list(out)
    return jax.tree.map(np.asarray, out)


def assert_same(before, after, where: str) -> None:
    import jax

    leaves_b, tree_b = jax.tree.flatten(before)
    leaves_a, tree_a = jax.tree.flatten(after)
    assert tree_b == tree_a, f"{where}: result structure changed"
    for b, a in zip(leaves_b, leaves_a):
        b, a = np.asarray(b), np.asarray(a)
        assert b.shape == a.shape, f"{where}: shape {b.shape} -> {a.shape}"
        assert b.dtype == a.dtype, f"{where}: dtype {b.dtype} -> {a.dtype}"
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5, err_msg=where)


def changed_functions(before: Path, after: Path) -> set[str]:
    """Top-level names (defs and assignments) whose source differs."""
    def top(path):
        tree = ast.parse(path.read_text())
        out = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out[node.name] = ast.dump(node)
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        out[t.id] = ast.dump(node)
        return out

    a, b = top(before), top(after)
    return {n for n in set(a) | set(b) if a.get(n) != b.get(n)}


def calls_between(path: Path) -> dict[str, set[str]]:
    """Which top-level functions each top-level function calls (by name)."""
    tree = ast.parse(path.read_text())
    out: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.Assign)):
            name = node.name if isinstance(node, ast.FunctionDef) else getattr(node.targets[0], "id", None)
            if name:
                out[name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return out


# Input specs for the detection fixtures (written by the rule authors, without VERIFY), keyed by
# "CODE/file.py". A key may be an expression evaluated in the module ("make_step(8)"); a string
# value says why a changed function cannot be run.
DETECTION_VERIFY: dict[str, dict[str, object]] = {
    "JF101/size_sources.py": {
        "asserted_last_axis": ["f32[5,3]"], "unpacked_quaternion": ["f32[4,6]"], "unpacked_columns": ["f32[5,2]"],
        "literal_matrix": ["f32[4]"], "random_draws": ["u32[2]", "f32[5]"], "creator_with_small_axis": ["f32[5]"],
        "meshgrid_stacks": ["f32[3]", "f32[4]", "f32[5]"], "pairwise_distances": ["f32[5,3]"],
        "helper_shape": ["f32[3]"], "rebound_then_asserted": ["f32[5,2]"],
    },
    "JF202/rebound_jit_capture.py": {"apply": ["f32[4096]"]},
    # The calibrated fixtures (the default tables decide): only `unit_vectors` is reported and fixed.
    "JF101/calibrated.py": {"unit_vectors": ["f32[8,3]"]},
    "JF101/calibrated_preview.py": {"unit_vectors": ["f32[8,3]"]},
    "JF101/calibrated_cpu.py": {"weighted": ["f32[64]", "f32[3]"]},
    "JF101/aliases.py": {"jax_called_np": ["f32[8]"]},
    "JF101/positives_routes.py": {
        "decorated": ["f32[8]"], "decorated_partial": ["f32[8]", "py:2"], "from_import": ["f32[8]"],
        "assigned": ["f32[5,4]"], "Model().apply": ["f32[5,3]"], "loop_body_owner": ["f32[6,3]"],
        "called_from_traced": ["f32[5]"], "contractions": ["f32[6]", "f32[6]"], "min_reduction": ["f32[8,4]"],
    },
    "JF101/sizes.py": {
        "annotated": ["f32[8,3]", "f32[5,2]"], "columns": ["f32[4]", "f32[4]", "f32[4]"],
        "f_sum_jax": ["f32[16,2]"], "sliced": ["f32[6,10]"], "literal_vector": ["f32[3]"],
        "reshaped": "sums of (8, 3, n) over axes 1 and -3 give (8, n) and (3, n), which do not add: detection only",
    },
    "JF201/positives.py": {
        "f_numpy": ["f32[16,2]"], "builders": ["f32[4,6]"], "nested_math": ["f32[5,3]"], "uses_helper": ["f32[4,4]"],
        "loop": ["f32[3,3]"], "grid": ["f32[4,4]"],
    },
    "JF201/calibrated.py": {
        "ramp": ["f32[32,32]"], "weights": ["f32[4096]"], "lookup": ["f32[256]", "i32[256]"],
        "damped": ["f32[8,4096]"], "chosen": ["f32[4096,6]", "i32[4096]"],
    },
    "JF201/routes_graph_call.py": {
        "GraphConv(1000)": ["f32[1000]"],
        "ring": "traced inside `GraphConv.__call__` (compared through `GraphConv(1000)`); run on the host, "
                "NumPy's int64 and jnp's int32 differ by design",
    },
    "JF202/cases.py": {
        "smooth": ["f32[4096]"], "make_step(8)": ["f32[8]"], "method_route().run": ["f32[4096]"],
    },
    "JF203/cases.py": {
        "filter_with_temp": "its rfftn output (n, n//2+1) does not broadcast with the (n, n) k-mesh: "
                            "the function is for detection only and cannot run",
        "while_body": ["f32[5]"], "nested_helper_read": ["f32[4,6]"], "scan_lambda": ["f32[4,3]"],
    },
    # cases.py's loop-input and size-inflating reads decided for target = "cpu".
    "JF203/cases_cpu.py": {"while_body": ["f32[5]"], "scan_lambda": ["f32[4,3]"]},
    "JF301/cases.py": {
        "g_partial": ["f32[3]", "py:3"], "g_lambda": ["f32[3]", "py:3"], "g_normal": ["f32[3]", "py:2"],
        "in_comprehension": ["host", "f32[3,2]"], "pmapped": ["host", "f32[1,1,2]"],
    },
    "JF302/cases.py": {"apply_once": ["f32[4]"]},
    # The measured (H200) and size-premise cases: the shapes their annotations and code say (rows reduced
    # from the 4,194,304 of the annotation: the fixed form computes per row, so any row count checks it).
    "JF101/calibrated_measured.py": {"energy_4m": ["f32[64,2]"]},
    "JF101/calibrated_measured_preview.py": {"energy_4m": ["f32[64,2]"]},
    "JF101/calibrated_size_premises.py": {"stacked": ["f32[16,2]"], "outer": ["f32[16,2]"],
                                          "from_helper": ["f32[16,3]"]},
    # Loop counts from callers, and compiling transforms reached through names and helpers (host calls:
    # `pmap` over one device, `nnx.jit` on arrays).
    "JF301/counts_from_callers.py": {"long_run": ["f32[3]", "py:5"], "open_ended": ["f32[3]", "py:4"]},
    "JF301/own_cache.py": {
        "fit": "takes an nnx Module and a list of batch dicts, which the specs cannot make: the hoisted "
               "`nnx.jit(loss_fn)` is the same call on the same arguments",
        "monitor": "takes a list of per-device chunks, which the specs cannot make: the hoisted `sharded(...)` "
                   "maps the same lambda",
    },
    "JF302/compiling_helpers.py": {"centre": ["host", "f32[1,4]"], "measure": ["host", "f32[4]"]},
    # flax Modules without parameters: bound to empty variables and jitted (flax is a test dependency).
    "JF202/framework_body_compiled_only.py": {"Applied().bind({}).__call__": ["f32[4096]"]},
    "JF202/routes_and_library.py": {"kernel": ["f32[4096]"]},
}


def resolve(module: types.ModuleType, key: str):
    if key.isidentifier():
        return getattr(module, key)
    return eval(key, vars(module))  # a key of the table above


def _root_name(key: str) -> str:
    return key.split("(")[0].split(".")[0]


def specs_for(src: Path, module: types.ModuleType):
    verify = getattr(module, "VERIFY", None)
    if verify is None:
        verify = DETECTION_VERIFY.get(f"{src.parent.name}/{src.name}")
    return verify


PAIRS = fixed_pairs()


@pytest.mark.parametrize("src,fixed", PAIRS, ids=[f"{s.parent.name}/{f.name}" for s, f in PAIRS])
def test_fixed_fixture_computes_the_same(src, fixed):
    try:
        before, after = load_module(src), load_module(fixed)
    except ModuleNotFoundError as exc:
        # Route fixtures are small flax/haiku/equinox programs; those frameworks are not
        # dependencies (their diagnostics and fix text are checked by test_fixtures.py).
        if exc.name and exc.name.split(".")[0] in FRAMEWORKS:
            pytest.skip(f"{src.name} needs {exc.name}, which is not installed")
        raise
    changed = {n for n in changed_functions(src, fixed) if callable(getattr(before, n, None))}
    verify = specs_for(src, before)
    assert verify is not None, f"{src.name} has a fix but no input specs: add VERIFY (or a DETECTION_VERIFY entry)"
    compared = set()
    for key, specs in verify.items():
        if isinstance(specs, str):
            compared.add(key)  # documented as not runnable
            continue
        out_b = run(resolve(before, key), specs)
        out_a = run(resolve(after, key), specs)
        assert_same(out_b, out_a, f"{fixed.name}::{key}")
        compared.add(_root_name(key))
    # A changed helper is covered when a compared function calls it.
    graph = calls_between(src)
    covered = set(compared)
    grew = True
    while grew:
        grew = False
        for name in list(covered):
            for callee in graph.get(name, ()):
                if callee not in covered:
                    covered.add(callee)
                    grew = True
    missing = changed - covered
    assert not missing, f"the specs for {src.name} do not exercise the changed {sorted(missing)}"


def test_every_fix_fixture_declares_verify():
    """Fixtures written for the fixes carry their own input specs."""
    missing = []
    for src, fixed in PAIRS:
        if src.name.startswith("fix_") and not hasattr(load_module(src), "VERIFY"):
            missing.append(src.name)
    assert not missing, missing


def test_harness_detects_a_wrong_fix(tmp_path):
    """The comparison is not vacuous: a fix that changes a value is caught."""
    src = tmp_path / "case.py"
    head = "import jax.numpy as jnp\nVERIFY = {'f': ['f32[4,2]']}\n\ndef f(x):\n"
    src.write_text(head + "    return jnp.sum(x, axis=-1)\n")
    bad = tmp_path / "case.fixed.py"
    bad.write_text(head + "    return x[..., 0] + x[..., 0]\n")
    before, after = load_module(src), load_module(bad)
    with pytest.raises(AssertionError):
        assert_same(run(before.f, ["f32[4,2]"]), run(after.f, ["f32[4,2]"]), "case")
