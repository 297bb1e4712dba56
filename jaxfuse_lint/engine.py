"""Parse once, build the model, run the rules, apply noqa, and drive fixes.

The pipeline for one file: source bytes -> libcst Module -> SemanticModel ->
rule Violations -> (noqa) -> located Diagnostics, each with its Fix. `--fix`
repeats analyse-and-apply until nothing changes (bounded), re-parsing after
every pass and dropping any fix that would leave invalid code.
"""
from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
import sys
from typing import TYPE_CHECKING, Callable, Iterable

from jaxfuse_lint.config import Settings
from jaxfuse_lint.diagnostics import Applicability, Diagnostic, Location

# libcst, the model, the rules and the codemods are imported by the functions that parse:
# a run whose files all come from the cache (runner.py) never pays for them.
if TYPE_CHECKING:
    import libcst as cst

    from jaxfuse_lint.fixes import FixPlan
    from jaxfuse_lint.model import SemanticModel
    from jaxfuse_lint.rules import Rule, Violation

MAX_FIX_PASSES = 10
SYNTAX_ERROR = "JF000"


@dataclass
class FileResult:
    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: str | None = None
    # Internal errors (a rule or codemod that crashed): reported, never fatal.
    errors: list[str] = field(default_factory=list)
    skipped: bool = False  # no reference to JAX at all: not parsed


@dataclass
class FixOutcome:
    filename: str
    source: str  # the fixed text (unchanged when nothing applied)
    original: str
    fixed: list[Diagnostic] = field(default_factory=list)  # what was fixed, located in the original
    remaining: list[Diagnostic] = field(default_factory=list)  # located in the fixed text
    dropped: list[str] = field(default_factory=list)  # fixes left out because they broke the code
    errors: list[str] = field(default_factory=list)
    encoding: str = "utf-8"

    @property
    def changed(self) -> bool:
        return self.source != self.original


def decode(source: bytes | str) -> tuple[str, str]:
    """Text and encoding, honouring a BOM or a PEP 263 coding cookie.

    The encoding is returned so that `--fix` writes the file back the way it was
    (`utf-8-sig` keeps a BOM)."""
    if isinstance(source, str):
        return source, "utf-8"
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    return source.decode(encoding), encoding


def mentions_jax(text: str, settings: Settings) -> bool:
    roots = "|".join(re.escape(m) for m in settings.jax_modules + ("jax",))
    return re.search(rf"\b({roots})\b", text) is not None


def syntax_error_diagnostic(filename: str, exc: Exception, text: str | None = None) -> Diagnostic:
    """JF000 at the error. CPython's own message and position are preferred when it agrees
    the file is invalid: they are what users know, and libcst's native parser may point
    at the end of the file instead of the offending token."""
    row, col, msg = 1, 1, " ".join(str(exc).split()) or type(exc).__name__
    libcst = sys.modules.get("libcst")  # not imported: exc cannot be one of its errors
    if libcst is not None and isinstance(exc, libcst.ParserSyntaxError):
        row, col, msg = exc.raw_line, exc.raw_column + 1, " ".join(exc.message.split())
    elif isinstance(exc, SyntaxError):
        row, col, msg = exc.lineno or 1, exc.offset or 1, exc.msg
    if text is not None:
        try:
            compile(text, filename, "exec", dont_inherit=True)
        except SyntaxError as py_exc:
            row, col, msg = py_exc.lineno or row, py_exc.offset or col, py_exc.msg
        except (ValueError, RecursionError, MemoryError):
            pass
    loc = Location(max(row, 1), max(col, 1))
    return Diagnostic(SYNTAX_ERROR, "syntax-error", f"Could not parse file: {msg}", filename, loc, loc, noqa_row=loc.row)


def enabled_rules(settings: Settings, filename: str | None = None) -> list[Rule]:
    from jaxfuse_lint.rules import all_rules

    return [r for r in all_rules() if settings.is_enabled(r.code, filename)]


def _run_rules(model: SemanticModel, rules: Iterable[Rule], settings: Settings, filename: str,
               errors: list[str]) -> list[tuple[Rule, Violation]]:
    found = []
    for rule in rules:
        try:
            for v in rule.check(model, settings):
                found.append((rule, v))
        except Exception as exc:  # one broken rule must not stop the others
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            errors.append(f"{filename}: internal error in {rule.code} ({rule.name}): "
                          f"{type(exc).__name__}: {exc} [{tb.filename.rsplit('/', 1)[-1]}:{tb.lineno}]")
    return found


def _build_plan(rule: Rule, v: Violation, model: SemanticModel, settings: Settings, errors: list[str],
                filename: str) -> FixPlan | None:
    if rule.fixable == "never":
        return None
    from codemods import fixer_for

    build = fixer_for(rule.code)
    if build is None:
        return None
    try:
        return build(v, model, settings)
    except Exception as exc:
        errors.append(f"{filename}: internal error in the {rule.code} codemod: {type(exc).__name__}: {exc}")
        return None


class Analysis:
    """One parsed module, its model and its (unsuppressed) violations."""

    def __init__(self, module: cst.Module, filename: str, settings: Settings,
                 external_traced: dict[str, str] | None = None, apply_noqa: bool = True) -> None:
        from jaxfuse_lint.locate import Locator
        from jaxfuse_lint.model import SemanticModel
        from jaxfuse_lint.noqa import parse_suppressions

        self.module = module
        self.filename = filename
        self.settings = settings
        self.errors: list[str] = []
        self.model = SemanticModel(module, settings.jax_modules, external_traced)
        rules = enabled_rules(settings, filename)
        self.violations = _run_rules(self.model, rules, settings, filename, self.errors)
        nodes = set()
        for _, v in self.violations:
            nodes.add(v.range_node or v.node)
            nodes.update(v.line_refs())
        self.locator = Locator(module, nodes)
        suppress = parse_suppressions(module.code) if self.violations and apply_noqa else None
        if suppress is not None:
            self.violations = [
                (r, v) for r, v in self.violations
                if not suppress.suppressed(r.code, self.locator.line(v.range_node or v.node))
            ]
        self.violations.sort(key=lambda rv: (self.locator.start(rv[1].range_node or rv[1].node), rv[0].code))
        self._plans: dict[int, FixPlan | None] = {}

    def plan(self, rule: Rule, v: Violation) -> FixPlan | None:
        if id(v) not in self._plans:
            self._plans[id(v)] = _build_plan(rule, v, self.model, self.settings, self.errors, self.filename)
        return self._plans[id(v)]

    def diagnostic(self, rule: Rule, v: Violation, with_fix: bool = True) -> Diagnostic:
        start, end = self.locator.range(v.range_node or v.node)
        fix = None
        if with_fix:
            plan = self.plan(rule, v)
            if plan is not None:
                from jaxfuse_lint.fixes import plan_to_fix

                fix = plan_to_fix(self.module, plan)
        return Diagnostic(
            code=rule.code, name=rule.name, message=v.render(self.locator.line), filename=self.filename,
            location=start, end_location=end, fix=fix, noqa_row=start.row,
        )

    def diagnostics(self, with_fixes: bool = True) -> list[Diagnostic]:
        return [self.diagnostic(r, v, with_fixes) for r, v in self.violations]


def check_source(source: bytes | str, filename: str, settings: Settings, *, with_fixes: bool = True,
                 external_traced: dict[str, str] | None = None, apply_noqa: bool = True,
                 model_hook: Callable[[SemanticModel], None] | None = None) -> FileResult:
    """Check one file. `external_traced`: its functions that other modules trace (see project.py);
    `model_hook` is called with the file's model when it was parsed (the runner's project summary)."""
    result = FileResult(filename)
    try:
        text, _ = decode(source) if isinstance(source, bytes) else (source, "utf-8")
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        result.diagnostics.append(syntax_error_diagnostic(filename, exc))
        return result
    result.source = text
    if not external_traced and not mentions_jax(text, settings):
        result.skipped = True
        return result
    import libcst as cst

    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError) as exc:
        result.diagnostics.append(syntax_error_diagnostic(filename, exc, text))
        return result
    try:
        analysis = Analysis(module, filename, settings, external_traced, apply_noqa)
        result.diagnostics = analysis.diagnostics(with_fixes)
        if model_hook is not None:
            model_hook(analysis.model)
    except RecursionError:
        result.errors.append(f"{filename}: internal error: the file is nested too deeply to analyse")
        return result
    except Exception as exc:
        result.errors.append(f"{filename}: internal error: {type(exc).__name__}: {exc}")
        return result
    result.errors.extend(analysis.errors)
    return result


def fix_source(source: bytes | str, filename: str, settings: Settings, *, unsafe: bool = False,
               external_traced: dict[str, str] | None = None,
               model_hook: Callable[[SemanticModel], None] | None = None) -> FixOutcome:
    """Apply fixes to a fixed point. Safe fixes always; unsafe ones only with `unsafe`."""
    if isinstance(source, bytes):
        text, encoding = decode(source)
    else:
        text, encoding = source, "utf-8"
    outcome = FixOutcome(filename, text, text, encoding=encoding)
    if not external_traced and not mentions_jax(text, settings):
        return outcome
    import libcst as cst

    from jaxfuse_lint.fixes import non_overlapping

    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    code = text
    rejected: set[tuple[str, int, int, str]] = set()
    first_analysis: Analysis | None = None
    for _ in range(MAX_FIX_PASSES):
        module = cst.parse_module(code)
        analysis = Analysis(module, filename, settings, external_traced)
        outcome.errors.extend(e for e in analysis.errors if e not in outcome.errors)
        if first_analysis is None:
            first_analysis = analysis
            if model_hook is not None:  # the model of the original text
                model_hook(analysis.model)
        candidates: list[tuple[Rule, Violation, FixPlan]] = []
        for rule, v in analysis.violations:
            plan = analysis.plan(rule, v)
            if plan is None or plan.applicability not in allowed:
                continue
            start = analysis.locator.start(v.range_node or v.node)
            if (rule.code, start.row, start.column, code) in rejected:
                continue
            candidates.append((rule, v, plan))
        if not candidates:
            break
        chosen = non_overlapping([p for _, _, p in candidates], analysis.model.index.parents)
        chosen_ids = {id(p) for p in chosen}
        batch = [(r, v, p) for r, v, p in candidates if id(p) in chosen_ids]
        new_code, applied = _apply_valid(module, batch, filename, outcome, rejected, code, analysis)
        if not applied or new_code == code:
            break
        for r, v, _ in applied:
            d = analysis.diagnostic(r, v, with_fix=False)
            outcome.fixed.append(d)
        code = new_code
    outcome.source = code
    # What is left, located in the fixed text.
    final = check_source(code, filename, settings, with_fixes=True, external_traced=external_traced)
    outcome.remaining = final.diagnostics
    return outcome


def _apply_valid(module, batch, filename, outcome, rejected, code, analysis):
    """Apply a batch of fixes; if the result is invalid, find and drop the fixes that break it."""
    from jaxfuse_lint.fixes import apply_plans, is_valid_python

    new_code = apply_plans(module, [p for _, _, p in batch]).code
    if is_valid_python(new_code, filename) is None:
        return new_code, batch
    good = []
    for r, v, p in batch:
        try:
            single = apply_plans(module, [p]).code
            problem = is_valid_python(single, filename)
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem is None:
            good.append((r, v, p))
        else:
            start = analysis.locator.start(v.range_node or v.node)
            rejected.add((r.code, start.row, start.column, code))
            outcome.dropped.append(
                f"{filename}:{start.row}:{start.column}: {r.code} fix dropped: it would produce invalid code ({problem})"
            )
    if not good:
        return code, []
    new_code = apply_plans(module, [p for _, _, p in good]).code
    if is_valid_python(new_code, filename) is not None:
        return code, []
    return new_code, good
