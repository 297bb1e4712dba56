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


def harm(decision: "Decision", subject: str) -> Premise:
    """The premise `harm(form)` as a calibration table decides it (core/calibration.py): PROVEN where
    every calibrated form the code may take shows the harm, ASSUMED where only some do or none is
    calibrated (the decision's reason), DISPROVED where none does."""
    table = decision.table
    where = f"{table.compiler} (`{table.key}` table)" if table is not None else "the calibration tables"
    n = len(decision.rows)
    if decision.outcome == "harm":
        return proven("harm", subject, "calibration-table",
                      f"{where}: the fix is better in {'all ' if n > 1 else ''}{n} calibrated "
                      f"form{'s' if n != 1 else ''} this code may take, and worse in none")
    if decision.outcome == "none":
        return disproved("harm", subject, "calibration-table",
                         f"{where}: no calibrated form this code may take shows the harm")
    return assumed("harm", subject, decision.why or "assumes the compiler shows the harm")


def size(model, fn, subject: str, n: int, how: str = "") -> Premise:
    """The premise `size(axis)` where the shape analysis knows the size: RECORDED where it read a
    recorded run's shapes for `fn` (`check --profile`), else PROVEN from the code (literal
    constructors, stack and concatenate counts, unpacking, declared shapes: model/shape_*.py)."""
    text = f"size {n}{how}"
    runtime = getattr(model, "runtime", None)
    if runtime is not None and fn in getattr(runtime, "shapes_used", ()):
        return recorded("size", subject, f"{text}, as every recorded call had it ({runtime.profile_path or 'profile'})")
    return proven("size", subject, "shape-analysis", text)


__all__ = ["ASSUMED", "CLAIMS", "DEFAULT", "DISPROVED", "PREVIEW", "PROVEN", "RECORDED", "SILENT", "STATUSES",
           "LineOf", "MessagePart", "Premise", "assumed", "harm", "assumed_premises", "disproved", "preview_parts",
           "proven", "recorded", "size", "tier"]
