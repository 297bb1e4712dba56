"""The calibration tables: what the compiler really does with each form a rule flags.

A rule whose claim is about compiled code (kernels, launches, temporaries, folded constants)
does not decide from prose. For each such rule, `python -m jaxfuse_lint.calibrate` generates the
variants of its pattern (the producer of the operand, its consumer, sizes, dtypes, loops...),
applies the rule's own fix to each, compiles both versions for each target (XLA:GPU deviceless
for the bundled GPU models, XLA:CPU with wall-clock) and writes one table per rule and target
into `core/calibration_tables/<CODE>.<target>.json`, with the jax version that made it.

Here, without jax, a rule asks the table of the configured target about the form it found:
`decide(code, settings, producer="stack", size=3, rows=None, ...)`. A feature the rule could not
establish is None and matches every value; one it could only narrow down is `OneOf(...)` of the
values it may take (a size the model does not know, but knows not to be a scalar) and matches each
of them; a value the table has no variant for matches none.

- every matching variant shows the harm (the fixed form is better on some figure and worse on
  none): the finding is reported, with the measured figures of one of them (`Decision.evidence`);
- some do and some do not (the harm depends on what the rule cannot see, such as the number of
  rows): the finding is in the preview tier, saying so;
- none does: the compiler contradicts the claim, and nothing is reported;
- no variant matches, or there is no table for the target: the finding is in the preview tier.

What counts as a change: kernels and launches, any difference; bytes (temporaries, constants), a
difference of at least `BYTES_FLOOR` and `BYTES_RELATIVE` of the larger figure (XLA's buffer
assignment moves a few bytes of padding and scalars around between forms); wall-clock, a
difference beyond the noise of the runs (`noise` in the row, from the timings' spread).

A size class stands for the sizes around it (`Table.nearest`), never for sizes far outside the
calibrated range: a value more than one class step below the smallest class or above the largest
(a scalar carry against classes of 1,024 elements and up) is not calibrated.

Where a decision depends on a feature the rule could not establish, `Decision.threshold` reads the
table's answer to "from which size on": the smallest value of the feature among the harmful forms,
and whether every larger calibrated value is harmful too. A rule's finding then assumes the size
("harm from 4,194,304 rows"), and its harm holds for the sizes from there (model/premises.py).

Measured on a real GPU (`MEASURED_TABLES`): a compile table cannot tell whether one kernel launch
saved and nothing else makes a program faster (the "launch" verdict). Where a GPU timed the same
form, the timing decides it: `<CODE>.<device>.json` (made by `python -m jaxfuse_lint.calibrate.measured`
from the device's timings) holds the timed pairs, keyed by the same features as the compile tables,
each with a verdict from `measured_verdicts` (the timings' own noise statement decides what is
signal). `decide` reads the compile table of the target with each "launch" row replaced by the
measured verdict of the same form where the GPU timed a pair that saves the same kernel
(`table_for`); the row then cites the device and its times (`Row.timing`). Nothing else changes: a
verdict the compiled figures already decide (memory saved, a kernel added) stays theirs.
"""
from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

TABLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibration_tables")
# Figures of one compiled version, in the order a table stores them.
FIGURES = ("kernels", "launches", "temp_bytes", "constant_bytes", "seconds")
LABELS = {"kernels": "kernels", "launches": "launches", "temp_bytes": "temporaries",
          "constant_bytes": "folded constants", "seconds": "wall-clock"}
BYTES_FLOOR = 1024
BYTES_RELATIVE = 0.01
VERDICTS = ("harm", "launch", "none", "worse", "mixed", "nofix", "error")
MEASURED = ("harm", "launch", "none", "worse", "mixed")
# The internal switch under which a rule reports its raw pattern, whatever its table says: how the
# calibration harness gets every variant's fix (Settings.extra).
RAW = ("calibration", "raw")


def raw(settings: Any) -> bool:
    return RAW in getattr(settings, "extra", ())


class OneOf(frozenset):
    """A feature value narrowed down to some of the table's values: a row with any of them matches."""

    def __repr__(self) -> str:
        return f"OneOf({sorted(self, key=str)})"


@dataclass(frozen=True)
class Figures:
    kernels: int | None
    launches: int | None
    temp_bytes: int | None
    constant_bytes: int | None
    seconds: float | None = None  # median wall-clock where it was measured (XLA:CPU)

    def to_list(self) -> list:
        return [getattr(self, f) for f in FIGURES]

    @classmethod
    def from_list(cls, values: list) -> "Figures":
        return cls(*(list(values) + [None] * (len(FIGURES) - len(values))))


def change(figure: str, before: Any, after: Any, noise: float | None = None) -> str:
    """"better", "worse" or "same" for one figure (lower is better for every one)."""
    if before is None or after is None:
        return "same"
    if figure in ("temp_bytes", "constant_bytes"):
        if abs(after - before) < max(BYTES_FLOOR, BYTES_RELATIVE * max(before, after)):
            return "same"
    elif figure == "seconds":
        if noise is None or abs(after - before) <= noise:
            return "same"
    elif after == before:
        return "same"
    return "better" if after < before else "worse"


# Rules (and the forms of their pattern) whose fix, where it saves exactly one kernel launch untimed,
# does the same work without a trade: the launch saved is harm (the "launch" verdict's reason, strided
# loads replacing a reduction kernel, does not arise). Code -> (why, the feature values it holds for;
# None: every form).
ONE_LAUNCH_IS_HARM: dict[str, tuple[str, Mapping[str, tuple] | None]] = {
    # Only a grid built from shapes (iota arithmetic): XLA's fusion duplicates such cheap ops into their
    # consumers itself, so recomputed in the body it costs no reads. Values computed from data are not
    # covered: in real code their pre-loop kernel is often shared with other work (sweep 4: recomputing
    # a captured scalar in a while body left 35 kernels at 35), so one launch saved in the calibrated
    # variant is no evidence for them.
    "JF203": ("the grid is recomputed inside the loop body's own kernel, from the iteration space alone, "
              "instead of by a kernel of its own and read back from memory in every iteration",
              {"value": ("grid",)}),
    "JF206": ("without the barrier the two sides run as one kernel: the barrier's operand is no longer "
              "written to device memory and read back", None),
}


def _one_launch_is_harm(code: str | None, features: Mapping[str, Any] | None) -> bool:
    policy = ONE_LAUNCH_IS_HARM.get(code or "")
    if policy is None:
        return False
    forms = policy[1]
    return forms is None or features is None or all(features.get(k) in v for k, v in forms.items())


def verdict(before: Figures, after: Figures, noise: float | None = None, code: str | None = None,
            features: Mapping[str, Any] | None = None) -> str:
    """One variant's verdict, from its figures before and after the fix:

    - "worse" / "mixed": the fixed form is worse on some figure (and better on none / on another);
    - "harm": better on memory (temporaries, folded constants) or, where it was timed, faster; or,
      untimed, two or more kernel launches per run fewer (a loop's launches);
    - "launch": untimed, one kernel launch fewer and nothing else: a compiler cannot say whether
      that is faster — on a real H200 (jax 0.11.2), such rewrites of small-axis reductions ran
      0.70-0.94x the time at 4,194,304 rows and within the noise (±20%) at 262,144 — so a finding
      that rests on it is in the preview tier unless a GPU timed the form (MEASURED_TABLES,
      `table_for`); except for the rules in ONE_LAUNCH_IS_HARM (`code`, and the variant's
      `features` where given), whose fix saves the launch without a trade ("harm");
    - "none": nothing changed (or, timed, no faster).
    """
    changes = {f: change(f, getattr(before, f), getattr(after, f), noise) for f in FIGURES}
    values = set(changes.values())
    if "worse" in values:
        return "mixed" if "better" in values else "worse"
    if "better" in (changes["temp_bytes"], changes["constant_bytes"], changes["seconds"]):
        return "harm"
    timed = before.seconds is not None and after.seconds is not None
    if timed:
        return "none"
    saved = _launches(before) - _launches(after)
    if saved >= 2:
        return "harm"
    if saved >= 1 or changes["kernels"] == "better":
        return "harm" if _one_launch_is_harm(code, features) else "launch"
    return "none"


def _launches(f: Figures) -> int:
    return f.launches if f.launches is not None else (f.kernels or 0)


@dataclass(frozen=True)
class Timing:
    """Where a real GPU timed a form: the device as the measurement table names it, the form as
    timed (`sum(x)*2+1`), and the median seconds before and after the fix."""

    device: str
    form: str
    before: float
    after: float

    @property
    def ratio(self) -> float:
        return self.after / self.before if self.before else 1.0

    def text(self) -> str:
        """"timed on the NVIDIA H200 (...): `sum(x)*2+1` 100 µs, the fix 89 µs (0.88×)"."""
        return (f"timed on the {self.device}: `{self.form}` {self.before * 1e6:.0f} µs, the fix "
                f"{self.after * 1e6:.0f} µs ({self.ratio:.2f}×)")


@dataclass(frozen=True)
class Row:
    features: Mapping[str, Any]
    before: Figures | None
    after: Figures | None
    verdict: str
    noise: float | None = None
    args: str = ""  # the argument shapes compiled for, as `verify --arg` spells them
    form: str = ""  # measurement tables: the form as it was timed (`sum(x)*2+1`)
    # A compile table's row whose verdict a real GPU's timing decided (`table_for`): that timing.
    timing: Timing | None = None

    def changes(self) -> dict[str, str]:
        if self.before is None or self.after is None:
            return {}
        return {f: change(f, getattr(self.before, f), getattr(self.after, f), self.noise) for f in FIGURES}


@dataclass(frozen=True)
class Table:
    rule: str
    key: str  # "h100", "a100", "a6000" (XLA:GPU) or "cpu" (XLA:CPU)
    meta: Mapping[str, Any]  # compiler, device, jax and jaxlib versions, date, command
    features: Mapping[str, tuple]  # feature name -> the values the variants take, in order
    rows: tuple[Row, ...]
    # Numeric features whose calibrated values stand for size classes: a value between them matches
    # the nearest one (on a log scale): 100,000 rows behave as the 262,144 variant does.
    nearest: tuple[str, ...] = ()

    @property
    def compiler(self) -> str:
        """"XLA:GPU for the NVIDIA H100 80GB HBM3 (jax 0.10.2, deviceless)", "XLA:CPU (jax 0.10.2, timed on
        a CPU with 2 cores)"."""
        m = self.meta
        version = f"jax {m.get('jax', '?')}"
        if m.get("compiler") == "XLA:CPU":
            return f"XLA:CPU ({version}, timed on {m.get('device', 'a CPU')})"
        how = ", deviceless" if m.get("deviceless") else ""
        return f"{m.get('compiler', 'XLA')} for the {m.get('device', 'GPU')} ({version}{how})"

    def snapped(self, name: str, value: Any) -> Any:
        """`value` as the table knows it: itself, or for a `nearest` feature the closest size class."""
        values = self.features.get(name, ())
        if isinstance(value, OneOf):
            return OneOf(self.snapped(name, v) for v in value)
        if value is None or value in values or name not in self.nearest or not isinstance(value, int) or value <= 0:
            return value
        import math

        classes = sorted(v for v in values if isinstance(v, (int, float)) and v > 0)
        if len(classes) >= 2 and not classes[0] ** 2 / classes[1] <= value <= classes[-1] ** 2 / classes[-2]:
            return value  # more than one class step outside the calibrated range: not calibrated
        return min(values, key=lambda v: abs(math.log(v) - math.log(value)))

    def matching(self, features: Mapping[str, Any]) -> list[Row]:
        """The rows whose features equal the known ones (None: any value; OneOf: any of its values)."""
        import itertools

        choices = []
        for name, values in self.features.items():
            value = self.snapped(name, features.get(name))
            if value is None:
                choices.append(values)
            elif isinstance(value, OneOf):
                choices.append(tuple(v for v in values if v in value))
            else:
                choices.append((value,))
        index = self._index()
        return [row for key in itertools.product(*choices) for row in index.get(key, ())]

    def _index(self) -> dict[tuple, list[Row]]:
        index = self.__dict__.get("_by_features")
        if index is None:
            index = {}
            for row in self.rows:
                index.setdefault(tuple(row.features.get(n) for n in self.features), []).append(row)
            object.__setattr__(self, "_by_features", index)
        return index

    def to_json(self) -> dict:
        names = list(self.features)
        return {
            "rule": self.rule, "key": self.key, **dict(self.meta),
            "features": {k: list(v) for k, v in self.features.items()}, "nearest": list(self.nearest),
            "figures": list(FIGURES),
            "rows": [[[r.features[n] for n in names], r.before.to_list() if r.before else None,
                      r.after.to_list() if r.after else None, r.verdict, r.noise, r.args]
                     + ([r.form] if r.form else []) for r in self.rows],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Table":
        features = {k: tuple(v) for k, v in data["features"].items()}
        names = list(features)
        rows = []
        for values, before, after, v, noise, args, *form in data["rows"]:
            rows.append(Row(dict(zip(names, values)), Figures.from_list(before) if before else None,
                            Figures.from_list(after) if after else None, v, noise, args, *form))
        meta = {k: v for k, v in data.items() if k not in ("rule", "key", "features", "figures", "rows", "nearest")}
        return cls(data["rule"], data["key"], meta, features, tuple(rows), tuple(data.get("nearest", ())))


def table_path(code: str, key: str, directory: str = TABLES_DIR) -> str:
    return os.path.join(directory, f"{code}.{key}.json")


@functools.lru_cache(maxsize=64)
def load_table(code: str, key: str) -> Table | None:
    path = table_path(code, key)
    try:
        with open(path, encoding="utf-8") as fh:
            return Table.from_json(json.load(fh))
    except FileNotFoundError:
        return None


# Measurement tables (`<CODE>.<device>.json`, `meta["measured"]`) and the compile tables they decide
# "launch" rows of: the H200 is the H100's chip (the same SMs, compiled for the same target) with
# more and faster memory, so its timings stand for the `h100` target; the A100 is not measured.
MEASURED_TABLES: dict[str, tuple[str, ...]] = {"h100": ("h200",)}
# How many timed pairs of one kind (the same kernel change at the same size class) must all lie on
# one side of 1 for their direction to be signal, whatever each ratio's noise (by chance alone, all
# of 5 on one side: 2 × 2⁻⁵ ≈ 6%).
SIGNAL_PAIRS = 5


def measured_verdicts(rows: list[Row], noise: float, group_by: Iterable[str] = (), code: str | None = None) -> list[str]:
    """The verdicts of timed pairs (`Row.before`/`after` with `seconds`), as a measurement table
    stores them:

    - the compiled figures decide first (`verdict` without the clock): memory saved is harm, a
      kernel or memory added is worse, no change is none (the clock's difference between two equal
      programs is noise, however large);
    - a pair that saves kernel launches and nothing else (the "launch" the compile tables cannot
      decide) is decided by the clock: where at least SIGNAL_PAIRS such pairs with the same kernel
      change and the same `group_by` features (the size class) all ran faster (or all slower), that
      is signal — harm (worse) for each of them; otherwise a pair counts only beyond the noise
      (`noise`: the relative spread of a single ratio): faster by more is harm, slower by more is
      worse, within it none.
    """
    group_by = tuple(group_by)

    def untimed(f: Figures) -> Figures:
        return Figures(f.kernels, f.launches, f.temp_bytes, f.constant_bytes)

    compiled = [verdict(untimed(r.before), untimed(r.after), code=None, features=r.features)
                if r.before is not None and r.after is not None else "error" for r in rows]
    groups: dict[tuple, list[int]] = {}
    for i, (r, v) in enumerate(zip(rows, compiled)):
        if v == "launch":
            key = (r.before.kernels, r.after.kernels, *(r.features.get(n) for n in group_by))  # type: ignore[union-attr]
            groups.setdefault(key, []).append(i)
    out = list(compiled)
    for members in groups.values():
        ratios = [rows[i].after.seconds / rows[i].before.seconds for i in members]  # type: ignore[union-attr, operator]
        consistent = len(members) >= SIGNAL_PAIRS and (all(x < 1 for x in ratios) or all(x > 1 for x in ratios))
        for i, ratio in zip(members, ratios):
            if consistent:
                out[i] = "harm" if ratio < 1 else "worse"
            elif ratio < 1 - noise:
                out[i] = "harm"
            elif ratio > 1 + noise:
                out[i] = "worse"
            else:
                out[i] = "none"
    return out


def _measured_form(row: Row, measured: Table) -> list[Row]:
    """The timed pairs of `row`'s form that change the kernels as its compiled versions do."""
    found = []
    for m in measured.matching(dict(row.features)):
        if dict(m.features) != dict(row.features) or m.before is None or m.after is None or row.before is None \
                or row.after is None:
            continue
        if (m.before.kernels, m.after.kernels) == (row.before.kernels, row.after.kernels) and m.verdict in MEASURED:
            found.append(m)
    return found


_EFFECTIVE: dict[tuple[int, ...], Table] = {}


def table_for(code: str, key: str) -> Table | None:
    """The compile table `decide` reads for `key`: its "launch" rows decided by a real GPU's timing
    of the same form where one timed it (MEASURED_TABLES; the row's `timing` cites it)."""
    table = load_table(code, key)
    if table is None:
        return None
    measured = [m for m in (load_table(code, device) for device in MEASURED_TABLES.get(key, ())) if m is not None]
    if not measured:
        return table
    memo = (id(table), *map(id, measured))
    if memo not in _EFFECTIVE:
        _EFFECTIVE[memo] = _with_timings(table, measured)
    return _EFFECTIVE[memo]


def _with_timings(table: Table, measured: list[Table]) -> Table:
    rows = []
    for row in table.rows:
        if row.verdict == "launch":
            for m_table in measured:
                timed = _measured_form(row, m_table)
                verdicts = {m.verdict for m in timed}
                if len(verdicts) == 1:
                    (new,) = verdicts
                    # The least favourable of the pairs: the message claims no more than each of them shows.
                    cited = max(timed, key=lambda m: m.after.seconds / m.before.seconds) if new == "harm" else timed[0]
                    row = replace(row, verdict=new, timing=Timing(str(m_table.meta.get("device", m_table.key)),
                                                                  cited.form, cited.before.seconds,
                                                                  cited.after.seconds))
                    break
        rows.append(row)
    return replace(table, rows=tuple(rows))


def target_key(settings: Any) -> str | None:
    """Which table the configured target reads: the GPU model's name, "cpu", or None (no table:
    XLA:TPU's pipeline is not public; a GPU given as a target-config file was not calibrated)."""
    target = getattr(settings, "target", "gpu")
    if target == "cpu":
        return "cpu"
    if target != "gpu":
        return None
    from jaxfuse_lint.gpu_targets import DEFAULT_GPU, MODELS

    gpu = (getattr(settings, "gpu", None) or DEFAULT_GPU).strip().lower()
    return gpu if gpu in MODELS else None


# What a size feature counts, as a message says it ("harm from 4,194,304 rows").
UNITS = {"rows": "rows", "points": "points", "size": "elements", "steps": "iterations", "trips": "iterations",
         "iterations": "iterations", "components": "components"}


def unit(name: str, table: "Table | None" = None) -> str:
    units = (table.meta.get("units") or {}) if table is not None else {}
    return units.get(name) or UNITS.get(name, name)


@dataclass(frozen=True)
class Threshold:
    """From which value of an open numeric feature the table shows the harm: `value`, the smallest
    value of the feature among the harmful forms; `every_larger`, whether every calibrated form
    with that value or a larger one is harmful (else the harm also depends on something else)."""

    feature: str
    value: Any
    every_larger: bool
    unit: str

    def text(self) -> str:
        amount = f"{self.value:,}" if isinstance(self.value, int) else str(self.value)
        return f"harm from {amount} {self.unit}" + ("" if self.every_larger else " (not in every form there)")


@dataclass(frozen=True)
class Decision:
    """What the table says about one flagged form."""

    outcome: str  # "harm" (every matching variant), "some", "none", "unknown"
    table: Table | None
    rows: tuple[Row, ...]
    why: str = ""  # for "some" and "unknown": what is not established, in a few words
    # The features the rule asked with (None / OneOf: not established).
    features: Mapping[str, Any] | None = None

    @property
    def fires(self) -> bool:
        return self.outcome == "harm"

    @property
    def preview(self) -> str | None:
        """The preview note for a finding this decision does not put in the default output."""
        return self.why if self.outcome in ("some", "unknown") else None

    @property
    def evidence(self) -> Row | None:
        """The harm row to cite: the largest figures among the matching harmful variants."""
        harmful = [r for r in self.rows if r.verdict == "harm"]
        if not harmful:
            return None
        return max(harmful, key=lambda r: (r.before.temp_bytes or 0, r.before.launches or 0, r.before.kernels or 0))

    def open_features(self) -> list[str]:
        """The features the rule did not establish whose values among the harmful forms are not
        those among the others: what the harm depends on."""
        if self.table is None or self.outcome != "some":
            return []
        asked = self.features or {}
        harmful = [r for r in self.rows if r.verdict == "harm"]
        harmless = [r for r in self.rows if r.verdict != "harm"]
        return [name for name in self.table.features
                if (asked.get(name) is None or isinstance(asked.get(name), OneOf))
                and {r.features.get(name) for r in harmful} != {r.features.get(name) for r in harmless}]

    def threshold(self, name: str) -> Threshold | None:
        """For an open numeric feature: from which calibrated value on the harm shows (None where
        it shows at the smallest value the code may take too: no line drawn by the size)."""
        harmful = [r.features.get(name) for r in self.rows if r.verdict == "harm"]
        values = [v for v in harmful if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not values or len(values) != len(harmful):
            return None
        least = min(values)
        if least == min(r.features.get(name) for r in self.rows):
            return None  # harm at the smallest size this code may take too: the size draws no line
        larger = [r for r in self.rows if isinstance(r.features.get(name), (int, float))
                  and r.features.get(name) >= least]
        return Threshold(name, least, all(r.verdict == "harm" for r in larger), unit(name, self.table))

    def given(self, name: str, values: Iterable[Any]) -> "Decision":
        """The decision for the forms whose `name` is one of `values` (what it would be were it known)."""
        values = set(values)
        rows = tuple(r for r in self.rows if r.features.get(name) in values)
        asked = dict(self.features or {})
        asked[name] = OneOf(values)
        if not rows:
            return Decision("unknown", self.table, rows, self.why, asked)
        harmful = [r for r in rows if r.verdict == "harm"]
        if len(harmful) == len(rows):
            return Decision("harm", self.table, rows, "", asked)
        if not harmful:
            return Decision("none" if not any(r.verdict == "launch" for r in rows) else "some", self.table, rows,
                            _launch_why(self.table) if any(r.verdict == "launch" for r in rows) else "", asked)
        return Decision("some", self.table, rows, _some_why(self.table, rows, asked), asked)

    @property
    def measured_on(self) -> str | None:
        """The device whose timings decided the cited evidence, if a real GPU's did."""
        row = self.evidence
        return row.timing.device if row is not None and row.timing is not None else None


def decide(code: str, settings: Any, **features: Any) -> Decision:
    key = target_key(settings)
    if key is None:
        what = "the TPU" if getattr(settings, "target", "") == "tpu" else "this GPU target config"
        return Decision("unknown", None, (), f"no calibration table for {what}: the compiler's behaviour is not "
                        "measured", features)
    table = table_for(code, key)
    if table is None:
        return Decision("unknown", None, (), f"no calibration table of {code} for `{key}`", features)
    unknown_values = [f"its {name} (`{value}`) is none of the calibrated ones ({', '.join(map(str, table.features[name]))})"
                      for name, value in features.items()
                      if name in table.features and not isinstance(value, OneOf)
                      and table.snapped(name, value) not in (None, *table.features[name])]
    rows = table.matching({k: v for k, v in features.items() if k in table.features})
    measured = [r for r in rows if r.verdict in MEASURED]
    if not measured:
        what = "; ".join(unknown_values) or "this form has no calibrated variant"
        return Decision("unknown", table, tuple(rows), f"what the compiler does here is not calibrated: {what}",
                        features)
    harmful = [r for r in measured if r.verdict == "harm"]
    if len(harmful) == len(measured):
        return Decision("harm", table, tuple(measured), "", features)
    launches = [r for r in measured if r.verdict == "launch"]
    if not harmful and not launches:
        return Decision("none", table, tuple(measured), "", features)
    if not harmful:
        return Decision("some", table, tuple(measured), _launch_why(table), features)
    return Decision("some", table, tuple(measured), _some_why(table, tuple(measured), features), features)


def _launch_why(table: Table | None) -> str:
    compiler = table.meta.get("compiler", "the compiler") if table is not None else "the compiler"
    return (f"{compiler} saves one kernel launch per call here and no memory; whether that is faster depends on "
            f"the GPU (not timed without one)")


def _some_why(table: Table | None, rows: tuple[Row, ...], features: Mapping[str, Any] | None) -> str:
    """Why only some forms show the harm: the open features it follows, a size by its threshold."""
    found = Decision("some", table, rows, "", features)
    harmful = [r for r in rows if r.verdict == "harm"]
    parts = []
    for name in found.open_features():
        threshold = found.threshold(name)
        values = sorted({r.features[name] for r in harmful}, key=str)
        parts.append(f"{name}: {threshold.text()}" if threshold is not None
                     else f"{name}: harm for {', '.join(map(str, values))}")
    depends = "; ".join(parts) if parts else "the form"
    compiler = table.meta.get("compiler", "the compiler") if table is not None else "the compiler"
    return (f"{compiler} shows the harm in {len(harmful)} of the {len(rows)} calibrated forms this code may take "
            f"(it depends on {depends})")


def size_text(n: int | None) -> str:
    if n is None:
        return "n/a"
    if n == 0:
        return "none"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def figures_text(f: Figures) -> str:
    """"2 kernels (2 launches), 48.0 MiB of temporaries" — what a message cites."""
    parts = [f"{f.kernels} kernel{'s' if f.kernels != 1 else ''}"]
    if f.launches is not None and f.launches != f.kernels:
        parts[0] += f" ({f.launches} launches)"
    parts.append("no temporaries" if not f.temp_bytes or f.temp_bytes < BYTES_FLOOR
                 else f"{size_text(f.temp_bytes)} of temporaries")
    if f.constant_bytes and f.constant_bytes >= BYTES_FLOOR:
        parts.append(f"{size_text(f.constant_bytes)} of folded constants")
    if f.seconds is not None:
        parts.append(f"{f.seconds * 1e6:.0f} µs")
    return ", ".join(parts)


def evidence_text(decision: Decision, form: str, fixed: str) -> str:
    """One clause for a message: "on XLA:GPU for the NVIDIA H100 80GB HBM3 (jax 0.10.2, deviceless),
    this form at f32[4194304,3] compiles to 2 kernels, 48.0 MiB of temporaries; <fixed> to 1 kernel,
    no temporaries"."""
    row = decision.evidence
    if row is None or decision.table is None:
        return ""
    where = f" at {row.args}" if row.args else ""
    text = (f"on {decision.table.compiler}, {form}{where} compiles to {figures_text(row.before)}; "
            f"{fixed} to {figures_text(row.after)}")
    if row.timing is not None:
        text += f"; {row.timing.text()}"
    return text


PAGE_KEYS = ("h100", "a100", "cpu")


def page_section(code: str) -> str:
    """The "Calibration" section of a rule's page: where its tables say it fires, and why."""
    tables = [t for t in (load_table(code, key) for key in PAGE_KEYS) if t is not None]
    if not tables:
        return ""
    out = ["## Calibration",
           "What the compiler does with each calibrated form of this pattern, before and after the fix "
           "(`python -m jaxfuse_lint.calibrate --rule " + code + "` regenerates the tables, "
           "`jaxfuse_lint/core/calibration_tables/" + code + ".<target>.json`). A finding is reported only "
           "where every form the code may take shows the harm — the fixed form better on some figure "
           "(kernels, launches, temporaries, folded constants; wall-clock on XLA:CPU) and worse on none; "
           "where only some do, it is in the preview tier; where none does, nothing is reported.", ""]
    for compiled in tables:
        table = table_for(code, compiled.key) or compiled  # with the verdicts a real GPU's timing decided
        timed = [r for r in table.rows if r.timing is not None]
        counts = {v: sum(r.verdict == v for r in table.rows) for v in VERDICTS}
        measured = sum(counts[v] for v in MEASURED)
        out.append(f"**{table.compiler}** (`{table.key}`, {table.meta.get('date', '')}): harm in "
                   f"{counts['harm']} of {measured} variants; one kernel launch saved and nothing else in "
                   f"{counts['launch']}; no change in {counts['none']}; the fix worse in {counts['worse']} and "
                   f"mixed in {counts['mixed']}"
                   + (f"; {counts['error']} did not compile" if counts["error"] else "")
                   + (f" ({len(timed)} of these verdicts timed on a real GPU: see below)" if timed else "") + ".")
        out.append("")
        for group in table.meta.get("page", [list(table.features)[:2]]):
            header = " × ".join(group)
            out.append(f"| {header} | harm / variants |")
            out.append("|---|---|")
            for key, harmful, n in summarize(table, group):
                out.append(f"| {' · '.join(str(k) for k in key)} | {harmful} / {n} |")
            out.append("")
    out += _measured_section(code)
    return "\n".join(out).rstrip() + "\n"


def _measured_section(code: str) -> list[str]:
    """The page's "Measured on a GPU" part: each timed pair of the rule's measurement tables, its
    verdict, and which compile tables' "launch" rows it decides."""
    out: list[str] = []
    for key, devices in MEASURED_TABLES.items():
        for device in devices:
            table = load_table(code, device)
            if table is None:
                continue
            decided = [r for r in (table_for(code, key) or table).rows if r.timing is not None]
            names = list(table.features)
            out += [f"### Measured on a GPU: {table.meta.get('device', device)}",
                    f"{table.meta.get('about', '')} Source: `{table.meta.get('source', '')}`. Each pair's verdict "
                    f"(`measured_verdicts` in core/calibration.py): the compiled figures decide first (memory saved is "
                    f"harm, a kernel added is worse); where the fix only saves a kernel launch, the clock decides — "
                    f"at least {SIGNAL_PAIRS} such pairs of one size class all faster (or all slower) are signal, "
                    f"else a single ratio counts only beyond ±{table.meta.get('noise', 0.2):.0%} (noise). These "
                    f"verdicts decide {len(decided)} \"launch\" rows of the `{key}` table: "
                    f"{sum(r.verdict == 'harm' for r in decided)} harm, {sum(r.verdict == 'none' for r in decided)} "
                    f"none, {sum(r.verdict == 'worse' for r in decided)} worse.", "",
                    "| form | " + " | ".join(names) + " | kernels | µs before → after | ratio | verdict |",
                    "|---|" + "---|" * len(names) + "---|---|---|---|"]
            for r in table.rows:
                if r.before is None or r.after is None:
                    continue
                ratio = (r.after.seconds or 0) / (r.before.seconds or 1)
                out.append(f"| `{r.form}` | " + " | ".join(str(r.features.get(n)) for n in names)
                           + f" | {r.before.kernels} → {r.after.kernels} | {(r.before.seconds or 0) * 1e6:.1f} → "
                           f"{(r.after.seconds or 0) * 1e6:.1f} | {ratio:.2f} | {r.verdict} |")
            out.append("")
    return out


def summarize(table: Table, by: Iterable[str]) -> list[tuple[tuple, int, int]]:
    """(values of `by`, harmful variants, measured variants) per group, in the table's order: what a
    rule page shows."""
    by = tuple(by)
    groups: dict[tuple, list[int]] = {}
    for row in table.rows:
        if row.verdict not in MEASURED:
            continue
        key = tuple(row.features[name] for name in by)
        counts = groups.setdefault(key, [0, 0])
        counts[0] += row.verdict == "harm"
        counts[1] += 1
    return [(key, h, n) for key, (h, n) in groups.items()]
