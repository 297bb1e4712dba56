"""Return shapes across modules (model/return_shapes.py): an imported helper's known output
sizes reach the importer's rules through the project summaries, with the cache and in
parallel, and never when a file is checked on its own."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import libcst as cst

from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.return_shapes import PREFIX, shape_from_json, shape_to_json
from jaxfuse_lint.model.shapes import Shape
from jaxfuse_lint.project.index import build_project
from jaxfuse_lint.project.module_names import import_spellings
from jaxfuse_lint.project.summary import Summary, summarize
from jaxfuse_lint.run.runner import check_files

PROJECT = Path(__file__).resolve().parent.parent / "fixtures" / "cross_module" / "_return_shapes"
EXPECTED = {("step.py", 11, "JF101"), ("step.py", 17, "JF104")}
# The helpers' return shapes reach the rules; what produced the arrays is another module's code, a form
# the calibration tables do not cover, so both findings are in the preview tier.
PREVIEW = Settings(preview=True)


def files() -> list[Path]:
    return sorted(PROJECT.rglob("*.py"))


def found(run) -> set[tuple[str, int, str]]:
    return {(Path(d.filename).name, d.location.row, d.code) for d in run.diagnostics}


def test_imported_return_shapes_reach_the_importers_rules():
    assert found(check_files(files(), PREVIEW, jobs=1)) == EXPECTED


def test_same_result_in_parallel():
    assert found(check_files(files(), PREVIEW, jobs=2)) == EXPECTED


def test_each_file_alone_knows_no_imported_shape():
    for f in files():
        result = check_source(f.read_bytes(), str(f), Settings())
        assert result.diagnostics == [], f


def test_summary_records_the_modules_own_return_sizes():
    mesh = PROJECT / "physics" / "mesh.py"
    s_mesh = summarize(SemanticModel(cst.parse_module(mesh.read_text())), "physics.mesh")
    assert set(s_mesh.shapes) == {"kvec_mesh", "components"}  # `unknown` has no known size
    assert shape_from_json(s_mesh.shapes["kvec_mesh"]).size(-1) == 2
    assert Summary.from_json(s_mesh.to_json()) == s_mesh
    # Summaries from before the field existed still load.
    old = s_mesh.to_json()
    del old["shapes"]
    assert Summary.from_json(old).shapes == {}


def test_import_spellings_match_the_models_qualified_names():
    assert import_spellings("physics.mesh.kvec_mesh", "physics") == ["physics.mesh.kvec_mesh", ".mesh.kvec_mesh"]
    assert "..mesh" in import_spellings("physics.mesh", "physics")  # `from . import mesh`
    assert "..b.c" in import_spellings("a.b.c", "a.x")  # `from ..b import c` inside package a.x


def test_the_importers_external_map_carries_the_shapes():
    paths = [str(p) for p in files()]
    index = build_project(paths, [Path(p).read_text() for p in paths])
    for i, p in enumerate(paths):
        module = index.files[i].module
        index.add_summary(i, summarize(SemanticModel(cst.parse_module(Path(p).read_text())), module))
    step = next(i for i, p in enumerate(paths) if p.endswith("step.py"))
    external = index.external(step)
    assert external[PREFIX + ".mesh.kvec_mesh"] == external[PREFIX + "physics.mesh.kvec_mesh"]
    assert shape_from_json(external[PREFIX + "..mesh.components"]).size(-1) == 3
    assert not any("unknown" in k for k in external)


def test_shape_json_round_trip():
    for shape in (Shape.make(2, {0: 5}), Shape.make(None, None, {-1: 3}), Shape.make(0)):
        assert shape_from_json(shape_to_json(shape)) == shape
    assert shape_from_json("not json") is None


def test_cli_with_the_cache_twice(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    cmd = [sys.executable, "-m", "jaxfuse_lint", "check", "--preview", "--cache-dir", str(tmp_path / "cache"),
           str(PROJECT)]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env)
    second = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert first.returncode == second.returncode == 1
    assert first.stdout == second.stdout and "JF101" in first.stdout and "JF104" in first.stdout
