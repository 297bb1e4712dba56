"""The backend a project compiles for, and what each rule's claims rest on there.

XLA:GPU, XLA:CPU and XLA:TPU run different pass pipelines, so a claim such as
"recomputing this inside the loop removes the temporary" can hold on one and
not on another. Rules state their claims as `Claim`s with the evidence for
each backend; a rule or codemod whose decision depends on a backend asks
`holds(CLAIM, settings.target)` instead of encoding one backend's behaviour.

`holds` answers True, False or None (not established). Callers treat None
conservatively: no fix whose benefit rests on an unestablished claim.

Evidence says how a claim was established: measured here (with jaxfuse-lint's
verifier, on the machine and versions named), measured on GPU in the fusion
notebook (`shared/seeds/fusion_notebook.txt`), or read in XLA's source, cited.
"""
from __future__ import annotations

from dataclasses import dataclass

TARGETS = ("gpu", "cpu", "tpu")
DEFAULT_TARGET = "gpu"
_NAMES = {"gpu": "GPU", "cpu": "CPU", "tpu": "TPU"}


@dataclass(frozen=True)
class Evidence:
    """Whether a claim holds on one backend, and how that is known."""

    holds: bool | None  # None: not established
    how: str

    def render(self) -> str:
        verdict = {True: "holds", False: "does not hold", None: "not established"}[self.holds]
        return f"{verdict} ({self.how})" if self.how else verdict


@dataclass(frozen=True)
class Claim:
    """One statement a rule's diagnostic or fix rests on, with per-backend evidence."""

    text: str
    gpu: Evidence
    cpu: Evidence
    tpu: Evidence

    def on(self, target: str) -> Evidence:
        return getattr(self, target)

    def render(self) -> str:
        parts = "; ".join(f"**{_NAMES[t]}**: {self.on(t).render()}" for t in TARGETS)
        return f"- {self.text} — {parts}."


def holds(claim: Claim, target: str) -> bool | None:
    """Does `claim` hold when compiling for `target`? None: not established."""
    return claim.on(target).holds


def target_name(target: str) -> str:
    return _NAMES.get(target, target.upper())


# --- How things were established (shared wording) -----------------------------------------------

CPU_MEASURED = "measured here with `jaxfuse-lint verify`, jax/jaxlib 0.10.2 on CPU"
NOTEBOOK_GPU = "measured on GPU in the fusion notebook"
# XLA:GPU itself, compiling for a GPU that is not present (jaxfuse_lint/verify/backend.py).
GPU_MEASURED = ("measured here with `jaxfuse-lint verify --target gpu`: XLA:GPU of jax/jaxlib 0.10.2 compiling for "
                "the H100 target config (`gpu = \"h100\"`) without a GPU")
TPU_UNKNOWN = Evidence(None, "not measured: XLA:TPU's pipeline is not public and no TPU was available")


def tracing(how: str) -> Evidence:
    """For claims about JAX's tracing and caching, which happen before any backend compiler runs."""
    return Evidence(True, how)


def recorded_claim(statement: str) -> Claim:
    """A claim that is a measurement of the user's own recorded run (JF5xx): it holds on whatever
    backend the profile was recorded on."""
    run = Evidence(True, "recorded on the backend the profile was made on: the finding is that run's measurement")
    return Claim(statement, gpu=run, cpu=run, tpu=run)


# --- Backend facts that change what a rule or fix does ----------------------------------------

WHILE_LOOP_LICM = Claim(
    "XLA hoists loop-invariant computations out of `while` loop bodies (while-loop invariant code "
    "motion), so a value recomputed inside a `lax` loop body from the loop's inputs is moved back out "
    "and kept alive as a temporary again",
    gpu=Evidence(False, "XLA source: `xla/service/gpu/gpu_compiler.cc` (openxla/xla 000095fad7d6) runs "
                        "`WhileLoopSimplifier`, `WhileLoopConstantSinking`, `WhileLoopAllReduceCodeMotion` "
                        "and `WhileLoopTripCountAnnotator` but never adds `WhileLoopInvariantCodeMotion`; "
                        + GPU_MEASURED + ": the same pair is 6 → 5 kernels, 19 → 18 launches and 1.0 MiB → "
                        "513 B of temporaries for f32[64,64,64] (`fixtures/proofs/loop_input.py`)"),
    cpu=Evidence(True, "XLA source: `xla/service/cpu/cpu_compiler.cc` adds `WhileLoopInvariantCodeMotion` to "
                       "its simplification pipeline; " + CPU_MEASURED + ": `w = exp(-0.5 * a0)` captured by a "
                       "5-step `fori_loop` body and the same value recomputed inside it both compile to 6 "
                       "kernels, 19 launches and 1.0 MiB of temporaries for f32[64,64,64]"),
    tpu=TPU_UNKNOWN,
)

OPTIMIZATION_BARRIER_BLOCKS_FUSION = Claim(
    "`lax.optimization_barrier` stops fusion across it: its operands are materialised and producers "
    "and consumers run as separate kernels",
    gpu=Evidence(True, GPU_MEASURED + ": `fixtures/proofs/barrier.py` is 2 kernels with the barrier, 1 "
                       "without, for f32[131072,2] (as the fusion notebook measured on GPU)"),
    cpu=Evidence(False, CPU_MEASURED + ": the same function is 1 kernel with no temporary with or without "
                        "the barrier (XLA:CPU removes it before fusion)"),
    tpu=TPU_UNKNOWN,
)
