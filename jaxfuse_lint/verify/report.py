"""`verify` results as text (side by side) or JSON."""
from __future__ import annotations

import json
from typing import Any

# Metrics shown in the one-line summary, in this order. Bytes accessed is a
# cost-model estimate: it is named there only when it is the whole story.
_SUMMARY_ORDER = ("kernels", "launches", "temp_bytes", "folded_constant_bytes", "compilations")
_SUMMARY_NOUN = {
    "kernels": "kernels",
    "launches": "launches per run",
    "temp_bytes": "temporaries",
    "folded_constant_bytes": "folded constants",
    "compilations": "compilations per call",
    "bytes_accessed": "bytes accessed",
}


def format_bytes(n: float | None) -> str:
    """1048576 -> "1.0 MiB", 2162756 -> "2.06 MiB", 0 -> "0 B" (three significant digits)."""
    if n is None:
        return "n/a"
    n = float(n)
    if abs(n) < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024.0
        if abs(n) < 1024 or unit == "TiB":
            text = f"{n:.3g}"
            if "." not in text and "e" not in text:
                text += ".0"
            return f"{text} {unit}"
    raise AssertionError("unreachable")


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "bytes":
        return format_bytes(value)
    if unit == "seconds":
        return f"{value:.3f} s"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def summary_line(result: Any) -> str:
    if result.verdict == "error":
        return f"verification failed: {result.error}"
    prefix = f"on {result.backend_name}"
    if result.verdict == "changed results":
        return f"{prefix}: results differ: {result.numerics.detail}"
    parts = []
    for key in _SUMMARY_ORDER:
        m = result.metric(key)
        if m is not None and m.change in ("better", "worse"):
            # Launches repeat the kernel count when both moved together.
            if key == "launches" and _moved_alike(result.metric("kernels"), m):
                continue
            parts.append(f"{format_value(m.before, m.unit)} → {format_value(m.after, m.unit)} {_SUMMARY_NOUN[key]}")
    accessed = result.metric("bytes_accessed")
    if accessed is not None and (accessed.change == "worse" or (accessed.change == "better" and not parts)):
        parts.append(
            f"{format_value(accessed.before, 'bytes')} → {format_value(accessed.after, 'bytes')} bytes accessed"
        )
    if parts:
        return f"{prefix}: " + ", ".join(parts)
    kernels, temps = result.metric("kernels"), result.metric("temp_bytes")
    if kernels is not None and temps is not None:
        return (f"{prefix}: no measurable change ({format_value(kernels.after, 'count')} kernels, "
                f"{format_bytes(temps.after)} temporaries)")
    return f"{prefix}: no measurable change"


def _moved_alike(kernels: Any, launches: Any) -> bool:
    return (
        kernels is not None and kernels.before == launches.before and kernels.after == launches.after
    )


def render_json(result: Any) -> str:
    return json.dumps(result.to_json(), indent=2, default=str)


def render_text(result: Any) -> str:
    lines: list[str] = []
    before, after = result.before, result.after
    lines.append(f"verify {result.func}")
    if before is not None and after is not None:
        lines.append(f"  before: {before.target}")
        lines.append(f"  after:  {after.target}")
    if result.fixes:
        lines.append("  fixes applied:")
        for fix in result.fixes:
            lines.append(f"    {fix['row']}:{fix['column']} {fix['code']} {fix['message']}")
    if result.args or result.static:
        args = ", ".join(result.args) or "(none)"
        static = ", ".join(f"{k}={v!r}" for k, v in result.static.items())
        lines.append(f"  args:   {args}" + (f"; static {static}" if static else ""))
    env = result.environment
    if env:
        lines.append(
            f"  jax {env.get('jax')}, jaxlib {env.get('jaxlib')}, backend {env.get('backend')} "
            f"({env.get('device')}), XLA_FLAGS={env.get('xla_flags') or '(unset)'}"
            + (", x64" if env.get("x64") else "")
        )
    for note in result.notes:
        lines.append(f"  note: {note}")
    if result.metrics:
        lines.append("")
        rows = [("", "before", "after", "")]
        for m in result.metrics:
            mark = "" if m.change in ("same", "n/a") else m.change
            if not m.deciding:
                mark = (mark + " " if mark else "") + "(info)"
            rows.append((m.label, format_value(m.before, m.unit), format_value(m.after, m.unit), mark))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            lines.append(f"  {r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}".rstrip())
    for side in (before, after):
        if side is None:
            continue
        if side.measurement is not None:
            kinds = ", ".join(f"{kind} ×{n}" for kind, n in side.measurement.kernels.by_kind.items()) or "none"
            lines.append(f"  kernels {side.label}: {kinds}")
        if side.lowering_error:
            lines.append(f"  not jittable as a whole ({side.label}): {side.lowering_error}")
    detector_lines = []
    for side in (before, after):
        if side is None:
            continue
        if side.measurement is not None:
            for report in side.measurement.captured_constants:
                detector_lines.append(f"    {side.label}: jax_captured_constants_warn_bytes: {report}")
        if side.compilations is not None:
            by_fn = ", ".join(f"{k} ×{v}" for k, v in side.compilations.by_function.items())
            if by_fn:
                detector_lines.append(f"    {side.label}: compiled on the second call: {by_fn}")
            for miss in side.compilations.cache_misses:
                detector_lines.append(f"    {side.label}: jax_explain_cache_misses: {miss}")
    if detector_lines:
        lines.append("  jax says:")
        lines += detector_lines
    if result.numerics is not None:
        lines.append(f"  numerics (seed {result.seed}): {result.numerics.detail}")
    for path in result.graphs:
        lines.append(f"  graph: {path}")
    lines.append(f"verdict: {result.verdict} — {result.summary()}")
    return "\n".join(lines) + "\n"
