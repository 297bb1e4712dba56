"""The claims findings rest on (model/premises.py is the ledger) and what a finding that assumes
one lacks, in a user's words: the summary's "12 not decided: 7 sizes unknown, 3 not shown to be
traced, ...", and `--show-undecided`. Here, in core, so that reporting them imports no analysis."""
from __future__ import annotations

CLAIMS: dict[str, str] = {
    "runs-traced": "not shown to run under a trace",
    "traced": "not shown to be traced",
    "size": "sizes unknown",
    "harm": "harm not measured",
    "fresh-callable": "not shown to be a new callable each time",
    "same-program": "not shown to compile the same program each time",
    "called-repeatedly": "call counts unknown",
    "outside-trace": "not shown to outlive the trace",
    "rebound-after-trace": "not shown to change after tracing",
    "no-retrace-between": "not shown to reuse the compiled program",
    "program-reads-it": "not shown to be read by the compiled program",
    "read-per-call": "not shown to be read per call",
    "needs-static": "not shown to need a Python value",
    "measured": "not measured",
    "unparsable": "not shown to be unparsable",
}

# What decides each kind of undecided finding, one line for the summary.
DECIDES: dict[str, str] = {
    "size": "an `assert x.shape[-1] == 3` or a jaxtyping annotation declares a size",
    "traced": "`jaxfuse-lint record -- <your tests>` records what was traced",
    "runs-traced": "`jaxfuse-lint record -- <your tests>` records what was traced",
    "called-repeatedly": "`jaxfuse-lint record` counts the compilations of a real run",
}


def claim_of(premise_name: str) -> str:
    """`traced` for the premise `traced(`x > 0`)`."""
    return premise_name.split("(", 1)[0]
