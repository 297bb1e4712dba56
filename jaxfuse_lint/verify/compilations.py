"""Count XLA compilations over a steady-state call of a driver function.

Some costs are not in any kernel: `jax.jit(lambda ...)` inside a Python loop
(JF301) or a jit created on every call (JF302) recompiles each time it runs.
The driver (the function under test, called eagerly, not under jit) is run
once to warm every cache, then a second time while `jax.monitoring` counts
backend compilations. Anything compiled in that second call will be compiled
on every call in production too.

During the second call `jax_explain_cache_misses` is switched on and what JAX
logs about each miss is collected: it names the line that defined the
function being re-traced.
"""
from __future__ import annotations

import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.loader import describe_exception, user_location
from jaxfuse_lint.verify.measure import jax_config

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


@dataclass
class CompilationCount:
    first_call: int  # compilations while warming up
    steady_state: int  # compilations during the second call: paid on every call
    by_function: dict[str, int] = field(default_factory=dict)  # second call, by jitted name
    cache_misses: list[str] = field(default_factory=list)  # jax_explain_cache_misses, deduplicated
    seconds: float = 0.0  # wall time of the second call
    outputs: Any = None  # the second call's result, for the numerics check

    def to_json(self) -> dict[str, Any]:
        return {
            "first_call": self.first_call,
            "steady_state": self.steady_state,
            "by_function": self.by_function,
            "cache_misses": self.cache_misses,
            "seconds": round(self.seconds, 4),
        }


class _CompileCounter:
    """A jax.monitoring listener that can be switched off (older jax cannot unregister)."""

    def __init__(self) -> None:
        self.active = False
        self.names: Counter[str] = Counter()

    def __call__(self, event: str, duration: float, **kwargs: Any) -> None:
        if self.active and event == BACKEND_COMPILE_EVENT:
            self.names[str(kwargs.get("fun_name", "?"))] += 1


class _LogCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a broken log record must not break verification
            pass


def count_compilations(
    func: Callable[..., Any],
    args: Sequence[Any],
    static: Mapping[str, Any],
    *,
    filename: str,
    label: str,
) -> CompilationCount:
    """Call `func(*args, **static)` twice; count the compilations of the second call."""
    import jax.monitoring as monitoring

    counter = _CompileCounter()
    monitoring.register_event_duration_secs_listener(counter)
    try:
        counter.active = True
        _call(func, args, static, filename, label, "first")
        counter.active = False
        first = sum(counter.names.values())
        counter.names.clear()

        jax_logger = logging.getLogger("jax")
        collector = _LogCollector()
        old_propagate = jax_logger.propagate
        jax_logger.addHandler(collector)
        # The explanations are collected for the report, not printed over it.
        jax_logger.propagate = False
        try:
            with jax_config(jax_explain_cache_misses=True):
                counter.active = True
                t0 = time.perf_counter()
                outputs = _call(func, args, static, filename, label, "second")
                seconds = time.perf_counter() - t0
                counter.active = False
        finally:
            jax_logger.removeHandler(collector)
            jax_logger.propagate = old_propagate
    finally:
        counter.active = False
        unregister = getattr(monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            try:
                unregister(counter)
            except (AssertionError, ValueError):
                pass
    return CompilationCount(
        first_call=first,
        steady_state=sum(counter.names.values()),
        by_function=dict(sorted(counter.names.items())),
        cache_misses=summarize_cache_misses(collector.messages),
        seconds=seconds,
        outputs=outputs,
    )


def _call(func, args, static, filename: str, label: str, which: str) -> Any:
    import jax

    try:
        return jax.block_until_ready(func(*args, **static))
    except Exception as exc:  # noqa: BLE001 - user code
        raise VerifyError(
            f"{user_location(exc, filename)}: the {which} call of the {label} version raised "
            f"{describe_exception(exc)}"
        ) from None


def summarize_cache_misses(messages: Sequence[str], limit: int = 5) -> list[str]:
    """One line per distinct explanation, with how often it repeated."""
    counts: Counter[str] = Counter()
    order: list[str] = []
    for message in messages:
        if "CACHE MISS" not in message:
            continue
        # Object ids differ between repeats of the same miss; they say nothing to the reader.
        line = re.sub(r"\bid=\d+", "id=…", " ".join(message.split()))
        if line not in counts:
            order.append(line)
        counts[line] += 1
    out = []
    for line in order[:limit]:
        text = line if len(line) <= 400 else line[:397] + "..."
        out.append(f"{text} (×{counts[line]})" if counts[line] > 1 else text)
    if len(order) > limit:
        out.append(f"... and {len(order) - limit} more distinct cache misses")
    return out
