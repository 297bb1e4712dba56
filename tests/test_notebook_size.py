"""Notebooks with pictures (issue 41, item 1): `max-file-size` applies to the code a notebook holds,
not to its JSON, which is mostly outputs; the file is read up to `max-notebook-size`, and the
outputs are stepped over, never decoded."""
from __future__ import annotations

import base64
import json
import os
import random
import tracemalloc

import pytest
from click.testing import CliRunner

from jaxfuse_lint.cli.main import cli
from jaxfuse_lint.core.config import ConfigError, load_settings
from jaxfuse_lint.parse.json_splice import SpliceError, skip_value, value_span
from jaxfuse_lint.parse.notebook import NotebookError, read

CODE = "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    print(x)\n    return jnp.sin(x)\n"


def picture_notebook(png_bytes: int = 1_500_000, code: str = CODE) -> str:
    """A notebook whose code cell has a traced `print` and whose output is a PNG of about
    `png_bytes` bytes (base64 in the JSON, as Jupyter writes it)."""
    rng = random.Random(0)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(png_bytes)).decode()
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# A study\n"]},
            {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {},
             "outputs": [{"data": {"image/png": png, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
                          "metadata": {"needs_background": "light"}, "output_type": "display_data"}],
             "source": code.splitlines(keepends=True)},
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=1) + "\n"


@pytest.fixture
def big_notebook(tmp_path):
    path = tmp_path / "study.ipynb"
    path.write_text(picture_notebook())
    assert path.stat().st_size > 2_000_000  # a 2 MB notebook, over the default `max-file-size`
    return path


def codes(output: str) -> list[str]:
    return [line.split(": ")[1].split()[0] for line in output.splitlines() if ".ipynb:cell " in line]


def test_check_reports_the_code_of_a_notebook_with_a_picture(big_notebook):
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(big_notebook)])
    assert "JF000" not in result.output, result.output
    assert codes(result.output) == ["JF401"], result.output
    assert "study.ipynb:cell 2:7:5: JF401" in result.output


def test_fix_keeps_the_outputs_byte_for_byte(big_notebook):
    before = big_notebook.read_text()
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--fix", "--unsafe-fixes", str(big_notebook)])
    assert "JF000" not in result.output, result.output
    after = big_notebook.read_text()
    assert after != before and "jax.debug.print" in after, result.output
    # Only the fixed cell's `source` value changed: every other byte (the picture) is as it was.
    start, end = value_span(before, ("cells", 1, "source"))
    new_start, new_end = value_span(after, ("cells", 1, "source"))
    assert before[:start] == after[:new_start]
    assert before[end:] == after[new_end:]


def test_review_reports_the_code_of_a_notebook_with_a_picture(tmp_path, monkeypatch):
    from tests.test_review_support import commit, git, make_repo

    from jaxfuse_lint.cli.review import review_command

    repo = make_repo(tmp_path / "repo", {"README.md": "study\n"})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"study.ipynb": picture_notebook()}, "head")
    monkeypatch.chdir(repo)
    result = CliRunner().invoke(review_command, ["--base", "main"], catch_exceptions=False)
    payload = json.loads(result.stdout)
    bodies = " ".join(c["body"] for c in payload["comments"])
    assert "JF401" in bodies and "JF000" not in bodies and "not checked" not in result.stdout, result.stdout[-2000:]


def test_the_language_server_checks_a_notebook_with_a_picture(tmp_path):
    pytest.importorskip("pygls")
    from tests.test_server_lsp import Client, initialize

    client = Client(tmp_path)
    try:
        initialize(client, tmp_path, ["utf-16"])
        path = tmp_path / "study.ipynb"
        text = picture_notebook()
        path.write_text(text)
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "json", "version": 1, "text": text}})
        assert [d["code"] for d in client.diagnostics(path.as_uri(), version=1)] == ["JF401"]
        assert client.close() == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()


def test_a_notebook_over_max_notebook_size_is_one_jf000(tmp_path, big_notebook):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nmax-notebook-size = 1000000\n")
    size = big_notebook.stat().st_size
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(big_notebook)])
    assert f"study.ipynb:1:1: JF000 File not checked: {size:,} bytes is over `max-notebook-size` (1,000,000 bytes)" \
        in result.output, result.output


def test_a_notebook_whose_code_is_over_max_file_size_says_so(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nmax-file-size = 2000\n")
    code = CODE + "".join(f"y{i} = jnp.ones({i})\n" for i in range(200))
    path = tmp_path / "nb.ipynb"
    path.write_text(picture_notebook(1000, code))
    before = path.read_text()
    for args in ((), ("--fix", "--unsafe-fixes")):
        result = CliRunner().invoke(cli, ["check", "--no-cache", *args, str(path)])
        assert "JF000 Notebook not checked: its code cells hold" in result.output, result.output
        assert "over `max-file-size` (2,000 bytes)" in result.output
        assert path.read_text() == before


def test_max_notebook_size_is_validated(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nmax-notebook-size = 0\n")
    with pytest.raises(ConfigError, match="`max-notebook-size` must be a positive integer"):
        load_settings(None, start=str(tmp_path))
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nmax-notebook-size = 3000000000\n")
    with pytest.raises(ConfigError, match="`max-notebook-size` must be at most"):
        load_settings(None, start=str(tmp_path))
    (tmp_path / "pyproject.toml").write_text("[tool.jaxfuse-lint]\nmax-notebook-size = 100000000\n")
    assert load_settings(None, start=str(tmp_path)).max_notebook_size == 100_000_000


def test_reading_a_notebook_never_decodes_its_outputs():
    raw = picture_notebook(20_000_000)
    tracemalloc.start()
    try:
        nb = read(raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "print(x)" in nb.module
    assert "outputs" not in nb.data["cells"][1]
    # json.loads would hold the 27 MB picture string again (and nbformat's reader did).
    assert peak < 2_000_000, peak


@pytest.mark.parametrize("text", [
    '{"a": [1, 2, {"b": "c"}], "d": -1.5e3, "e": null, "f": true, "g": NaN, "h": "\\u00e9\\n"}',
    "[]", "{}", '""', "-Infinity", '[[[[]]], {"x": {}}]',
])
def test_skip_value_agrees_with_json_on_valid_text(text):
    json.loads(text)
    assert skip_value(text, 0) == len(text)


@pytest.mark.parametrize("text", [
    "[1 2]", '{"a" 1}', '{"a": 1,}', "[1,]", '"\\x"', "01", '"a\nb"', "{1: 2}", "[", '{"a": [}', "tru",
])
def test_skip_value_refuses_what_json_refuses(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(SpliceError):
        end = skip_value(text, 0)
        if end != len(text):
            raise SpliceError("extra data")


def test_invalid_json_in_the_outputs_is_still_not_a_notebook():
    raw = picture_notebook(100).replace('"output_type": "display_data"', '"output_type": "display_data",,')
    with pytest.raises(NotebookError, match=r"not valid JSON \(Expecting property name enclosed in double quotes"):
        read(raw)


def test_settings_size_limit_by_kind_of_file():
    from jaxfuse_lint.core.config import Settings

    s = Settings()
    assert s.size_limit("a.py") == s.max_file_size == 1 << 20
    assert s.size_limit(os.path.join("x", "b.IPYNB")) == s.max_notebook_size == 50 << 20
