"""`verify` results as text (side by side) or JSON."""
from __future__ import annotations

import json
from typing import Any

# The deciding metrics, in the order the one-line summary names those that moved.
_SUMMARY_ORDER = ("kernels", "launches", "temp_bytes", "folded_constant_bytes", "compilations", "wall_seconds")
_SUMMARY_NOUN = {
    "kernels": "kernels",
    "launches": "launches per run",
    "temp_bytes": "temporaries",
    "folded_constant_bytes": "folded constants",
    "compilations": "compilations per call",
    "wall_seconds": "wall-clock",
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
            if abs(n) >= 1000:  # 1000-1023 of a unit: `.3g` would write 1e+03
                return f"{n:.0f} {unit}"
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
    if unit == "time":
        from jaxfuse_lint.verify.timing import format_time

        return format_time(value)
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def summary_line(result: Any) -> str:
    if result.verdict == "error":
        return f"verification failed: {result.error}"
    if not result.metrics and not result.numerics:
        return result.notes[-1] if result.notes else "nothing was measured"
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
            shown_before, shown_after = shown(m)
            parts.append(f"{shown_before} → {shown_after} {_SUMMARY_NOUN[key]}")
    if parts:
        return f"{prefix}: " + ", ".join(parts)
    kernels, temps = result.metric("kernels"), result.metric("temp_bytes")
    if kernels is not None and temps is not None:
        count = format_value(kernels.after, "count")
        return (f"{prefix}: no measurable change ({count} kernel{'' if count == '1' else 's'}, "
                f"{format_bytes(temps.after)} temporaries)")
    return f"{prefix}: no measurable change"


def shown(m: Any) -> tuple[str, str]:
    """A metric's two figures as printed; exact where rounding would hide a change it claims."""
    before, after = format_value(m.before, m.unit), format_value(m.after, m.unit)
    if before == after and m.change in ("better", "worse"):
        exact = "{:.6f} s" if m.unit in ("seconds", "time") else "{:,.0f} B" if m.unit == "bytes" else "{:g}"
        before, after = exact.format(m.before), exact.format(m.after)
    return before, after


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
    inside = [f for f in result.fixes if f.get("in_function", True)]
    if inside:
        lines.append(f"  fixes applied in {result.func}:")
        for fix in inside:
            cell = f"cell {fix['cell']}:" if "cell" in fix else ""
            lines.append(f"    {cell}{fix['row']}:{fix['column']} {fix['code']} {fix['message']}")
    if len(inside) < len(result.fixes):
        elsewhere = len(result.fixes) - len(inside)
        lines.append(f"  ({elsewhere} more fix{'es' if elsewhere != 1 else ''} elsewhere in the file)")
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
            shown_before, shown_after = shown(m)
            rows.append((m.label, shown_before, shown_after, mark))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            lines.append(f"  {r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}".rstrip())
    for side in (before, after):
        if side is None:
            continue
        if side.measurement is not None:
            kinds = ", ".join(f"{kind} ×{n}" for kind, n in side.measurement.kernels.by_kind.items()) or "none"
            lines.append(f"  kernels {side.label}: {kinds}")
        if side.timing is not None:
            from jaxfuse_lint.verify.timing import format_time

            low, high = side.timing.quartiles
            what = "per call of FUNC as a driver" if side.timing.mode == "call" else "per run"
            lines.append(f"  wall-clock {side.label}: median {format_time(side.timing.median)} {what} "
                         f"(interquartile {format_time(low)}–{format_time(high)}, {len(side.timing.runs)} runs)")
        if side.lowering_error:
            # The first sentence says what failed and where; the JSON report has all of it.
            first = side.lowering_error.split(". ")[0]
            first = first if len(first) <= 200 else first[:197] + "..."
            lines.append(f"  not jittable as a whole ({side.label}; verified as a driver only): {first}")
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
