"""The premise ledger: what a finding's claim rests on, and how each premise is known.

Every rule states its claim as named premises (its `Rule.premises`): JF402's "this construct runs
under a trace" (`runs-traced`) and "this value is a tracer" (`traced`); JF101's `runs-traced` and
"the compiler shows the harm of this form" (`harm`); JF302's `fresh-callable` and
`called-repeatedly`... Each finding carries one `Premise` per claim it makes, with its status:

- PROVEN: shown by the code, by a named inference (`inference`), from a line (`source`);
- RECORDED: seen in a recorded run of the program (`jaxfuse-lint record`: a profile);
- ASSUMED: not shown; `source` says what is taken for granted;
- DISPROVED: the code (or a run) shows the premise false.

One mechanism decides every finding's tier (`tier()`; the engine applies it, no rule does): a
finding whose premises are all proven or recorded is reported by default; one with an assumed
premise is in the preview tier (`--preview`), its message naming what is assumed, and never
carries a fix; one with a disproved premise is not reported at all.

`source` parts are text and `LineOf(node)`: the line number of a node, filled in once positions
are known (the engine renders them, as it renders messages).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Union

import libcst as cst

from jaxfuse_lint.core.calibration import unit
# The claims rules state (core/claims.py: what a finding that assumes one lacks, in a user's words).
from jaxfuse_lint.core.claims import CLAIMS

if TYPE_CHECKING:
    from jaxfuse_lint.core.calibration import Decision

PROVEN, RECORDED, ASSUMED, DISPROVED = "proven", "recorded", "assumed", "disproved"
STATUSES = (PROVEN, RECORDED, ASSUMED, DISPROVED)
DEFAULT, PREVIEW, SILENT = "default", "preview", "silent"

@dataclass(frozen=True)
class LineOf:
    """A message part rendered as the line number of a node, once positions are known."""

    node: cst.CSTNode


MessagePart = Union[str, LineOf]


@dataclass(frozen=True)
class Premise:
    """One premise of a finding: `claim` (a name in CLAIMS) about `subject`, with its status."""

    claim: str
    subject: str  # what it is about, as a message quotes it: "`x > 0`", "`step`", "axis 1 of `v`"
    status: str
    # PROVEN / DISPROVED: the named inference that shows it ("jit-decorator", "calibration-table",
    # "literal-stack"...); RECORDED: "profile"; ASSUMED: "" (nothing shows it).
    inference: str
    # Where it is shown (a line, a table, a run), or for ASSUMED what is taken for granted.
    source: tuple[MessagePart, ...] = ()

    def __post_init__(self) -> None:
        if self.claim not in CLAIMS:
            raise ValueError(f"unknown premise claim {self.claim!r}")
        if self.status not in STATUSES:
            raise ValueError(f"unknown premise status {self.status!r}")

    @property
    def name(self) -> str:
        """`traced(`x > 0`)`: the premise as the outputs name it."""
        return f"{self.claim}({self.subject})" if self.subject else self.claim

    def render_source(self, line_of) -> str:
        return "".join(p if isinstance(p, str) else str(line_of(p.node)) for p in self.source)

    def line_refs(self) -> list[cst.CSTNode]:
        return [p.node for p in self.source if isinstance(p, LineOf)]


def proven(claim: str, subject: str, inference: str, *source: MessagePart) -> Premise:
    return Premise(claim, subject, PROVEN, inference, tuple(source))


def recorded(claim: str, subject: str, *source: MessagePart) -> Premise:
    return Premise(claim, subject, RECORDED, "profile", tuple(source))


def assumed(claim: str, subject: str, *what: MessagePart) -> Premise:
    """`what`: what is taken for granted, in a few words ("assumes `x` is traced: ...")."""
    return Premise(claim, subject, ASSUMED, "", tuple(what))


def disproved(claim: str, subject: str, inference: str, *source: MessagePart) -> Premise:
    return Premise(claim, subject, DISPROVED, inference, tuple(source))


def tier(premises: Iterable[Premise]) -> str:
    """SILENT if a premise is disproved; else PREVIEW if one is assumed; else DEFAULT."""
    statuses = {p.status for p in premises}
    if DISPROVED in statuses:
        return SILENT
    if ASSUMED in statuses:
        return PREVIEW
    return DEFAULT


def assumed_premises(premises: Iterable[Premise]) -> list[Premise]:
    return [p for p in premises if p.status == ASSUMED]


def preview_parts(premises: Iterable[Premise]) -> tuple[MessagePart, ...] | None:
    """What a preview finding's message says it assumes (None where nothing is assumed)."""
    parts: list[MessagePart] = []
    for p in assumed_premises(premises):
        if parts:
            parts.append("; ")
        parts.extend(p.source or (f"assumes {p.name}",))
    return tuple(parts) if parts else None


def harm(decision: "Decision", subject: str, given: str = "") -> Premise:
    """The premise `harm(form)` as a calibration table decides it (core/calibration.py): PROVEN where
    every calibrated form the code may take shows the harm (`given`: for the sizes an assumed `size`
    premise names: "with 4,194,304 rows or more"), ASSUMED where only some do or none is calibrated
    (the decision's reason), DISPROVED where none does. A form whose verdict a real GPU's timing
    decided cites the device."""
    table = decision.table
    where = f"{table.compiler} (`{table.key}` table)" if table is not None else "the calibration tables"
    n = len(decision.rows)
    if decision.outcome == "harm":
        timed = sorted({r.timing.device for r in decision.rows if r.timing is not None})
        clock = (f"; {sum(r.timing is not None for r in decision.rows)} of them timed on the {', '.join(timed)}"
                 if timed else "")
        return proven("harm", subject, "calibration-table" if not timed else "calibration-table+gpu-timing",
                      f"{where}: the fix is better in {'all ' if n > 1 else ''}{n} calibrated "
                      f"form{'s' if n != 1 else ''} this code may take{given}, and worse in none{clock}")
    if decision.outcome == "none":
        return disproved("harm", subject, "calibration-table",
                         f"{where}: no calibrated form this code may take shows the harm")
    why = decision.why or "assumes the compiler shows the harm"
    if given:
        why = why.replace(" this code may take", f" this code may take{given}", 1)
    return assumed("harm", subject, why)


def size(model, fn, subject: str, n: int, how: str = "", origin=None) -> Premise:
    """The premise `size(axis)` where the shape analysis knows the size, proven by the construct
    `origin` names (model/size_origin.py: "a `jnp.stack` of 3 arrays on line 17", an assert, a
    jaxtyping annotation, the calls of a nested function), RECORDED where a recorded run's shapes
    gave it (`check --profile`)."""
    text = f"size {n:,}{how}"
    if origin is not None:
        if origin.recorded:
            return recorded("size", subject, f"{text}: ", *origin.parts)
        return proven("size", subject, origin.inference, f"{text}: ", *origin.parts)
    runtime = getattr(model, "runtime", None)
    if runtime is not None and fn in getattr(runtime, "shapes_used", ()):
        return recorded("size", subject, f"{text}, as every recorded call had it ({runtime.profile_path or 'profile'})")
    return proven("size", subject, "shape-analysis", text)


@dataclass(frozen=True)
class SizeClaim:
    """A size a calibration table's decision reads (`feature`, "rows" / "size" / "points"...), about
    `subject` ("the rows of `v`"): `known`, its premise where the code shows it (`size()`); None
    where it does not. `required`: a premise is stated even where the answer does not depend on it
    (False where the rule states another `size` premise)."""

    feature: str
    subject: str
    known: Premise | None = None
    required: bool = True


def calibrated(decision: "Decision", subject: str, sizes: Iterable[SizeClaim] = ()) -> tuple[Premise, ...]:
    """The premises of a finding a calibration table decides: `harm(subject)` and one `size` premise
    per size the table reads (`sizes`):

    - a size the code shows: its premise (proven from a line, or recorded);
    - a size it does not show that the table's answer depends on: ASSUMED, saying from which size on
      the table shows the harm ("harm from 4,194,304 rows"); the harm premise is then decided for the
      forms from those sizes on (proven where they all show it, "with 4,194,304 rows or more");
    - a size it does not show that the answer does not depend on (the same at every calibrated
      size): proven by the table, which names the calibrated range.
    """
    out: list[Premise] = []
    deciding = decision
    given: list[str] = []
    open_features = decision.open_features()
    table = decision.table
    for claim in sizes:
        if claim.known is not None:
            out.append(claim.known)
            continue
        threshold = decision.threshold(claim.feature) if claim.feature in open_features else None
        if threshold is not None and table is not None:
            amount = f"{threshold.value:,}" if isinstance(threshold.value, int) else str(threshold.value)
            out.append(assumed("size", claim.subject, f"{claim.subject}: not shown; harm from {amount} {threshold.unit}"))
            values = [v for v in table.features.get(claim.feature, ()) if isinstance(v, (int, float))
                      and v >= threshold.value]
            deciding = deciding.given(claim.feature, values)
            given.append(f" with {amount} {threshold.unit} or more")
            continue
        if claim.feature in open_features:
            out.append(assumed("size", claim.subject, f"{claim.subject}: not shown"))
            continue
        values = sorted({r.features.get(claim.feature) for r in decision.rows
                         if isinstance(r.features.get(claim.feature), (int, float))})
        if decision.outcome in ("harm", "some") and values and table is not None:
            span = f"{values[0]:,}" if len(values) == 1 else f"{values[0]:,} to {values[-1]:,}"
            out.append(proven("size", claim.subject, "calibration-table",
                              f"not shown, and the table's answer does not depend on it: the same at every "
                              f"calibrated size this code may take ({span} {unit(claim.feature, table)})"))
        elif claim.required:
            out.append(assumed("size", claim.subject, f"{claim.subject}: not shown"))
    return (harm(deciding, subject, "".join(given)), *out)


__all__ = ["ASSUMED", "CLAIMS", "DEFAULT", "DISPROVED", "PREVIEW", "PROVEN", "RECORDED", "SILENT", "STATUSES",
           "LineOf", "MessagePart", "Premise", "SizeClaim", "assumed", "assumed_premises", "calibrated", "disproved",
           "harm", "preview_parts", "proven", "recorded", "size", "tier"]
