"""A verdict claims only changes that matter, and the figures it prints show them (issue 36, item 5).

`verify` said `proved … 512.0 KiB → 512.0 KiB temporaries` for 524,548 B → 524,544 B: a 4-byte
change (one scalar) counted as better. Byte figures now change only beyond both thresholds:
more than 64 B and more than 1% of the larger figure (docs/verify.md); counts are exact.
"""
from __future__ import annotations

from types import SimpleNamespace

from jaxfuse_lint.verify.api import BYTES_NOISE_ABSOLUTE, BYTES_NOISE_RELATIVE, Metric, decide, metric_for_bytes
from jaxfuse_lint.verify.report import format_bytes, render_text, summary_line


def temporaries(before: int, after: int) -> Metric:
    return metric_for_bytes("temp_bytes", "temporaries", before, after, deciding=True)


def result(*metrics: Metric):
    found = {m.key: m for m in metrics}
    return SimpleNamespace(verdict=decide(metrics, None), error=None, metrics=list(metrics), numerics=None,
                           backend_name="GPU (H100, deviceless)", metric=found.get, notes=[], func="f",
                           before=None, after=None, fixes=[], args=[], static={}, environment={},
                           graphs=[], seed=0, summary=lambda: "")


def test_a_few_bytes_are_not_a_change():
    kernels = Metric("kernels", "kernels", 10, 10, "count", True)
    r = result(kernels, temporaries(524_548, 524_544))
    assert temporaries(524_548, 524_544).change == "same"
    assert r.verdict == "unchanged"
    assert summary_line(r) == "on GPU (H100, deviceless): no measurable change (10 kernels, 512.0 KiB temporaries)"


def test_the_thresholds():
    assert (BYTES_NOISE_ABSOLUTE, BYTES_NOISE_RELATIVE) == (64, 0.01)
    assert temporaries(524_288, 0).change == "better"  # a temporary gone
    assert temporaries(129, 0).change == "better"  # a small one gone: more than 64 B
    assert temporaries(0, 40).change == "same"  # a scalar or two
    assert temporaries(1_000_000, 1_009_000).change == "same"  # under 1%
    assert temporaries(1_000_000, 1_011_000).change == "worse"
    assert decide([Metric("kernels", "kernels", 2, 1, "count", True), temporaries(1000, 1030)], None) == "proved"


def test_a_claimed_change_shows_in_the_figures():
    claimed = Metric("temp_bytes", "temporaries", 524_548, 524_544, "bytes", True)  # no threshold: exact
    r = result(claimed)
    assert r.verdict == "proved"
    assert summary_line(r) == "on GPU (H100, deviceless): 524,548 B → 524,544 B temporaries"
    row = next(line for line in render_text(r).splitlines() if line.strip().startswith("temporaries"))
    assert "524,548 B" in row and "524,544 B" in row


def test_bytes_from_1000_to_1023_of_a_unit_read_as_numbers():
    assert format_bytes(1005 * 1024) == "1005 KiB"
    assert format_bytes(512 * 1024) == "512.0 KiB" and format_bytes(2_162_756) == "2.06 MiB"
