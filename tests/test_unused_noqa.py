"""JF901 unused-noqa (ruff's RUF100): opt-in, only jaxfuse-lint's own codes, a safe fix."""
from __future__ import annotations

from dataclasses import replace

from jaxfuse_lint.core.config import OPT_IN_PREFIXES, Settings
from jaxfuse_lint.engine.pipeline import check_source, fix_source
from jaxfuse_lint.engine.noqa import add_noqa
from jaxfuse_lint.rules import all_rules

SRC = (
    "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x, y, z):\n"
    "    v = jnp.stack([x, y, z], axis=-1)\n"
    "    w = x + 1  # noqa: JF101, E501\n"
    "    return w * v * jnp.sum(v * v, axis=-1, keepdims=True)  # noqa: JF101\n"
)


def on(**kw) -> Settings:
    return replace(Settings(), extend_select=("JF901",), **kw)


def test_not_selected_by_jf_but_by_name_prefix_or_all():
    assert not Settings().is_enabled("JF901")
    assert on().is_enabled("JF901")
    assert replace(Settings(), select=("JF9",)).is_enabled("JF901")
    assert replace(Settings(), select=("ALL",)).is_enabled("JF901")
    assert [d.code for d in check_source(SRC, "t.py", Settings()).diagnostics] == []


def test_opt_in_rules_and_the_config_prefixes_agree():
    for rule in all_rules():
        assert rule.default_enabled == (not rule.code.startswith(OPT_IN_PREFIXES)), rule.code


def test_reports_the_unused_code_only_and_fixes_it():
    [d] = check_source(SRC, "t.py", on()).diagnostics
    assert (d.code, d.location.row, d.location.column) == ("JF901", 8, 16)
    assert d.message == "Unused `noqa` directive (unused: `JF101`)"
    assert d.fix is not None and d.fix.applicability.value == "safe"
    fixed = fix_source(SRC, "t.py", on())
    assert "    w = x + 1  # noqa: E501\n" in fixed.source
    assert "return w * v * jnp.sum(v * v, axis=-1, keepdims=True)  # noqa: JF101\n" in fixed.source
    assert fixed.remaining == [] and [x.code for x in fixed.fixed] == ["JF901"]


def test_codes_of_rules_not_run_are_left_alone():
    settings = replace(Settings(), select=("JF2", "JF901"))  # JF101 did not run: its noqa may be needed
    assert check_source(SRC, "t.py", settings).diagnostics == []


def test_unfixable_keeps_the_report_without_a_fix():
    [d] = check_source(SRC, "t.py", on(unfixable=("JF901",))).diagnostics
    assert d.fix is None


def test_add_noqa_merges_and_skips_lines_inside_strings():
    text = 'x = 1  # noqa: E501\ny = """a\nb"""\nz = 2  # type: ignore\n'
    out, n, skipped = add_noqa(text, {1: {"JF101"}, 2: {"JF201"}, 4: {"JF203", "JF101"}})
    assert n == 2 and skipped == [2]
    assert out == 'x = 1  # noqa: E501, JF101\ny = """a\nb"""\nz = 2  # type: ignore  # noqa: JF101, JF203\n'
