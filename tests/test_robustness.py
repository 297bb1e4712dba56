"""No input crashes the linter: every failure is a JF000 diagnostic or a one-line error,
and the rest of the run is unaffected."""
from __future__ import annotations

import importlib.util
import os
import sys
from datetime import timedelta
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.codemods.plan import is_valid_python
from jaxfuse_lint.run.runner import check_files, fix_files
from jaxfuse_lint.run.worker import Task, analyse

ROOT = Path(__file__).resolve().parent.parent

GOOD = b"""\
import jax
import numpy as np


@jax.jit
def f(x):
    return x + np.eye(64)
"""
GOOD_ROW, GOOD_COL = 7, 16  # where JF201 is reported in GOOD


def one_line(errors: list[str], filename: str) -> None:
    for e in errors:
        assert "\n" not in e and e.startswith(filename), e


# -- fuzzing -----------------------------------------------------------------------------------------

class _Jit(cst.CSTTransformer):
    def leave_FunctionDef(self, original, updated):
        return updated.with_changes(decorators=[cst.Decorator(cst.parse_expression("jax.jit")), *updated.decorators])


def jaxify(source: str) -> tuple[str, dict[str, str]]:
    """Generated code, with every def jitted and every top-level def traced from elsewhere,
    so the rules see it as traced code."""
    header = "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
    try:
        module = cst.parse_module(source)
    except Exception:
        return header + source, {}
    names = {s.name.value: "passed to `jax.vmap` in `other`" for s in module.body if isinstance(s, cst.FunctionDef)}
    try:
        source = module.visit(_Jit()).code
    except Exception:
        pass
    return header + source, names


def program(module_code: str, body_code: str) -> str:
    """Generated module-level code, then generated code as the body of a jitted function."""
    body = "".join("    " + line for line in body_code.splitlines(keepends=True)) or "    pass\n"
    # Findings with fixes (JF201, JF401, JF101) around whatever was generated.
    seeds = "    y = x + np.eye(64)\n    print(x)\n    z = jnp.sum(jnp.stack([x, x], axis=-1), axis=-1)\n"
    return f"{module_code}\n\ndef _fuzz(x, *args):\n{seeds}{body}\n    return x + y + z\n"


GENERATED = st.one_of(hypothesmith.from_grammar(auto_target=False), hypothesmith.from_node(auto_target=False))


@hsettings(max_examples=50, deadline=timedelta(seconds=30), derandomize=True, database=None,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(GENERATED, GENERATED)
def test_generated_programs_never_crash(module_code, body_code):
    text, external = jaxify(program(module_code, body_code))
    data = text.encode("utf-8", "surrogatepass")
    for mode in ("check", "fix"):
        reply = analyse(Task(0, "fuzz.py", data, external, "fuzz", False, True, mode), Settings())
        one_line(reply.errors, "fuzz.py")
        if reply.result is not None:
            one_line(reply.result.errors, "fuzz.py")
            assert all(d.code.startswith("JF") for d in reply.result.diagnostics)
        if reply.outcome is not None:
            one_line(reply.outcome.errors, "fuzz.py")
            if reply.outcome.changed:
                assert is_valid_python(reply.outcome.source) is None


# -- odd files, one run ----------------------------------------------------------------------------

HUGE_DEFS = 1000  # a 5,000-line module (3,000 defs cost ~80 s of the suite and showed nothing more)


def _odd_files() -> dict[str, bytes]:
    lines = [b"import jax", b"import numpy as np", b""]
    for i in range(HUGE_DEFS):
        lines += [b"", b"", f"def g{i}(x):".encode(), b"    y = x * 2", f"    return y + {i}".encode()]
    lines += [b"", b"", b"@jax.jit", b"def last(x):", b"    return x + np.eye(64)", b""]
    return {
        "good.py": GOOD,
        "latin1.py": b"# -*- coding: latin-1 -*-\nimport jax\nimport numpy as np\nNAME = '\xe9t\xe9'\n@jax.jit\n"
                     b"def f(x):\n    return x + np.eye(64)\n",
        "undecodable.py": b"import jax\nx = '\xff\xfe\xfd'\n",
        "unknown_cookie.py": b"# coding: klingon\nimport jax\n",
        "bom.py": b"\xef\xbb\xbf" + GOOD,
        "bom_and_latin1_cookie.py": b"\xef\xbb\xbf# coding: latin-1\nimport jax\n",
        "crlf.py": GOOD.replace(b"\n", b"\r\n"),
        "cr_only.py": GOOD.replace(b"\n", b"\r"),
        "tabs.py": GOOD.replace(b"    return", b"\treturn"),
        "formfeed.py": GOOD.replace(b"@jax.jit", b"\x0c@jax.jit").replace(b"import numpy", b"\x0cimport numpy"),
        "syntax_error.py": b"import jax\n\ndef f(x:\n    return x\n",
        "python2.py": b"import jax\nprint 'hello'\nexec 'x = 1'\nx = `1`\n",
        "empty.py": b"",
        "only_comments.py": b"# jax\n# nothing else\n",
        "nul_byte.py": b"import jax\nx = 1\x00\n",
        "huge.py": b"\n".join(lines),
        "deep_parens.py": b"import jax\nx = " + b"(" * 3000 + b"1" + b")" * 3000 + b"\n",
        "deep_calls.py": b"import jax\nx = " + b"f(" * 3000 + b")" * 3000 + b"\n",
        "deep_lists.py": b"import jax\nx = " + b"[\n" * 1200 + b"]\n" * 1200,
        "deep_unary.py": b"import jax\nx = " + b"-" * 50000 + b"1\n",
        "deep_not.py": b"import jax\nx = " + b"not " * 20000 + b"y\n",
        "long_sum.py": b"import jax\nx = " + b"+".join([b"1"] * 5000) + b"\n",
        "deep_indent.py": b"import jax\n" + b"".join(b" " * i + b"if x:\n" for i in range(120)) + b" " * 120 + b"pass\n",
    }


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd")
    for name, data in _odd_files().items():
        (root / name).write_bytes(data)
    (root / "ghost.py").symlink_to(root / "does-not-exist.py")
    files = sorted(root.iterdir())
    return root, check_files(files, Settings(), jobs=2), fix_files(files, Settings(), unsafe=True, jobs=2)


def _by_file(run, root):
    out: dict[str, list] = {}
    for d in run.diagnostics:
        out.setdefault(Path(d.filename).name, []).append(d)
    return out


def test_odd_files_are_reported_not_fatal(odd_run):
    root, run, _ = odd_run
    found = _by_file(run, root)
    codes = {name: [d.code for d in ds] for name, ds in found.items()}
    # Readable JAX code is checked whatever its encoding, newlines or indentation.
    for name in ("good.py", "bom.py", "crlf.py", "cr_only.py", "tabs.py", "formfeed.py", "latin1.py"):
        assert codes.get(name) == ["JF201"], name
    assert [(d.location.row, d.location.column) for d in found["good.py"]] == [(GOOD_ROW, GOOD_COL)]
    for name in ("bom.py", "crlf.py", "formfeed.py"):
        assert [(d.location.row, d.location.column) for d in found[name]] == [(GOOD_ROW, GOOD_COL)], name
    assert [d.location.row for d in found["latin1.py"]] == [7]
    assert codes["huge.py"] == ["JF201"] and found["huge.py"][0].location.row == 3 + HUGE_DEFS * 5 + 5
    # Everything that is not valid Python gets exactly one JF000.
    for name in ("undecodable.py", "unknown_cookie.py", "bom_and_latin1_cookie.py", "syntax_error.py", "python2.py",
                 "nul_byte.py", "deep_parens.py", "deep_calls.py", "deep_lists.py", "deep_unary.py", "deep_not.py",
                 "long_sum.py", "deep_indent.py"):
        assert codes.get(name) == ["JF000"], (name, codes.get(name))
    assert found["syntax_error.py"][0].location.row == 3
    assert found["deep_parens.py"][0].message == "Could not parse file: too many nested parentheses"
    assert "empty.py" not in codes and "only_comments.py" not in codes
    # One JF000 for the file that cannot be read (a link to nothing), and nothing else went wrong.
    assert [d.message for d in found["ghost.py"]] == ["Could not read path: No such file or directory"]
    assert run.errors == []
    assert run.stats["crashed"] == 0


def test_odd_files_fix_run(odd_run):
    root, run, fixed = odd_run
    assert fixed.errors == run.errors
    changed = {Path(o.filename).name: o for o in fixed.fixes if o.changed}
    assert set(changed) == {"good.py", "bom.py", "crlf.py", "cr_only.py", "tabs.py", "formfeed.py", "latin1.py",
                            "huge.py"}
    for o in changed.values():
        assert is_valid_python(o.source) is None
        assert "jnp.eye(64)" in o.source
    # Encodings and newlines are kept.
    assert changed["bom.py"].encoding == "utf-8-sig"
    assert changed["latin1.py"].encoding == "iso-8859-1" and "NAME = 'été'" in changed["latin1.py"].source
    assert "\r\n" in changed["crlf.py"].source and "\n" not in changed["crlf.py"].source.replace("\r\n", "")
    assert {d.code for d in fixed.diagnostics if Path(d.filename).name == "deep_parens.py"} == {"JF000"}


def test_symlink_loops_and_the_cli(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "bad.py").write_bytes(GOOD)
    (tmp_path / "pkg" / "sub" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "self").symlink_to(".", target_is_directory=True)
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--output-format", "json", str(tmp_path)])
    assert result.exit_code == 1
    assert result.output.count('"code": "JF201"') == 1


def test_stdin_never_crashes():
    for data in (b"\xff\xfe", b"import jax\nx = (" * 5 + b"\n", b"\x00", "import jax\nx = 'é'\n".encode()):
        result = CliRunner().invoke(cli, ["check", "--no-cache", "-"], input=data)
        assert result.exit_code in (0, 1), result.output
        assert "Traceback" not in result.output


# -- a sample of the installed jax source ---------------------------------------------------------------

def _corpus_module():
    spec = importlib.util.spec_from_file_location("jax_corpus_check", ROOT / "benchmarks" / "jax_corpus_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_jax_sample_checks_and_fixes_cleanly(tmp_path):
    """benchmarks/jax_corpus_check.py over ~40 files of the installed jax: no internal
    error, every fixed file valid, and fixing twice changes nothing more."""
    corpus = _corpus_module()
    root = corpus.package_root("jax")
    if root is None:
        pytest.skip("jax is not installed")
    files = corpus.corpus_files(root, sample=40)
    report = corpus.check_corpus(root.parent, files, tmp_path, jobs=2, unsafe=True)
    assert report.files == 40
    assert report.internal_errors == []
    assert report.invalid_results == []
    assert report.not_idempotent == []
