"""Jupyter notebooks as a source: per-cell diagnostics, fixes written back into cells, IPython
magics kept byte for byte, the file's JSON format kept, and the fixed notebook still runs."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from jaxfuse_lint.core.calibration import RAW
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from jaxfuse_lint.parse.ipython_syntax import mask_lines
from jaxfuse_lint.parse.notebook import NotebookError, read
from jaxfuse_lint.report.notebooks import unified_diff
from jaxfuse_lint.core.lines import split_lines

ROOT = Path(__file__).resolve().parent.parent
FUSION = ROOT / "fixtures" / "notebooks" / "fusion_examples.ipynb"
FROZEN = ROOT / "fixtures" / "notebooks" / "frozen_globals.ipynb"

# (cell, row, column, code): cell numbers count every cell (markdown too), rows count in the cell.
# What the calibration tables report by default (cell 6's meshgrid, JF102, they keep silent) ...
FUSION_EXPECTED = [
    (3, 6, 20, "JF101"),  # defined in cell 3, jitted in cell 5: traced across cells
    (7, 3, 16, "JF201"),
    (8, 5, 12, "JF103"),
    (9, 10, 20, "JF203"),  # in a `%%time` cell: only its first line is masked
    (10, 3, 9, "JF206"),  # no fix: whether to drop a barrier is the author's call
]
# ... and what --preview adds: nothing here (every finding of the notebook is in the default tier).
FUSION_PREVIEW: list = []
# A JF101 form the tables report by default: a small axis stacked in the function and broadcast back.
STACKED = "    v = jnp.stack([x, 2 * x], axis=-1)\n    return v * jnp.sum(v, axis=-1, keepdims=True)\n"


def raw_settings(settings: Settings) -> Settings:
    """The calibrated rules' raw patterns, whatever their tables say: for the tests of notebook
    mechanics (cells, edits, layout) below, whose samples are tiny forms the tables keep silent."""
    return replace(settings, extra=settings.extra + (RAW,))


def run(*args, cwd=None, stdin=None):
    return subprocess.run([sys.executable, "-m", "jaxfuse_lint", *args], capture_output=True, text=True,
                          cwd=cwd, input=stdin, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def notebook(cells, indent=1, sort_keys=True, trailing_newline=True, **meta) -> str:
    """A notebook's JSON text, cells given as (cell_type, source) pairs."""
    data = {
        "cells": [
            {"cell_type": kind, "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
             "source": split_lines(src)} if kind == "code" else
            {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": split_lines(src)}
            for i, (kind, src) in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}, **meta},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + ("\n" if trailing_newline else "")


@pytest.fixture
def fusion(tmp_path) -> Path:
    target = tmp_path / "fusion.ipynb"
    shutil.copy(FUSION, target)
    return target


# -- check ------------------------------------------------------------------------------------------------

def test_check_reports_the_fusion_examples_per_cell(fusion):
    proc = run("check", "--no-cache", fusion.name, cwd=fusion.parent)
    assert proc.returncode == 1, proc.stderr
    found = [line.split(" ", 3)[:3] for line in proc.stdout.splitlines() if line.startswith("fusion.ipynb:")]
    assert "Found 5 diagnostics." in proc.stdout
    assert found == [["fusion.ipynb:cell", f"{c}:{r}:{col}:", code] for c, r, col, code in FUSION_EXPECTED]
    proc = run("check", "--no-cache", "--preview", fusion.name, cwd=fusion.parent)
    found = [line.split(" ", 3)[:3] for line in proc.stdout.splitlines() if line.startswith("fusion.ipynb:")]
    assert "Found 5 diagnostics." in proc.stdout
    assert found == [["fusion.ipynb:cell", f"{c}:{r}:{col}:", code]
                     for c, r, col, code in FUSION_EXPECTED + FUSION_PREVIEW]


def test_frozen_globals_of_a_notebook_are_default_findings_with_proven_premises():
    """Notebook-shaped code (the cells joined into one module): a top-level training loop rebinds the
    step counter a jitted update reads for its bias correction, and a later cell re-runs a jitted
    solver after rebinding the wave speed it reads. Both are found by default, every premise proven
    (the timeline of the cells, no argument rebuilt from the new value, read into the program)."""
    from jaxfuse_lint.engine.pipeline import check_notebook

    found = check_notebook(FROZEN.read_text(), str(FROZEN), Settings()).diagnostics
    assert [(d.cell, d.location.row, d.code) for d in found] == [(3, 9, "JF404"), (6, 6, "JF404")]
    for d in found:
        assert {p.premise.split("(")[0] for p in d.premises} == {
            "runs-traced", "rebound-after-trace", "no-retrace-between", "program-reads-it"}
        assert all(p.status == "proven" for p in d.premises), d.premises
    assert "`update` reads module-level `t`" in found[0].message
    assert "rebound on cell 4, line 4 (`for t in range(200)`)" in found[0].message
    assert "`wave_step` reads module-level `c`, which is rebound on cell 7, line 1" in found[1].message


def test_json_output_carries_the_cell(fusion):
    proc = run("check", "--no-cache", "--output-format", "json", str(fusion))
    data = json.loads(proc.stdout)
    assert [(d["cell"], d["location"]["row"], d["location"]["column"], d["code"]) for d in data] == FUSION_EXPECTED
    assert data[0]["filename"] == str(fusion)
    # The fix's edits are located in the cell too.
    edit = data[0]["fix"]["edits"][0]
    assert edit["cell"] == 3 and edit["location"] == {"row": 6, "column": 1}


def test_python_files_keep_cell_null(tmp_path):
    (tmp_path / "m.py").write_text("import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n" + STACKED)
    data = json.loads(run("check", "--no-cache", "--output-format", "json", "m.py", cwd=tmp_path).stdout)
    assert data and all(d["cell"] is None for d in data)
    assert all("cell" not in e for d in data if d["fix"] for e in d["fix"]["edits"])


def test_directories_include_notebooks_and_exclude_applies(tmp_path, fusion):
    assert "fusion.ipynb:cell 3" in run("check", "--no-cache", ".", cwd=tmp_path).stdout
    (tmp_path / "pyproject.toml").write_text('[tool.jaxfuse-lint]\nextend-exclude = ["*.ipynb"]\n')
    proc = run("check", "--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 0 and "ipynb" not in proc.stdout, proc.stdout + proc.stderr


def test_cache_keeps_cells(tmp_path, fusion):
    first = run("check", "--output-format", "json", ".", cwd=tmp_path)
    second = run("check", "--output-format", "json", ".", cwd=tmp_path)
    assert (tmp_path / ".jaxfuse_lint_cache").is_dir()
    assert json.loads(first.stdout) == json.loads(second.stdout)
    assert [d["cell"] for d in json.loads(second.stdout)] == [c for c, *_ in FUSION_EXPECTED]


def test_parallel_runner_checks_notebooks_beside_modules(tmp_path, fusion):
    (tmp_path / "m.py").write_text("import jax\n")
    proc = run("check", "--no-cache", "-j", "2", ".", cwd=tmp_path)
    assert proc.stdout.count("fusion.ipynb:cell") == len(FUSION_EXPECTED)


@pytest.mark.parametrize("text, why", [
    ('{"cells": [', "not valid JSON (Expecting value at line 1 column 12)"),
    ('{"cells": [\n {"a": "b', "not valid JSON (Unterminated string starting at line 2 column 8)"),
    ('{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}', "nbformat 3 is not supported"),
    ('{"cells": []}', 'a notebook without its metadata: no "nbformat" version or "metadata"'),
    ('{"cells": [], "metadata": {}}', 'a notebook without its metadata: no "nbformat" version ('),
    ('{"worksheets": []}', 'not a Jupyter notebook (no "nbformat" version or "metadata")'),
    ("[1, 2]", "not a Jupyter notebook"),
])
def test_unreadable_notebook_is_one_error_and_nothing_is_lost(tmp_path, fusion, text, why):
    bad = tmp_path / "bad.ipynb"
    bad.write_text(text)
    proc = run("check", "--no-cache", ".", cwd=tmp_path)
    assert proc.returncode == 1
    bad_lines = [l for l in proc.stdout.splitlines() if l.startswith("bad.ipynb")]
    assert len(bad_lines) == 1 and bad_lines[0].startswith("bad.ipynb:1:1: JF000 Could not read notebook: " + why)
    assert "fusion.ipynb:cell 3:6:20" in proc.stdout  # the others are still checked
    run("check", "--no-cache", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    assert bad.read_text() == text


def test_non_python_notebooks_are_skipped(tmp_path):
    text = notebook([("code", "import jax\nx = jnp.sum(jnp.stack([a, a], -1), -1)\n")],
                    language_info={"name": "julia"})
    result = check_source(text, "j.ipynb", Settings())
    assert result.skipped and not result.diagnostics


def test_stdin_filename_reads_notebook_json(fusion):
    proc = run("check", "--no-cache", "--stdin-filename", "nb.ipynb", "-", stdin=fusion.read_text())
    assert proc.stdout.splitlines()[0].startswith("nb.ipynb:cell 3:6:20: JF101")
    fixed = run("check", "--fix", "--unsafe-fixes", "--stdin-filename", "nb.ipynb", "-", stdin=fusion.read_text())
    data = json.loads(fixed.stdout)  # editors get the whole fixed notebook back
    assert "jnp.sum" not in "".join(data["cells"][2]["source"])


# -- fix --------------------------------------------------------------------------------------------------

# The notebook-mechanics tests below turn unsafe fixes on: JF101's and JF201's fixes are unsafe
# while the operand's dtype is unknown (tests/test_fix_safety.py covers when they are safe).
def test_fix_rewrites_cells_and_leaves_everything_else(fusion):
    before_text = fusion.read_text()
    proc = run("check", "--no-cache", "--fix", "--unsafe-fixes", str(fusion))
    assert "Fixed 4 diagnostics, 1 remaining." in proc.stdout, proc.stdout
    after_text = fusion.read_text()
    before, after = json.loads(before_text), json.loads(after_text)
    # Same format as the file had: nbformat's (indent 1, sorted keys, UTF-8, final newline).
    assert after_text == json.dumps(after, indent=1, ensure_ascii=False) + "\n"
    assert list(after) == list(before) and after["metadata"] == before["metadata"]
    changed = set()
    for i, (a, b) in enumerate(zip(before["cells"], after["cells"]), 1):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
        if a["source"] != b["source"]:
            changed.add(i)
    assert changed == {3, 7, 8, 9}
    # Every magic and shell escape, byte for byte, in its place.
    for a, b in zip(before["cells"], after["cells"]):
        magics_a = [l for l in a["source"] if l.lstrip().startswith(("%", "!")) or "= !" in l]
        magics_b = [l for l in b["source"] if l.lstrip().startswith(("%", "!")) or "= !" in l]
        assert magics_a == magics_b
    assert after["cells"][8]["source"][0] == "%%time\n"
    remaining = run("check", "--no-cache", "--preview", str(fusion)).stdout
    assert remaining.count(": JF") == 1 and ":cell 10:3:9: JF206" in remaining  # it has no fix


def test_a_fix_in_a_cell_magic_cell_keeps_its_header(tmp_path):
    """The body of a `%%time` cell is Python: it is fixed, and the masked header is written back."""
    path = tmp_path / "timed.ipynb"
    path.write_text(notebook([("code", "import jax\nimport jax.numpy as jnp\n"),
                              ("code", "%%time\n@jax.jit\ndef f(x):\n" + STACKED + "\nprint(f(jnp.ones(3)))\n")]))
    proc = run("check", "--no-cache", "--fix", "--unsafe-fixes", str(path))
    assert "Fixed 1 diagnostic, 0 remaining." in proc.stdout, proc.stdout + proc.stderr
    source = json.loads(path.read_text())["cells"][1]["source"]
    assert source[:3] == ["%%time\n", "@jax.jit\n", "def f(x):\n"] and "jnp.sum" not in "".join(source)
    assert source[-1] == "print(f(jnp.ones(3)))\n"


def test_diff_is_per_cell(fusion):
    proc = run("check", "--no-cache", "--diff", "--unsafe-fixes", "fusion.ipynb", cwd=fusion.parent)
    assert proc.returncode == 1
    headers = [l for l in proc.stdout.splitlines() if l.startswith(("--- ", "+++ "))]
    assert headers[:2] == ["--- a/fusion.ipynb:cell 3", "+++ b/fusion.ipynb:cell 3"]
    assert [h.rsplit(" ", 1)[1] for h in headers[::2]] == ["3", "7", "8", "9"]
    assert "-    return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)" in proc.stdout
    assert fusion.read_bytes() == FUSION.read_bytes()


def test_fix_keeps_an_unusual_json_format(tmp_path):
    text = notebook([("code", "import jax\nimport jax.numpy as jnp\n\n%matplotlib inline\n"),
                     ("markdown", "Ünïcode stays as it is"),
                     ("code", "@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n"
                              "    return jnp.sum(v, axis=-1)\n")],
                    indent=2, sort_keys=False, trailing_newline=False)
    path = tmp_path / "odd.ipynb"
    path.write_text(text, encoding="utf-8")
    outcome = fix_source(path.read_bytes(), str(path), raw_settings(Settings()), unsafe=True)
    assert outcome.changed
    new = json.loads(outcome.source)
    assert outcome.source == json.dumps(new, indent=2, ensure_ascii=False)  # no newline added, order kept
    assert list(new["cells"][0]) == list(json.loads(text)["cells"][0])
    assert "Ünïcode" in outcome.source
    assert new["cells"][0]["source"] == json.loads(text)["cells"][0]["source"]


def test_fix_into_a_cell_without_a_final_newline_adds_none(tmp_path):
    text = notebook([("code", "import jax\nimport jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n"
                              "    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)")])
    outcome = fix_source(text, "nb.ipynb", raw_settings(Settings()), unsafe=True)
    source = json.loads(outcome.source)["cells"][0]["source"]
    assert not source[-1].endswith("\n") and "jnp.sum" not in "".join(source)
    # The per-cell edit of the check, applied to the cell, gives the same text.
    from jaxfuse_lint.core.edits import apply_edits

    d = check_source(text, "nb.ipynb", raw_settings(Settings())).diagnostics[0]
    assert d.cell == 1 and all(e.cell == 1 for e in d.fix.edits)
    cell = "".join(json.loads(text)["cells"][0]["source"])
    assert apply_edits(cell, d.fix.edits) == "".join(source)


# -- IPython syntax ---------------------------------------------------------------------------------------

MAGIC_CELL = (
    "%%timeit -n 1\n"
    "%time y = 1\n"
    "!pip install \\\n"
    "    something\n"
    "files = !ls -l\n"
    "a, b = %sx echo 1\n"
    "jnp.sum?\n"
    "?jnp.sum\n"
    "for i in range(3):\n"
    "    %time f(i)\n"
    "s = '''\n"
    "%not a magic: inside a string\n"
    "'''\n"
    "t = (1 %\n"
    "     2)\n"
    "print(x != 1)\n"
)


def test_magics_are_masked_with_the_same_rows_and_restored_byte_for_byte():
    magics: list[list[str]] = []
    lines = split_lines(MAGIC_CELL)
    masked = mask_lines(lines, magics)
    assert len(masked) == len(lines)
    compile("".join(masked), "<masked>", "exec")  # Python now
    assert [m[0].rstrip() for m in magics] == [
        "%%timeit -n 1", "%time y = 1", "!pip install \\", "files = !ls -l", "a, b = %sx echo 1",
        "jnp.sum?", "?jnp.sum", "    %time f(i)"]
    assert masked[4].startswith("files = ...") and masked[5].startswith("a, b = ...")
    assert masked[11] == "%not a magic: inside a string\n" and masked[13] == "t = (1 %\n"
    text = notebook([("code", "import jax\n"), ("code", MAGIC_CELL)])
    nb = read(text)
    assert nb.cell_sources(nb.module) == {1: "import jax\n", 2: MAGIC_CELL}


def test_other_languages_cell_magics_are_left_out():
    nb = read(notebook([("code", "%%bash\nfor f in *; do echo $f; done\n"), ("code", "import jax\n")]))
    assert "bash" not in nb.module and [c.number for c in nb.cells] == [2]


def test_a_fix_may_not_remove_a_magic():
    nb = read(notebook([("code", "import jax\n!ls\n")]))
    with pytest.raises(NotebookError):
        nb.cell_sources(nb.module.replace("pass  # jaxfuse-lint-magic 0\n", ""))


# Issue 37, item 11: a notebook keeps its JSON layout outside the edited cells, byte for byte.
def _odd_layout(quirk: str) -> tuple[str, str, str]:
    """(prefix, the edited cell's source value, suffix) of a notebook in Jupyter's layout but
    for one quirk."""
    data = json.loads(notebook([
        ("markdown", "See http://example.org/x \u00e9t\u00e9\n"),
        ("code", "import jax\nimport jax.numpy as jnp\n"),
        ("code", "@jax.jit\ndef f(x):  # a/b \u00e9\n    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)\n"),
    ]))
    data["cells"][2]["id"] = "edited"
    data["cells"][2]["metadata"] = {"scale": 0.5}
    data["metadata"]["tolerance"] = 1.5e-07
    raw = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    nl = "\n"
    if quirk == "crlf":
        raw, nl = raw.replace("\n", "\r\n"), "\r\n"
    elif quirk == "escaped-slash":
        raw = raw.replace("/", "\\/")
    elif quirk == "exponent":
        raw = raw.replace("1.5e-07", "1.5E-7")
    elif quirk == "mixed-escapes":
        raw = raw.replace("\u00e9", "\\u00e9", 1)  # the markdown cell's first; the others stay raw
    elif quirk == "duplicate-keys":
        raw = raw.replace('"scale": 0.5', '"scale": 1,' + nl + '    "scale": 0.5')
    start = raw.index('"source": ', raw.index('"id": "edited"')) + len('"source": ')
    end = raw.index(nl + "   ]", start) + len(nl + "   ]")
    return raw[:start], raw[start:end], raw[end:]


@pytest.mark.parametrize("quirk", ["crlf", "escaped-slash", "exponent", "mixed-escapes", "duplicate-keys"])
def test_a_fix_keeps_the_json_layout_outside_the_edited_cell(quirk):
    prefix, cell, suffix = _odd_layout(quirk)
    outcome = fix_source(prefix + cell + suffix, "nb.ipynb", raw_settings(Settings()), unsafe=True)
    assert outcome.changed
    new = outcome.source
    assert new.startswith(prefix) and new.endswith(suffix)
    value = new[len(prefix):len(new) - len(suffix)]
    source = json.loads(value)
    assert "jnp.sum" not in "".join(source) and source[:2] == ["@jax.jit\n", "def f(x):  # a/b \u00e9\n"]
    # The edited cell itself is written as the file is: its line breaks, its escapes.
    old_lines = cell.split("\n")
    assert value.split("\n")[:3] == old_lines[:3]  # `[`, then the unchanged lines' own spelling
    assert value.endswith(old_lines[-1])
    if quirk == "crlf":
        assert "\n" not in value.replace("\r\n", "")
    if quirk == "escaped-slash":
        assert "/" not in value.replace("\\/", "")


def test_only_the_edited_cells_source_changes_when_several_are(tmp_path):
    """Two cells fixed, the rest as it was; a cell stored as one string stays one string."""
    data = json.loads(notebook([
        ("code", "import jax\nimport jax.numpy as jnp\n"),
        ("code", "@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)\n"),
        ("markdown", "between"),
        ("code", "@jax.jit\ndef g(x):\n    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)"),
    ]))
    data["cells"][3]["source"] = "".join(data["cells"][3]["source"])
    raw = json.dumps(data, indent=2, ensure_ascii=True).replace("\n", "\r\n")
    outcome = fix_source(raw, "nb.ipynb", raw_settings(Settings()), unsafe=True)
    new = json.loads(outcome.source)
    assert isinstance(new["cells"][3]["source"], str) and "jnp.sum" not in new["cells"][3]["source"]
    assert "jnp.sum" not in "".join(new["cells"][1]["source"])
    before, after = json.loads(raw), new
    for i in (1, 3):
        before["cells"][i]["source"] = after["cells"][i]["source"]
    assert before == after
    assert outcome.source.count("\r\n") == len(outcome.source.split("\n")) - 1  # CRLF everywhere


def test_unified_diff_names_cells():
    a = notebook([("markdown", "x"), ("code", "a = 1\n")])
    b = notebook([("markdown", "x"), ("code", "a = 2\n")])
    assert unified_diff(a, b, "nb.ipynb").splitlines()[:2] == ["--- a/nb.ipynb:cell 2", "+++ b/nb.ipynb:cell 2"]


# -- the fixed notebook still runs, with the same printed outputs ----------------------------------------

def _printed(path: Path) -> list[list[str]]:
    """Each code cell's stdout, without the timings `%time` prints."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")
        out.append([l for l in text.splitlines() if not l.startswith(("CPU times", "Wall time"))])
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.outputs
    return out


def test_fixed_notebook_executes_with_the_same_outputs(fusion):
    pytest.importorskip("jax")
    pytest.importorskip("ipykernel")
    before = _printed(fusion)
    assert before[0] == ["['hello']"] and before[2][-1] == "[[0.0, 2.0], [9.0, 11.0], [26.0, 28.0], " \
        "[51.0, 53.0], [84.0, 86.0], [125.0, 127.0], [174.0, 176.0], [231.0, 233.0]]"
    run("check", "--no-cache", "--fix", "--unsafe-fixes", str(fusion))
    assert "jnp.sum" not in fusion.read_text()
    assert _printed(fusion) == before


# -- review -----------------------------------------------------------------------------------------------

def test_review_maps_a_notebook_change_to_cells(tmp_path):
    from tests.test_review_support import commit, make_repo

    base = notebook([("markdown", "# Model"),
                     ("code", "import jax\nimport jax.numpy as jnp\n\n%load_ext autoreload\n"),
                     ("code", "def old(x):\n" + STACKED)])
    repo = make_repo(tmp_path / "repo", {"model.ipynb": base})
    head = json.loads(base)
    # A new cell that jits `old` (now traced: its finding is on an unchanged line), and one
    # with a new finding (float32 columns: a safe fix, which a notebook still gets no suggestion of).
    head["cells"].append({"cell_type": "code", "execution_count": None, "id": "c3", "metadata": {},
                          "outputs": [], "source": split_lines(
                              "def new(x):\n    w = jnp.stack([x.astype(jnp.float32), 2 * x.astype(jnp.float32)], axis=-1)\n"
                              "    return w * jnp.sum(w * w, axis=-1, keepdims=True)\n"
                              "\n\nnew_jit, old_jit = jax.jit(new), jax.jit(old)\n")})
    head_text = json.dumps(head, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    commit(repo, {"model.ipynb": head_text}, "new cell")
    proc = run("review", "--base", "HEAD~1", "--summary", str(tmp_path / "summary.md"), cwd=repo)
    assert proc.returncode == 1, proc.stderr
    comments = json.loads(proc.stdout)["comments"]
    assert len(comments) == 1, comments  # `old`'s finding is not on a changed line
    (c,) = comments
    assert c["path"] == "model.ipynb" and c["side"] == "RIGHT"
    # The comment sits on the line of the .ipynb file that holds cell 4, row 3.
    assert head_text.splitlines()[c["line"] - 1].strip() == '"    return w * jnp.sum(w * w, axis=-1, keepdims=True)\\n",'
    assert "In cell 4, line 3" in c["body"] and "JF101" in c["body"]
    assert "--- a/model.ipynb:cell 4" in c["body"]
    assert "-    return w * jnp.sum(w * w, axis=-1, keepdims=True)" in c["body"]
    assert "```suggestion" not in c["body"]
    summary = (tmp_path / "summary.md").read_text()
    assert "`model.ipynb:cell 4:3` JF101" in summary and "a/model.ipynb:cell 4" in summary


# -- formats that point into files ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["github", "sarif", "gitlab", "rdjson"])
def test_file_formats_point_at_the_line_of_the_ipynb_file(fusion, fmt):
    proc = run("check", "--no-cache", "--output-format", fmt, fusion.name, cwd=fusion.parent)
    lines = fusion.read_text().splitlines()
    jf101_line = next(i for i, l in enumerate(lines, 1) if "jnp.sum(kvm * x" in l)
    if fmt == "github":
        first = proc.stdout.splitlines()[0]
        assert first.startswith(f"::warning file=fusion.ipynb,line={jf101_line},col=1,endLine={jf101_line},")
        assert "::JF101 cell 3:6:20: `jnp.sum`" in first
        return
    data = json.loads(proc.stdout)
    if fmt == "sarif":
        result = data["runs"][0]["results"][0]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == jf101_line
        assert result["message"]["text"].startswith("cell 3:6:20: ") and "fixes" not in result
    elif fmt == "gitlab":
        assert data[0]["location"] == {"path": "fusion.ipynb", "lines": {"begin": jf101_line, "end": jf101_line}}
    else:
        d = data["diagnostics"][0]
        assert d["location"]["range"]["start"] == {"line": jf101_line, "column": 1}
        assert d["message"].startswith("cell 3:6:20: ")


def test_full_format_quotes_the_cell(fusion):
    out = run("check", "--no-cache", "--output-format", "full", fusion.name, cwd=fusion.parent).stdout
    assert "fusion.ipynb:cell 3:6:20: JF101" in out
    assert " 6 |     return x * 2 + jnp.sum(kvm * x, axis=1, keepdims=True)" in out


def test_messages_name_other_lines_by_cell():
    text = notebook([("code", "import jax\nimport numpy as np\n\ndef f(x):\n    return x + np.arange(x.size).reshape(x.shape) ** 2.3\n"),
                     ("markdown", "jitted below"),
                     ("code", "g = jax.jit(f)\n")])
    (d,) = check_source(text, "nb.ipynb", replace(Settings(), select=("JF201",))).diagnostics
    assert (d.cell, d.location.row) == (1, 5)
    assert "passed to `jax.jit` on cell 3, line 1" in d.message, d.message


def test_pre_commit_hooks_take_notebooks(fusion, monkeypatch):
    yaml = pytest.importorskip("yaml")
    import shlex

    from click.testing import CliRunner

    from jaxfuse_lint.cli.main import cli

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert all("jupyter" in h["types_or"] for h in hooks.values())  # pre-commit's tag for .ipynb
    monkeypatch.chdir(fusion.parent)
    entry = shlex.split(hooks["jaxfuse-lint-fix"]["entry"])[1:]
    result = CliRunner().invoke(cli, entry + ["--no-cache", fusion.name])
    assert result.exit_code == 1, result.output  # JF101 and JF201 remain: their fixes are unsafe
    cells = json.loads(fusion.read_text())["cells"]
    # Safe fixes only (JF103's unroll); JF101's is unsafe while the dtype is unknown.
    assert "unroll=True" in "".join(cells[7]["source"]) and cells[8]["source"][0] == "%%time\n"
    assert "jnp.sum" in "".join(cells[2]["source"])


def test_a_fix_that_adds_an_import_edits_the_first_cell():
    text = notebook([("code", "import jax\nimport numpy as np\n"), ("markdown", "below"),
                     ("code", "@jax.jit\ndef f(x):\n    return x + np.arange(x.size).reshape(x.shape) ** 2.3\n")])
    (d,) = check_source(text, "nb.ipynb", replace(Settings(), select=("JF201",))).diagnostics
    assert [(e.cell, e.location.row) for e in d.fix.edits] == [(1, 3), (3, 3)]
    outcome = fix_source(text, "nb.ipynb", replace(Settings(), select=("JF201",)), unsafe=True)
    cells = ["".join(c["source"]) for c in json.loads(outcome.source)["cells"]]
    assert cells == ["import jax\nimport numpy as np\nimport jax.numpy as jnp\n", "below",
                     "@jax.jit\ndef f(x):\n    return x + jnp.arange(x.size).reshape(x.shape) ** 2.3\n"]


def test_a_cell_that_cannot_be_parsed_is_one_error_in_its_cell(tmp_path):
    (tmp_path / "deep.ipynb").write_text(notebook([
        ("code", "import jax\n"), ("code", "x = " + "(" * 200 + "1" + ")" * 199 + "\n")]))
    (tmp_path / "indent.ipynb").write_text(notebook([("code", "import jax\n"), ("code", "  y = 1\n z = 2\n")]))
    proc = run("check", "--no-cache", ".", cwd=tmp_path)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("deep.ipynb:cell 2:1:5: JF000 Could not parse this cell (the other cells are checked)")
    assert lines[1].startswith("indent.ipynb:cell 2:2:") and "JF000" in lines[1]
    assert lines[2:] == ["Found 2 diagnostics."] and proc.returncode == 1


def test_time_magic_statements_are_analysed_and_fixed_in_place():
    text = notebook([
        ("code", "import jax\nimport jax.numpy as jnp\n\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n"
                 "    return jnp.sum(v, axis=-1)\n"),
        ("code", "x = jnp.ones(3)\n%timeit jax.jit(f)(x).block_until_ready()\n"
                 "%time jax.jit(lambda y: jnp.sum(jnp.stack([y, y], axis=-1), axis=-1))(x)\n")])
    settings = raw_settings(replace(Settings(), select=("JF101",)))
    found = check_source(text, "nb.ipynb", settings).diagnostics
    # `f` is traced through the `%timeit` line of the next cell; the lambda on the `%time`
    # line is checked where it is, columns as the user sees them.
    assert [(d.cell, d.location.row, d.location.column) for d in found] == [(1, 6, 12), (2, 3, 25)]
    edit = found[1].fix.edits[0]
    assert edit.cell == 2 and edit.content.startswith("%time jax.jit(lambda y: ")
    assert "jaxfuse-lint" not in edit.content
    cells = ["".join(c["source"]) for c in json.loads(fix_source(text, "nb.ipynb", settings, unsafe=True).source)["cells"]]
    assert cells[1].splitlines()[1] == "%timeit jax.jit(f)(x).block_until_ready()"
    assert cells[1].splitlines()[2].startswith("%time jax.jit(lambda y: ") and "jnp.sum" not in cells[1]
    assert "jnp.sum" not in cells[0]


def test_noqa_in_a_cell():
    text = notebook([("code", "import jax\nimport jax.numpy as jnp\n"),
                     ("code", "@jax.jit\ndef f(x):\n    v = jnp.stack([x, x], axis=-1)\n"
                              "    return jnp.sum(v, axis=-1)  # noqa: JF101\n\n@jax.jit\ndef g(x):\n"
                              "    v = jnp.stack([x, x], axis=-1)\n    return jnp.sum(v, axis=-1)\n")])
    found = check_source(text, "nb.ipynb", raw_settings(Settings())).diagnostics
    assert [(d.cell, d.location.row, d.noqa_row, d.code) for d in found] == [(2, 9, 9, "JF101")]


# -- cells that IPython runs although Python would not parse them --------------------------------------
VALID_IN_IPYTHON = [
    "%time ! gsutil cp gs://bucket/data.npz .\n",  # a timed shell escape
    "%time !ls\n",
    "%timeit -n 1 !ls -l\n",
    "%time files = !ls\nprint(files)\n",  # a timed assignment from a shell escape: `files` stays bound
    "%time env = %env\n",
    "%%time\nimport jax\nx = jax.numpy.ones(3)\n",
    "\n\n%%bash\nls -l | wc -l\n",  # leading blank lines: IPython drops them before it looks for `%%`
    "  import jax\n  x = 1\n",  # an indented cell: IPython dedents it
    "    # a comment first\n    def f(x):\n        return x\n\n    y = f(1)\n",
    "\n\t@jax.jit\n\tdef g(x):\n\t\treturn x\n",
    # IPython <= 8 removes the first line's indentation from the lines that start with it only
    " print('start')\nfor i in range(3):\n    x = i\n\n    if i:\n        print(x)\n",
]


@pytest.mark.parametrize("cell", VALID_IN_IPYTHON)
def test_cells_valid_in_ipython_are_no_syntax_error_and_round_trip(cell):
    text = notebook([("code", "import jax\n"), ("code", cell), ("code", "z = 1\n")])
    result = check_source(text, "nb.ipynb", Settings())
    assert not result.errors
    assert [d for d in result.diagnostics if d.code == "JF000"] == []
    nb = read(text)
    sources = {1: "import jax\n", 2: cell, 3: "z = 1\n"}
    assert nb.cell_sources(nb.module) == {c.number: sources[c.number] for c in nb.cells}


def test_a_cell_whose_lines_ipython_would_not_dedent_alike_is_still_a_syntax_error():
    text = notebook([("code", "  x = 1\n   y = 2\n")])  # every IPython rejects it: ` y = 2` is indented
    assert [d.code for d in check_source(text, "nb.ipynb", Settings()).diagnostics] == ["JF000"]


def test_an_indented_cell_keeps_its_rows_columns_and_indentation_through_a_fix():
    cell = ("  import jax.numpy as jnp\n\n  @jax.jit\n  def f(x):\n"
            "      v = jnp.stack([x, 2 * x], axis=-1)\n      return jnp.sum(v, axis=-1)\n")
    text = notebook([("code", "import jax\n"), ("code", cell)])
    settings = raw_settings(replace(Settings(), select=("JF101",)))
    (d,) = check_source(text, "nb.ipynb", settings).diagnostics
    assert (d.cell, d.location.row, d.location.column) == (2, 6, 14)
    outcome = fix_source(text, "nb.ipynb", settings, unsafe=True)
    assert not outcome.errors
    fixed = "".join(json.loads(outcome.source)["cells"][1]["source"])
    assert fixed == cell.replace("jnp.sum(v, axis=-1)", "v[..., 0] + v[..., 1]")
    assert fix_source(outcome.source, "nb.ipynb", settings, unsafe=True).source == outcome.source


def test_a_fix_that_would_unindent_code_into_an_indented_first_cell_is_refused():
    cell = "  import jax\n  import numpy as np\n  K = np.linspace(0.0, 1.0, 4096)\n\n  @jax.jit\n  def f(x):\n      return x + K\n"
    text = notebook([("code", cell)])
    outcome = fix_source(text, "nb.ipynb", replace(Settings(), select=("JF202",)), unsafe=True)
    assert outcome.source == text and outcome.errors  # the import would go before the cell, unindented


def test_a_cell_dedented_line_by_line_maps_columns_back_and_takes_no_fix():
    cell = (" import jax.numpy as jnp\nfor i in range(3):\n    print(i)\n\n@jax.jit\ndef f(x):\n"
            "    v = jnp.stack([x, 2 * x], axis=-1)\n    return jnp.sum(v, axis=-1)\n")
    text = notebook([("code", "import jax\n"), ("code", cell)])
    settings = raw_settings(replace(Settings(), select=("JF101",)))
    (d,) = check_source(text, "nb.ipynb", settings).diagnostics
    assert (d.cell, d.location.row, d.location.column, d.fix) == (2, 8, 12, None)
    outcome = fix_source(text, "nb.ipynb", settings, unsafe=True)
    assert outcome.source == text  # not rewritten: the cell's lines do not map back one to one


def test_an_empty_source_list_gets_lines_in_the_files_layout():
    from jaxfuse_lint.parse.json_splice import string_list_like, value_span

    raw = '{\r\n  "cells": [\r\n    {\r\n      "source": []\r\n    }\r\n  ]\r\n}'
    start, end = value_span(raw, ("cells", 0, "source"))
    assert raw[start:end] == "[]"
    assert string_list_like(raw, start, end, ["a = 1\n", "é/"]) == \
        '[\r\n        "a = 1\\n",\r\n        "é/"\r\n      ]'


# A cell of HTML (Colab's `#@markdown` form line before `%%html`, or the magic missing): the parser guard
# judges each cell on its own, like the engine, so the other cells are still checked (sweep 8's first look:
# one HTML cell left a whole notebook unchecked).
HTML_CELL = "<style>\n  p, ol {\n    font-size: 16px;\n  }\n</style>\n"
LOOPED_JIT = ("import jax\nimport jax.numpy as jnp\n\n\ndef run(xs):\n    for x in xs:\n"
              "        x = jax.jit(lambda v: v + 1)(x)\n    return xs\n")


def test_a_colab_form_line_before_a_cell_magic_keeps_the_magic(tmp_path):
    path = tmp_path / "colab.ipynb"
    path.write_text(notebook([("code", "#@markdown\n%%html\n" + HTML_CELL), ("code", LOOPED_JIT)]))
    proc = run("check", "--no-cache", "--select", "JF000,JF301", str(path))
    assert "JF000" not in proc.stdout and ":cell 2:7:" in proc.stdout and "JF301" in proc.stdout, proc.stdout


def test_a_cell_the_parser_guard_refuses_is_left_out_alone(tmp_path):
    path = tmp_path / "html.ipynb"
    path.write_text(notebook([("code", HTML_CELL), ("code", LOOPED_JIT)]))
    proc = run("check", "--no-cache", "--select", "JF000,JF301", str(path))
    assert ":cell 1:3:17: JF000 Could not parse this cell (the other cells are checked)" in proc.stdout, proc.stdout
    assert ":cell 2:7:" in proc.stdout and "JF301" in proc.stdout, proc.stdout
    # --fix too: the other cell's fix is built (here unsafe, so listed), the refused cell left as it is.
    proc = run("check", "--no-cache", "--select", "JF000,JF301", "--fix", "--diff", str(path))
    assert "html.ipynb:cell 2:7:13: JF301" in proc.stderr, proc.stdout + proc.stderr
