"""In the notebook: `jaxfuse_lint.show(fn, *args)` and `jaxfuse_lint.compare(f, g, *args)`.

    import jaxfuse_lint
    jaxfuse_lint.show(f_sum_jax, x)            # kernel graph (inline SVG) + per-line table
    jaxfuse_lint.compare(f_sum_jax, f_sum_explicit, x)   # side by side, with the verifier's verdict

Both compile the function with `jax.jit` for the example arguments (arrays,
pytrees or `jax.ShapeDtypeStruct`s; keyword arguments are static) and return
an object Jupyter displays (`_repr_html_`; `show`'s also has `_repr_svg_`),
whose plain `repr` is the text report. Nothing is run except to compare the
two versions' results (`compare`, on the example arguments, or on seeded random
inputs where only shapes were given).
"""
from __future__ import annotations

import html
from typing import Any, Callable

from jaxfuse_lint.runtime.explain import Explanation, render_html_fragment, render_text
from jaxfuse_lint.verify.errors import VerifyError
from jaxfuse_lint.verify.report import shown


def _name(fn: Callable[..., Any]) -> str:
    import inspect

    fn = inspect.unwrap(fn)
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _explain(fn: Callable[..., Any], args: tuple[Any, ...], static: dict[str, Any]) -> Explanation:
    from jaxfuse_lint.runtime.explain import explain_function

    # A jitted function is lowered as it is (its static arguments are its own); its lines
    # are those of the Python function it wraps.
    return explain_function(fn, [], static, target=_name(fn), example_args=args)


class Shown:
    """What `show` returns: one function's kernels and their source lines, for Jupyter."""

    def __init__(self, explanation: Explanation) -> None:
        self.explanation = explanation
        self._svg: str | None = None

    @property
    def attribution(self) -> Any:
        return self.explanation.attribution

    @property
    def svg(self) -> str:
        """The kernel graph, each kernel labelled by the source lines it fuses."""
        if self._svg is None:
            from jaxfuse_lint.verify.graph_render import graph_svg

            graph = self.explanation.graph()
            self._svg = graph_svg(graph) if graph is not None else ""
        return self._svg

    def _repr_html_(self) -> str:
        return render_html_fragment(self.explanation, svg=self.svg)

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return render_text(self.explanation)

    def to_json(self) -> dict[str, Any]:
        return self.explanation.to_json()


def show(fn: Callable[..., Any], *example_args: Any, **static_args: Any) -> Shown:
    """Compile `fn(*example_args, **static_args)` with jax.jit and show its kernels by source line."""
    try:
        return Shown(_explain(fn, example_args, static_args))
    except VerifyError as exc:
        raise ValueError(str(exc)) from None


class Compared:
    """What `compare` returns: two versions side by side, with the verifier's verdict."""

    def __init__(self, result: Any, before: Shown, after: Shown) -> None:
        self.result = result  # jaxfuse_lint.verify.VerifyResult
        self.before = before
        self.after = after

    @property
    def verdict(self) -> str:
        return self.result.verdict

    def summary(self) -> str:
        return self.result.summary()

    def _metric_rows(self) -> list[tuple[str, str, str, str]]:
        return [(m.label, *shown(m), m.change) for m in self.result.metrics]

    def __repr__(self) -> str:
        lines = [f"{self.verdict}: {self.summary()}", ""]
        width = max((len(r[0]) for r in self._metric_rows()), default=0)
        for label, before, after, change in self._metric_rows():
            lines.append(f"  {label:<{width}}  {before:>12} → {after:<12} {change}")
        if self.result.numerics is not None:
            lines.append(f"  results: {self.result.numerics.detail}")
        lines += ["", "before:", repr(self.before), "after:", repr(self.after)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        color = {"proved": "#1b7f3a", "regressed": "#b3261e", "changed results": "#b3261e"}.get(self.verdict, "#555")
        cell = "padding:1px 8px;border-bottom:1px solid #ddd;text-align:left"
        rows = "".join(
            f"<tr><td style=\"{cell}\">{esc(a)}</td><td style=\"{cell}\">{esc(b)}</td>"
            f"<td style=\"{cell}\">{esc(c)}</td><td style=\"{cell}\">{esc(d)}</td></tr>"
            for a, b, c, d in self._metric_rows())
        numerics = (f"<p style=\"font-family:sans-serif\">results: {esc(self.result.numerics.detail)}</p>"
                    if self.result.numerics is not None else "")
        return (
            f"<div class=\"jaxfuse-compare\"><h3 style=\"font-family:sans-serif;color:{color}\">"
            f"{esc(self.verdict)}: {esc(self.summary())}</h3>"
            f"<table style=\"border-collapse:collapse;font-family:monospace;font-size:12px\"><tr>"
            f"<th style=\"{cell}\">metric</th><th style=\"{cell}\">before</th><th style=\"{cell}\">after</th>"
            f"<th style=\"{cell}\">change</th></tr>{rows}</table>{numerics}"
            f"<div style=\"display:flex;gap:24px;align-items:flex-start\">"
            f"<div style=\"flex:1;min-width:0\">{self.before._repr_html_()}</div>"
            f"<div style=\"flex:1;min-width:0\">{self.after._repr_html_()}</div></div></div>"
        )


def compare(f: Callable[..., Any], g: Callable[..., Any], *example_args: Any, **static_args: Any) -> Compared:
    """Compile `f` and `g` for the same arguments and say whether `g` is better, as `verify` does."""
    import jax

    from jaxfuse_lint.verify.api import Side, VerifyResult, build_metrics, decide
    from jaxfuse_lint.verify.numerics import compare_outputs

    try:
        before = _explain(f, example_args, static_args)
        after = _explain(g, example_args, static_args)
        inputs = _concrete_inputs(example_args)
        outputs = []
        for explanation in (before, after):
            try:
                outputs.append(jax.block_until_ready(explanation.measurement.compiled(*inputs)))
            except Exception as exc:  # noqa: BLE001 - the user's function failing at run time
                raise VerifyError(f"running {explanation.target} raised {type(exc).__name__}: {exc}") from None
    except VerifyError as exc:
        raise ValueError(str(exc)) from None
    sides = [Side(label, e.target, e.measurement) for label, e in (("before", before), ("after", after))]
    result = VerifyResult(verdict="error", func=before.func, args=list(before.args),
                          static={k: v for k, v in static_args.items()}, before=sides[0], after=sides[1],
                          environment=dict(before.environment))
    result.numerics = compare_outputs(outputs[0], outputs[1])
    result.metrics = build_metrics(sides[0], sides[1])
    result.verdict = decide(result.metrics, result.numerics)
    return Compared(result, Shown(before), Shown(after))


def _concrete_inputs(args: tuple[Any, ...]) -> list[Any]:
    """The example arguments, with seeded random arrays where only a shape was given."""
    import jax
    import numpy as np

    from jaxfuse_lint.verify.numerics import random_inputs
    from jaxfuse_lint.verify.shapes import ArgSpec

    counter = iter(range(1 << 30))

    def concrete(leaf: Any) -> Any:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            spec = ArgSpec(np.dtype(leaf.dtype).name, tuple(leaf.shape))
            return random_inputs([spec], next(counter))[0]
        return leaf

    return [jax.tree_util.tree_map(concrete, a) for a in args]
