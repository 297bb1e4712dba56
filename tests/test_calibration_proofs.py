"""The verifier's figures and the rules' tables agree on the fixture proofs (fixtures/proofs/).

Each proof is a `verify BEFORE --against AFTER` command. Compiled for the default target (XLA:GPU,
H100, deviceless), its figures get the verdict the calibration tables give their variants
(core/calibration.verdict); the rule whose finding the proof is about reports the before version
in the default tier exactly when that verdict is "harm".

A table's verdict depends on sizes the source of a proof does not state (its `--arg` specs do), so
the rule is told them as a recorded run would tell it (`check --profile`: the entry's signature).
Where the rule still cannot derive a size it needs, the finding is in the preview tier, saying it
depends on the size: PREVIEW_ONLY lists those proofs and why.
"""
from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest

pytest.importorskip("jax")

from jaxfuse_lint.core.calibration import Figures, verdict  # noqa: E402
from jaxfuse_lint.core.config import Settings  # noqa: E402
from jaxfuse_lint.core.profile import FileFacts, text_digest  # noqa: E402
from jaxfuse_lint.engine import check_source  # noqa: E402
from jaxfuse_lint.model.runtime_facts import RuntimeFacts  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "fixtures" / "proofs"


def proofs() -> list[tuple[Path, str, str, list[str], dict[str, str]]]:
    """(file, before, after, --arg specs, --static values) of every `--against` proof."""
    out = []
    for path in sorted(PROOFS.glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        for command in doc.replace("\\\n", " ").splitlines():
            if not command.strip().startswith("jaxfuse-lint verify"):
                continue  # prose (an apostrophe is no quotation)
            words = shlex.split(command.strip())
            if words[:2] != ["jaxfuse-lint", "verify"] or "--against" not in words or "--call" in words:
                continue
            before = words[2].rpartition("::")[2]
            after = words[words.index("--against") + 1].rpartition("::")[2]
            specs = [words[i + 1] for i, w in enumerate(words) if w == "--arg"]
            static = dict(words[i + 1].split("=", 1) for i, w in enumerate(words) if w == "--static")
            out.append((path, before, after, specs, static))
    return out


PROOF_CASES = proofs()


def _function_rows(source: str, name: str) -> range:
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return range(start, (node.end_lineno or node.lineno) + 1)
    raise AssertionError(name)


_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i32": "int32",
           "i64": "int64", "bool": "bool", "c64": "complex64"}

def _recorded(source: str, name: str, specs: list[str], static: dict[str, str]) -> RuntimeFacts:
    """What a recorded run of `name(*specs)` would tell the linter: the entry's signature."""
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    params = [a.arg for a in node.args.args if a.arg not in static]
    args = []
    for param, spec in zip(params, specs):
        dtype, _, dims = spec.rstrip("]").partition("[")
        args.append({"name": param, "dtype": _DTYPES.get(dtype, dtype), "weak_type": False,
                     "shape": [int(d) for d in dims.split(",")] if dims else []})
    line = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    entry = {"qualname": name, "line": line, "api": "jax.jit",
             "signatures": [{"args": args, "static": dict(static)}]}
    return RuntimeFacts(FileFacts(text_digest(source), entries=[entry]))


def _figures(measurement) -> Figures:
    return Figures(measurement.kernels.total, measurement.kernels.launches_per_run, measurement.temp_bytes,
                   measurement.folded_constant_bytes)


@pytest.mark.parametrize("path,before,after,specs,static", PROOF_CASES,
                         ids=[f"{p.stem}:{b}" for p, b, *_ in PROOF_CASES])
def test_the_rule_reports_a_proof_exactly_where_its_figures_show_harm(path, before, after, specs, static):
    from jaxfuse_lint.verify import verify_pair
    from jaxfuse_lint.verify.backend import select
    from jaxfuse_lint.verify.shapes import parse_static_value

    if not select("gpu").deviceless:
        pytest.skip("no XLA:GPU compiler here (jax's CUDA plugin)")
    source = path.read_text()
    rows = _function_rows(source, before)

    def findings(settings: Settings) -> list:
        checked = check_source(source, str(path), settings, runtime=_recorded(source, before, specs, static))
        return [d for d in checked.diagnostics if d.code.startswith(("JF1", "JF2")) and d.location.row in rows]

    found = findings(Settings())
    result = verify_pair(source, source, before, specs, {k: parse_static_value(v) for k, v in static.items()},
                         filename=str(path), after_func_name=after, target="gpu")
    assert result.verdict != "error", result.error
    codes = sorted({d.code for d in found})
    # The verdict as the rule's own table gives it (one launch saved is harm for some rules).
    named = codes or sorted({d.code for d in findings(Settings(preview=True))})
    judged = verdict(_figures(result.before.measurement), _figures(result.after.measurement),
                     code=named[0] if len(named) == 1 else None)
    assert bool(found) == (judged == "harm"), (
        f"{path.name}: {before} -> {after} compiles to {result.summary()} ({judged}); default findings: {codes}")
