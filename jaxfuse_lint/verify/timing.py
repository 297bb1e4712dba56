"""Wall-clock of both versions on the current backend: what users feel.

Each version is warmed up (compiled, caches filled, the device busy), then
the two are run alternately, `repeat` times each, every run ended with
`jax.block_until_ready` so that asynchronous dispatch does not hide the
device time. Alternating spreads drift (clock boosting, another process on
the machine) over both versions instead of charging it to one of them.

A difference counts only beyond the noise: the medians must differ by more
than the larger of the two interquartile ranges and by more than
`MIN_RELATIVE_CHANGE` of the original median. Anything within that is "same".
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.loader import describe_exception

DEFAULT_REPEAT = 30
DEFAULT_WARMUP = 3
# Below this relative change of the median nothing is claimed, however tight the spread.
MIN_RELATIVE_CHANGE = 0.05


@dataclass
class Timing:
    """Wall-clock seconds of `runs` calls of one version."""

    runs: list[float] = field(default_factory=list)
    mode: str = "compiled"  # "compiled": the compiled executable; "call": FUNC called as a driver

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def quartiles(self) -> tuple[float, float]:
        if len(self.runs) < 2:
            return self.runs[0], self.runs[0]
        q = statistics.quantiles(self.runs, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def spread(self) -> float:
        """The interquartile range, in seconds."""
        low, high = self.quartiles
        return high - low

    def to_json(self) -> dict[str, Any]:
        low, high = self.quartiles
        return {
            "mode": self.mode,
            "runs": len(self.runs),
            "median_seconds": self.median,
            "p25_seconds": low,
            "p75_seconds": high,
            "min_seconds": min(self.runs),
            "max_seconds": max(self.runs),
        }


def noise(before: Timing, after: Timing) -> float:
    """The smallest difference of medians, in seconds, that counts as a change."""
    return max(before.spread, after.spread, MIN_RELATIVE_CHANGE * before.median)


# How one run is timed: (the version's label, the call) -> seconds. `wall_clock` measures it; a test
# injects a timer of its own (the verdict's logic is then checked without a machine's load in it).
Timer = Callable[[str, Callable[[], Any]], float]


def wall_clock(label: str, call: Callable[[], Any]) -> float:
    """The wall-clock seconds of one call, up to `jax.block_until_ready` of what it returns."""
    import jax

    start = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - start


def time_versions(
    calls: Sequence[Callable[[], Any]],
    *,
    repeat: int = DEFAULT_REPEAT,
    warmup: int = DEFAULT_WARMUP,
    labels: Sequence[str] = ("before", "after"),
    mode: str = "compiled",
    timer: Timer | None = None,
) -> list[Timing]:
    """Time each zero-argument callable `repeat` times, alternating between them after `warmup` runs each.
    `timer` times one run (default: `wall_clock`)."""
    if repeat < 1:
        raise VerifyError("--repeat must be at least 1")
    timings = [Timing(mode=mode) for _ in calls]
    measure = timer or wall_clock

    def run(i: int) -> float:
        try:
            return measure(labels[i], calls[i])
        except Exception as exc:  # noqa: BLE001 - user code failing while timed is reported
            raise VerifyError(f"timing the {labels[i]} version raised {describe_exception(exc)}") from None

    for i in range(len(calls)):
        for _ in range(warmup):
            run(i)
    for _ in range(repeat):
        for i in range(len(calls)):
            timings[i].runs.append(run(i))
    return timings


def format_time(seconds: float | None) -> str:
    """56e-6 -> "56.0 µs", 0.001927 -> "1.93 ms", 2.5 -> "2.50 s" (three significant digits)."""
    if seconds is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale or unit == "µs":
            value = seconds / scale
            text = f"{value:.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"
            return f"{text} {unit}"
    raise AssertionError("unreachable")
