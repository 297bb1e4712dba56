"""What a rule is: a code, a name, its documentation and examples, and a check over the model."""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterator

import libcst as cst

from jaxfuse_lint.model.premises import LineOf, MessagePart, Premise, preview_parts, tier
from jaxfuse_lint.model.traced import reason_parts  # noqa: F401  (the rules' spelling)

if TYPE_CHECKING:
    from jaxfuse_lint.core.config import Settings
    from jaxfuse_lint.model import SemanticModel
    from jaxfuse_lint.core.targets import Claim


@dataclass(eq=False)
class Violation:
    node: cst.CSTNode
    message: tuple[MessagePart, ...]
    # What the rule found, for the codemod that rewrites it (nodes, sizes, axes...).
    data: dict[str, Any] = field(default_factory=dict)
    # Optional: a node whose range is the diagnostic's (default: node).
    range_node: cst.CSTNode | None = None
    # What the finding's claim rests on: one Premise per claim the rule states (`Rule.premises`),
    # each proven, recorded, assumed or disproved (model/premises.py). The engine decides the tier
    # from them, for every rule alike: default where none is assumed, preview (named in the message,
    # no fix) where one is, not reported where one is disproved.
    premises: tuple[Premise, ...] = ()
    # Set when no fix may be offered for this finding although the rule has a codemod: why (the
    # codemod cannot write this form safely, say).
    no_fix: str | None = None

    @property
    def preview(self) -> tuple[MessagePart, ...] | None:
        """What the finding assumes (its assumed premises), or None: read-only, from the premises."""
        return preview_parts(self.premises)

    @property
    def tier(self) -> str:
        return tier(self.premises)

    def with_premises(self, *premises: Premise) -> "Violation":
        """The same finding with more premises (in place: findings are built once and returned)."""
        self.premises = (*self.premises, *premises)
        return self

    def render(self, line_of) -> str:
        return "".join(p if isinstance(p, str) else str(line_of(p.node)) for p in self.message)

    def line_refs(self) -> list[cst.CSTNode]:
        refs = [p.node for p in self.message if isinstance(p, LineOf)]
        for premise in self.premises:
            refs += premise.line_refs()
        return refs


class Rule:
    """One rule. Subclasses set the class attributes and implement `check`.

    `doc` is the rule's page (ruff's sections: What it does, Why is this bad?,
    Known problems, Example, Use instead, Fix safety). `backends` are the
    claims the rule's diagnostic and fix rest on, with the evidence for each
    backend (`jaxfuse_lint.core.targets`); the page's Backends section is made from
    them. `valid` and `invalid` are small programs next to the rule (Fixit's
    habit): the tests run them, so the examples can never drift from what the
    rule does.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    fixable: ClassVar[str] = "never"  # always | sometimes | never
    doc: ClassVar[str] = ""
    backends: ClassVar[tuple["Claim", ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[str, ...]] = ()
    # Where in the pipeline the rule is detected: "model" (its `check` runs on the semantic
    # model), "parse" (the engine reports it when a file cannot be parsed: JF000) or "noqa"
    # (the engine reports it from the suppression comments, after the other rules: JF901).
    stage: ClassVar[str] = "model"
    # False: only selected when named (`JF9`, `JF901`, `ALL`), never by the default `JF`.
    default_enabled: ClassVar[bool] = True
    # The claims a finding of this rule rests on (model/premises.py CLAIMS): every finding carries
    # a premise for each, with its status (tests/test_premises.py holds every rule to it).
    premises: ClassVar[tuple[str, ...]] = ()
    # The preview tier (ruff's meaning): the whole rule runs only with `preview = true` / `--preview`,
    # even when selected by name, until its first-look precision on code it was never tuned on earns
    # it a place in the default set. `preview_why` says what it still lacks.
    preview: ClassVar[bool] = False
    preview_why: ClassVar[str] = ""

    def check(self, model: "SemanticModel", settings: "Settings") -> Iterator[Violation]:
        raise NotImplementedError

    @classmethod
    def documentation(cls) -> str:
        fix = {"always": "Fix is always available.", "sometimes": "Fix is sometimes available.",
               "never": "No automatic fix."}[cls.fixable]
        tier = ""
        if cls.preview:
            tier = ("This rule is in **preview**: it runs only with `preview = true` in `[tool.jaxfuse-lint]` or "
                    f"`--preview`. {cls.preview_why}".rstrip() + "\n\n")
        page = f"# {cls.name} ({cls.code})\n\n{tier}{fix}\n\n{textwrap.dedent(cls.doc).strip()}\n"
        from jaxfuse_lint.core.calibration import page_section

        calibration = page_section(cls.code)
        if calibration:
            page += "\n" + calibration
        if cls.backends:
            claims = "\n".join(claim.render() for claim in cls.backends)
            page += (
                "\n## Backends\n"
                "What this rule's diagnostic and fix rest on, per backend, and how it was established. "
                "Decisions follow the configured `target` (default `gpu`).\n\n"
                f"{claims}\n"
            )
        return page


def message(*parts: MessagePart) -> tuple[MessagePart, ...]:
    return parts


_REASON_ORDER = {"decorator": 0, "transform": 1, "control-flow": 2, "driver": 2, "external": 3, "assumed": 3,
                 "called": 4, "entry": 4, "passed": 5, "framework": 6}


def staged_reason(model, fn, batching: bool = False, cached: bool = False):
    """The most direct reason fn is traced among those that stage it (`batching`/`cached` as
    `Staging.is_staged` reads them): the route a trace-time hazard happens on. `grad_loss =
    jax.grad(loss)` at module level traces `loss` eagerly; the message names the jitted step
    that calls `grad_loss` instead. Falls back to `model.trace_reason(fn)`."""
    from jaxfuse_lint.model.staging import staging

    st = staging(model)
    reasons = [r for r in model.traced.reasons.get(fn, ()) if st.reason_is_staged(r, batching, cached)]
    if not reasons:
        return model.trace_reason(fn)
    return min(reasons, key=lambda r: _REASON_ORDER.get(r.kind, 9))
