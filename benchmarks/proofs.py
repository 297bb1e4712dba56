"""Run every proof for one target and write one Markdown table.

A proof is a `jaxfuse-lint verify ...` command in the docstring of a file in
`fixtures/proofs/` (the notebook's pairs, the README's examples and the GPU
figure from NVIDIA/cccl#921). Each is run as the `verify` command would run
it, with `--time` added, and its figures — kernels, launches per run,
temporaries, folded constants, compilations per call, median wall-clock —
go into one row, before → after, with the verdict. The header names the
backend, the device and the jax/jaxlib versions, so a table taken on a GPU
can be told from one taken on a CPU.

The proofs compile for `--target` (default: the repository's configured
target, gpu) as `verify` does (`jaxfuse_lint/verify/backend.py`): with no GPU
here and jax's CUDA plugin installed, XLA:GPU compiles for the `--gpu` model
(default h100) without a device, and the wall-clock column says it needs a GPU.

    python benchmarks/proofs.py                       # table on stdout
    python benchmarks/proofs.py --target cpu          # XLA:CPU's table
    python benchmarks/proofs.py --target gpu --gpu a100
    python benchmarks/proofs.py --repeat 50 -o proofs-gpu.md
    python benchmarks/proofs.py --only reduction_1m   # proofs whose file name contains this

This imports and runs the proof files (as `verify` does).
"""
from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROOFS = ROOT / "fixtures" / "proofs"
COLUMNS = (
    ("kernels", "kernels"),
    ("launches", "launches"),
    ("temp_bytes", "temporaries"),
    ("folded_constant_bytes", "constants"),
    ("compilations", "compilations"),
    ("wall_seconds", "wall-clock"),
)


@dataclass(frozen=True)
class Proof:
    file: Path
    argv: tuple[str, ...]  # the verify command's arguments, after `jaxfuse-lint verify`

    @property
    def name(self) -> str:
        target = self.argv[0].rpartition("::")[2]
        other = next((a for a in self.argv[1:] if "::" in a), "")
        return f"{self.file.stem}: {target} → {other.rpartition('::')[2]}" if other else f"{self.file.stem}: {target}"


def find_proofs(folder: Path = PROOFS) -> list[Proof]:
    """Every `jaxfuse-lint verify` command (with `\\` continuations) in the proof files' docstrings."""
    proofs = []
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8").replace("\\\n", " ")
        for match in re.finditer(r"^\s*jaxfuse-lint verify (.+)$", text, flags=re.MULTILINE):
            proofs.append(Proof(path, tuple(shlex.split(match.group(1)))))
    return proofs


def run_proof(proof: Proof, repeat: int, target: str | None = None, gpu: str | None = None):
    """The VerifyResult of the proof's command with `--time --repeat REPEAT`, run from the repository root,
    compiled for `target`/`gpu` (None: the proof's own options, else the configuration's)."""
    from jaxfuse_lint.cli.verify import run_verify, verify_command

    ctx = verify_command.make_context("verify", [*proof.argv, "--time", "--repeat", str(repeat)])
    p = ctx.params
    return run_verify(
        p["targets"][0], against=p["against"], arg_specs=p["arg_specs"], statics=p["statics"], dims=p["dims"],
        call=p["call"], time_runs=repeat, backend=p["backend"], seed=p["seed"], unsafe_fixes=p["unsafe_fixes"],
        config_path=p["config_path"], constants_warn_bytes=p["constants_warn_bytes"],
        compile_for=target or p["compile_for"], gpu=gpu or p["gpu"],
    )


def cell(result, key: str) -> str:
    from jaxfuse_lint.verify.report import format_value

    metric = result.metric(key)
    if metric is None:
        if key == "wall_seconds" and result.environment.get("deviceless"):
            return "needs a GPU"
        return ""
    before, after = format_value(metric.before, metric.unit), format_value(metric.after, metric.unit)
    if metric.change == "better":
        return f"{before} → **{after}**"
    return f"{before} → {after}" if before != after or metric.change == "worse" else f"{before} (same)"


def table(proofs: list[Proof], repeat: int, echo=lambda line: None, target: str | None = None,
          gpu: str | None = None) -> str:
    from jaxfuse_lint.core.config import load_settings, with_cli_overrides
    from jaxfuse_lint.verify.api import environment
    from jaxfuse_lint.verify.backend import for_settings, import_jax, label

    jax = import_jax()
    compile_target = for_settings(with_cli_overrides(load_settings(None, start=str(ROOT)), target=target, gpu=gpu))
    env = environment(jax, compile_target)
    if compile_target.deviceless:
        clock = "wall-clock needs a GPU (compiled without one)"
    else:
        clock = f"wall-clock: median of {repeat} runs after warm-up"
    lines = [
        f"Backend **{label(env)}** ({env['device']}), jax {env['jax']}, jaxlib {env['jaxlib']}, "
        f"XLA_FLAGS={env['xla_flags'] or '(unset)'}; {clock}.",
        *([f"({compile_target.describe()})"] if compile_target.describe() else []),
        "",
        "| proof | " + " | ".join(label for _, label in COLUMNS) + " | verdict |",
        "|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    for proof in proofs:
        echo(f"running {proof.name} ...")
        result = run_proof(proof, repeat, target, gpu)
        if result.verdict == "error":
            row = [proof.name, *([""] * len(COLUMNS)), f"error: {result.error}"]
        else:
            row = [proof.name, *(cell(result, key) for key, _ in COLUMNS), result.verdict]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs of each version (default 30)")
    parser.add_argument("--only", default=None, help="run the proofs whose file name contains this")
    parser.add_argument("-o", "--output", default=None, help="write the table here (default: stdout)")
    parser.add_argument("--target", choices=("gpu", "cpu", "tpu"), default=None,
                        help="compile for this backend (default: the repository's configured target)")
    parser.add_argument("--gpu", default=None, help="GPU model to compile for without a GPU (h100, a100, a6000)")
    args = parser.parse_args(argv)
    proofs = [p for p in find_proofs() if args.only is None or args.only in p.file.name]
    if not proofs:
        print(f"no proof matches {args.only!r}", file=sys.stderr)
        return 2
    import os

    os.chdir(ROOT)  # the commands name files relative to the repository root
    text = table(proofs, args.repeat, echo=lambda line: print(line, file=sys.stderr), target=args.target,
                 gpu=args.gpu)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
