"""Runtime facts for one module: what a recorded run (`jaxfuse-lint record`) saw it do.

The profile (jaxfuse_lint/core/profile.py) is keyed by the text of each file,
so the facts given here are about exactly the text being checked. They enter the
model in two places and nowhere else:

- traced-ness: a function the run traced (under any jit entry point) is traced,
  with an "external" reason whose description cites the evidence: "traced at run
  time under `jax.jit(step)` (tests/test_a.py::test_step) with x: f32[4096,3]".
  This reaches functions static analysis cannot: dispatch tables, `getattr`,
  callers outside the checked paths.
- parameter shapes: an entry point's parameter whose rank was the same in every
  recorded signature has the axis sizes all signatures agree on
  (`ShapeAnalysis.param_shape` asks `model.runtime_param_shape`).

A recorded shape is a fact about the recorded inputs, not about every input the
code accepts, so a fix that needed one is never safe: `engine` downgrades it to
unsafe (`shapes_used_in`), and `verify --profile` proves it for every recorded
signature. The measured rules (JF5xx) read `facts` directly.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import libcst as cst

from jaxfuse_lint.model.shapes import Shape
from jaxfuse_lint.model.view import ModelView
from jaxfuse_lint.core.profile import PROFILE_DIGEST_KEY, PROFILE_KEY

if TYPE_CHECKING:
    from jaxfuse_lint.model.premises import Premise
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.traced import TracedRegions, TraceReason
    from jaxfuse_lint.core.profile import FileFacts


class RuntimeView(ModelView, Protocol):
    """What citing a recorded run reads of the model besides its structure and names."""

    # What a recorded run saw this module's text do, or None.
    runtime: RuntimeFacts | None

    def trace_reason(self, fn: Function) -> TraceReason | None: ...


def python_qualname(fn: "Function") -> str:
    """The `__qualname__` Python gives a def or lambda (`Outer.method`, `make.<locals>.step`)."""
    from jaxfuse_lint.model.scopes import ClassInfo, Function

    parts = [fn.name]
    s: "Scope | None" = fn.parent
    while s is not None:
        if isinstance(s, Function):
            parts.append("<locals>")
            parts.append(s.name)
        elif isinstance(s, ClassInfo):
            parts.append(s.name)
        s = s.parent
    return ".".join(reversed(parts))


def _entry_phrase(item: dict[str, Any]) -> str:
    name = item.get("entry_name") or item.get("qualname") or "?"
    api = item.get("api") or "jax.jit"
    return f"`{api}({name.replace('.<locals>', '')})`"


class RuntimeFacts:
    """The profile's facts about one file, matched to the model's functions."""

    def __init__(self, facts: "FileFacts", profile_path: str = "") -> None:
        self.facts = facts
        self.profile_path = profile_path
        self._matched: dict["Function", tuple[list[dict], list[dict], list[dict]]] | None = None
        # Functions some rule asked a recorded shape of (their fixes cannot be safe).
        self.shapes_used: set["Function"] = set()

    def fresh(self) -> "RuntimeFacts":
        """The same facts for another model of the same text."""
        return RuntimeFacts(self.facts, self.profile_path)

    def for_text(self, text: str) -> "RuntimeFacts":
        """The facts for a model of `text`: all of them for the recorded text; for the text
        after fixes, what still holds by name (traced-ness, signatures, compilations), not
        what was measured per line (temporaries, constants), which the fixes may have changed."""
        from jaxfuse_lint.core.profile import FileFacts, text_digest

        if text_digest(text) == self.facts.digest:
            return self.fresh()
        return RuntimeFacts(FileFacts(self.facts.digest, self.facts.entries, self.facts.functions,
                                      traced=self.facts.traced), self.profile_path)

    # -- matching ----------------------------------------------------------------------------------
    def _match(self, model: "ModelView") -> dict["Function", tuple[list[dict], list[dict], list[dict]]]:
        """{Function: (entries, traced-function records, parameter records)}: by first line and
        name, else by qualified name alone (the text is the recorded one, but fixes move lines)."""
        if self._matched is not None:
            return self._matched
        lines = _first_lines(model)
        by_line: dict[tuple[int, str], list["Function"]] = {}
        by_qualname: dict[str, list["Function"]] = {}
        for fn in model.index.functions:
            qn = python_qualname(fn)
            by_qualname.setdefault(qn, []).append(fn)
            line = lines.get(fn)
            if line is not None:
                by_line.setdefault((line, fn.name), []).append(fn)
        matched: dict["Function", tuple[list[dict], list[dict], list[dict]]] = {}

        def find(item: dict[str, Any]) -> "Function | None":
            qn = item.get("qualname") or ""
            short = qn.rsplit(".", 1)[-1]
            cands = by_line.get((item.get("line"), short), [])
            if len(cands) == 1:
                return cands[0]
            cands = by_qualname.get(qn, [])
            return cands[0] if len(cands) == 1 else None

        for i, items in enumerate((self.facts.entries, self.facts.functions, self.facts.traced)):
            for item in items:
                fn = find(item)
                if fn is not None:
                    matched.setdefault(fn, ([], [], []))[i].append(item)
        self._matched = matched
        return matched

    def entries_of(self, model: "ModelView", fn: "Function") -> list[dict[str, Any]]:
        return self._match(model).get(fn, ([], [], []))[0]

    def records_of(self, model: "ModelView", fn: "Function") -> list[dict[str, Any]]:
        return self._match(model).get(fn, ([], [], []))[1]

    def traced_of(self, model: "ModelView", fn: "Function") -> list[dict[str, Any]]:
        """The records of what fn's parameters held each time a recorded run called it under a trace."""
        return self._match(model).get(fn, ([], [], []))[2]

    # -- what the parameters were -------------------------------------------------------------------
    def param_kind(self, model: "ModelView", fn: "Function", name: str) -> str | None:
        """"tracer" where some recorded trace of fn had a tracer (or a container holding one) in
        parameter `name`; "python" where every recorded trace had a concrete value there (a
        Python value, a NumPy array); None where no trace of fn was recorded, or one held an
        object that may hold tracers (a Module, a dataclass)."""
        from jaxfuse_lint.core.profile import OTHER, PYTHON, TRACER, param_kinds

        kinds = param_kinds(self.traced_of(model, fn), name)
        if kinds is None:
            return None
        if kinds[TRACER]:
            return TRACER
        if kinds[PYTHON] and not kinds[OTHER]:
            return PYTHON
        return None

    def param_facts(self, model: "ModelView", fn: "Function", name: str) -> dict[str, Any] | None:
        """The counts, values and first tests behind `param_kind` (core/profile.py `param_kinds`)."""
        from jaxfuse_lint.core.profile import param_kinds

        return param_kinds(self.traced_of(model, fn), name)

    def was_traced(self, model: "ModelView", fn: "Function") -> str | None:
        """Where a recorded run traced fn (a test, a script), or None: under a jit entry point
        (its operations were in the program) or called while any trace ran."""
        for record in self.traced_of(model, fn):
            return str(record.get("where") or "a recorded run")
        for record in self.records_of(model, fn):
            return str(record.get("where") or "a recorded run")
        for entry in self.entries_of(model, fn):
            sigs = entry.get("signatures") or [{}]
            return str(sigs[0].get("where") or "a recorded run")
        return None

    # -- traced-ness ---------------------------------------------------------------------------------
    def evidence(self, model: "ModelView", fn: "Function") -> str | None:
        """"traced at run time under `jax.jit(step)` (tests/t.py::test_step) with x: f32[4,3]"."""
        from jaxfuse_lint.core.profile import signature_text, spec

        records = self.records_of(model, fn)
        entries = self.entries_of(model, fn)
        if not records and not entries:
            return None
        record = records[0] if records else {"entry_name": entries[0].get("qualname"), "api": entries[0].get("api")}
        text = f"traced at run time under {_entry_phrase(record)}"
        where = record.get("where") or (entries[0]["signatures"][0].get("where") if entries and entries[0].get("signatures") else None)
        if where:
            text += f" ({where})"
        transforms = sorted({t for r in records for t in r.get("transforms", ())})
        if transforms:
            text += f" through {', '.join(transforms)}"
        sigs = [s for e in entries for s in e.get("signatures", [])]
        if sigs:
            text += f" with {signature_text(sigs[0])}"
            if len(sigs) > 1:
                text += f" (and {len(sigs) - 1} more signature{'s' if len(sigs) > 2 else ''})"
        elif records:
            if len(records[0].get("chain", ())) > 1:
                text += f", called from `{records[0]['chain'][-2].replace('.<locals>', '')}`"
            params = records[0].get("params") or {}
            if params:
                shown = [f"{name}: {spec(values[0])}" for name, values in list(params.items())[:3] if values]
                text += f" with {', '.join(shown)}"
        return text

    def add_reasons(self, model: "ModelView", regions: "TracedRegions") -> None:
        """Mark every function the run traced (those static analysis missed get this reason)."""
        from jaxfuse_lint.model.traced import TraceReason

        for fn, (entries, records, _) in self._match(model).items():
            if fn in regions.reasons or not (entries or records):
                continue
            why = self.evidence(model, fn)
            if why:
                regions.add(fn, TraceReason("external", "", fn.node, description=why, compiled=True))

    # -- lines ----------------------------------------------------------------------------------------
    def statement_at(self, model: "ModelView", line: int) -> cst.CSTNode | None:
        """The innermost simple statement (or compound statement header) starting on `line`."""
        if not hasattr(self, "_statements"):
            from libcst.metadata import MetadataWrapper, PositionProvider

            positions = MetadataWrapper(model.module, unsafe_skip_copy=True).resolve(PositionProvider)
            found: dict[int, cst.CSTNode] = {}
            for node, pos in positions.items():
                if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                    found.setdefault(pos.start.line, node)
                    if isinstance(node, cst.SimpleStatementLine):
                        for ln in range(pos.start.line, pos.end.line + 1):
                            found.setdefault(ln, node)
            self._statements = found
        return self._statements.get(line)

    # -- shapes ---------------------------------------------------------------------------------------
    def param_shape(self, model: "ModelView", fn: "Function", name: str) -> Shape | None:
        sigs = [s for e in self.entries_of(model, fn) for s in e.get("signatures", [])]
        seen: list[dict[str, Any]] = []
        for sig in sigs:
            arg = next((a for a in sig.get("args", []) if a.get("name") == name), None)
            if arg is None:
                return None  # a pytree or a static argument: no one shape
            seen.append(arg)
        # Functions called under an entry: the parameters' abstract values seen while tracing.
        for record in self.records_of(model, fn):
            seen.extend(record.get("params", {}).get(name, []))
        if not seen or not all(isinstance(a.get("shape"), list) for a in seen):
            return None
        shapes = [[d if isinstance(d, int) else None for d in a["shape"]] for a in seen]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes):
            return None
        dims = [shapes[0][i] if all(s[i] == shapes[0][i] for s in shapes) else None for i in range(rank)]
        self.shapes_used.add(fn)
        return Shape.of_dims(dims)

    def shapes_used_in(self, model: "ModelView", node: cst.CSTNode) -> bool:
        """Whether the function holding `node` (or one enclosing it) had a recorded shape used."""
        if not self.shapes_used:
            return False
        fn = model.function_of(node)
        while fn is not None:
            if fn in self.shapes_used:
                return True
            fn = next(fn.enclosing_functions(), None)
        return False


def _first_lines(model: "ModelView") -> dict["Function", int]:
    """The line Python reports as each function's first (`co_firstlineno`): the first
    decorator's line for a decorated def."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(model.module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    out: dict["Function", int] = {}
    for fn in model.index.functions:
        node = fn.node
        first = node.decorators[0].decorator if isinstance(node, cst.FunctionDef) and node.decorators else node
        if isinstance(node, cst.FunctionDef) and node.decorators:
            first = node.decorators[0]
        pos = positions.get(first)
        if pos is not None:
            line = pos.start.line
            if isinstance(node, cst.FunctionDef) and not node.decorators:
                pos2 = positions.get(node.name)
                line = pos2.start.line if pos2 is not None else line
            out[fn] = line
    return out


def cite_evidence(model: "RuntimeView", violations: list[Any]) -> None:
    """Append the run-time evidence to the message of each finding that depended on it:
    in a function only the run showed traced, or one whose recorded shapes were used."""
    runtime = model.runtime
    if runtime is None:
        return
    for v in violations:
        fn = model.function_of(v.node)
        while fn is not None:
            reason = model.trace_reason(fn)
            only_at_run_time = reason is not None and reason.kind == "external" and \
                reason.description.startswith("traced at run time")
            if fn in runtime.shapes_used or only_at_run_time:
                break
            fn = next(fn.enclosing_functions(), None)
        if fn is None:
            continue
        text = "".join(p for p in v.message if isinstance(p, str))
        if "at run time" in text:
            continue
        why = runtime.evidence(model, fn)
        if why:
            v.message = (*v.message, f" ({why})")



def traced_from_run(model: "RuntimeView", found: "Premise", roots: list[tuple["Function", str]],
                    staged: bool = False) -> "Premise":
    """The premise `traced(expr)` (model/traced_premise.py) where a recorded run saw the traced
    parameters it is computed from (`roots`): DISPROVED where every recorded trace of their
    functions had a Python value in each (a flag passed as `decode=False`: no concretization
    error, no finding) and no jax operation stages the expression (`staged`: `jnp.any(mask)` of
    a concrete `mask` is a tracer under jit all the same); RECORDED where the code only assumed
    it and a recorded trace had a tracer there (citing where); else as the code decides it."""
    from jaxfuse_lint.core.profile import PYTHON, TRACER
    from jaxfuse_lint.model.premises import ASSUMED, disproved, recorded

    runtime = getattr(model, "runtime", None)
    if runtime is None or not roots:
        return found
    kinds = [(owner, name, runtime.param_kind(model, owner, name)) for owner, name in roots]
    source = runtime.profile_path or "profile"
    if not staged and all(kind == PYTHON for _, _, kind in kinds):
        owner, name, _ = kinds[0]
        facts = runtime.param_facts(model, owner, name) or {}
        values = ", ".join(facts.get("values", [])[:3]) or " or ".join(facts.get("types", [])[:3]) or "a value"
        where = (facts.get("where") or {}).get(PYTHON) or "a recorded run"
        return disproved("traced", found.subject, "recorded-run",
                         f"`{name}` was a Python value ({values}) in every recorded trace of "
                         f"`{owner.display_name}` ({where}; {source})")
    hit = next(((owner, name) for owner, name, kind in kinds if kind == TRACER), None)
    if hit is not None and found.status == ASSUMED:
        owner, name = hit
        facts = runtime.param_facts(model, owner, name) or {}
        where = (facts.get("where") or {}).get(TRACER) or "a recorded run"
        return recorded("traced", found.subject, f"`{name}` was a tracer when `{owner.display_name}` was traced "
                                                 f"({where}; {source})")
    return found


def runs_traced_from_run(model: "RuntimeView", fn: "Function", subject: str) -> "Premise | None":
    """The premise `runs-traced(fn)` (model/evidence.py) RECORDED where a recorded run traced fn
    (citing where), else None."""
    from jaxfuse_lint.model.premises import recorded

    runtime = getattr(model, "runtime", None)
    where = runtime.was_traced(model, fn) if runtime is not None else None
    if where is None:
        return None
    return recorded("runs-traced", subject, f"`{fn.display_name}` was traced in a recorded run "
                                            f"({where}; {runtime.profile_path or 'profile'})")


def facts_for_text(text: str, settings: Any) -> RuntimeFacts | None:
    """The facts the profile named in `settings.extra` holds for exactly this text."""
    extra = dict(settings.extra)
    path = extra.get(PROFILE_KEY)
    if not path:
        return None
    from jaxfuse_lint.core.profile import ProfileError, cached_profile

    try:
        profile = cached_profile(path, extra.get(PROFILE_DIGEST_KEY, ""))
    except ProfileError:
        return None  # the command line reported it before any file was checked
    facts = profile.for_text(text)
    return RuntimeFacts(facts, path) if facts else None


def unsafe_if_recorded(plan: Any, violation: Any, model: "RuntimeView") -> Any:
    """A fix that relied on a recorded shape holds for the recorded inputs only: unsafe."""
    from jaxfuse_lint.core.diagnostics import Applicability

    runtime = model.runtime
    if runtime is None or plan.applicability is not Applicability.SAFE:
        return plan
    if not runtime.shapes_used_in(model, violation.node):
        return plan
    plan.applicability = Applicability.UNSAFE
    plan.message += "; unsafe: it relies on shapes recorded at run time (`verify --profile` checks them)"
    return plan
