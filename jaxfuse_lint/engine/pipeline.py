"""Parse once, build the model, run the rules, apply noqa, and drive fixes.

The pipeline for one file: source bytes -> libcst Module -> SemanticModel ->
rule Violations -> (noqa) -> located Diagnostics, each with its Fix. `--fix`
repeats analyse-and-apply until nothing changes (bounded), re-parsing after
every pass and dropping any fix that would leave invalid code.
A notebook goes through the same pipeline as its code cells joined into one module
(parse/notebook.py maps cells to the module and back; `check_notebook`/`fix_notebook`
at the end drive it).
"""
from __future__ import annotations

import functools
import os

import re
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from jaxfuse_lint.core.config import IGNORE_NOQA, Settings
from jaxfuse_lint.core.diagnostics import Applicability, Diagnostic, Location, PremiseRecord
from jaxfuse_lint.parse import continuations, identifiers
from jaxfuse_lint.parse.grammar import check_text, cpython_reads, not_checked, readable
from jaxfuse_lint.parse.parser_guard import parse_guard_text
from jaxfuse_lint.parse.syntax_errors import SYNTAX_ERROR, syntax_error_diagnostic

# libcst, the model, the rules and the codemods are imported by the functions that parse:
# a run whose files all come from the cache (run/runner.py) never pays for them.
if TYPE_CHECKING:
    import libcst as cst

    from jaxfuse_lint.codemods.plan import FixPlan
    from jaxfuse_lint.model import SemanticModel
    from jaxfuse_lint.parse.notebook import Notebook
    from jaxfuse_lint.rules import Rule, Violation

MAX_FIX_PASSES = 10
UNUSED_NOQA = "JF901"


class AnalysisStopped(Exception):
    """Raised by check_source when its `should_stop()` says so (checked between the steps: the
    parse, each rule, each finding's fix): the language server stops analysing a text that an
    edit has made stale, or a document that was closed."""


def _checkpoint(should_stop: Callable[[], bool] | None) -> None:
    if should_stop is not None and should_stop():
        raise AnalysisStopped()


@dataclass
class FileResult:
    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    source: str | None = None
    # Internal errors (a rule or codemod that crashed): reported, never fatal.
    errors: list[str] = field(default_factory=list)
    skipped: bool = False  # no reference to JAX at all: not parsed
    # Patterns seen but not decided: findings in the preview tier this run does not report (each
    # names the premise it assumes; `--show-undecided`, the summary's "N not decided").
    undecided: list[Diagnostic] = field(default_factory=list)


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
    undecodable: bytes | None = None  # the bytes of a file that could not be decoded (left alone)

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
    """Whether the text may use JAX: its name, a configured fork, or a framework built on it
    whose Module bodies are traced by default (a flax- or equinox-only model file)."""
    from jaxfuse_lint.model.routes import frameworks

    roots = "|".join(re.escape(m) for m in settings.jax_modules + ("jax",) + frameworks())
    return re.search(rf"\b({roots})\b", text) is not None


def runtime_facts_for(text: str, settings: Settings):
    """What the profile in use (`check --profile`) recorded about exactly this text, or None."""
    if not settings.extra:
        return None
    from jaxfuse_lint.model.runtime_facts import facts_for_text

    return facts_for_text(text, settings)


def enabled_rules(settings: Settings, filename: str | None = None) -> list[Rule]:
    from jaxfuse_lint.rules import all_rules

    return [r for r in all_rules() if r.stage == "model" and rule_runs(r, settings, filename)]


def rule_runs(rule: Rule, settings: Settings, filename: str | None = None) -> bool:
    """Selected (and not ignored here), and in the default set or preview is on."""
    return (not rule.preview or settings.preview) and settings.is_enabled(rule.code, filename)


def _run_rules(model: SemanticModel, rules: Iterable[Rule], settings: Settings, filename: str,
               errors: list[str], should_stop: Callable[[], bool] | None = None) -> list[tuple[Rule, Violation]]:
    found = []
    for rule in rules:
        _checkpoint(should_stop)
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
    if rule.fixable == "never" or v.no_fix is not None or v.preview is not None:
        return None  # (a finding that assumes a premise never carries a fix)
    from jaxfuse_lint.codemods import fixer_for

    build = fixer_for(rule.code)
    if build is None:
        return None
    try:
        return build(v, model, settings)
    except Exception as exc:
        _fix_error(errors, filename, rule.code, exc)
        return None


def leaves_unchecked(error: str) -> bool:
    """Whether an error of a file's result says an internal error kept (part of) the file from
    being checked: an analysis or a rule that crashed, a worker that died or ran out of time, a
    project summary that could not be made. Not a codemod's error: its finding is kept, without
    the fix. The run fails with such a file, and names it (cli/main.py)."""
    return ": internal error" in error and _FIX_DROPPED not in error


_FIX_DROPPED = "codemod (fix dropped, finding kept)"


def _fix_error(errors: list[str], filename: str, code: str, exc: Exception) -> None:
    """A fix that could not be built (a codemod bug): the finding is reported without it, and the
    error is kept for the run's diagnostics (once per file and message)."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" [{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}]" if tb else ""
    text = f"{filename}: internal error in the {code} {_FIX_DROPPED}: " \
           f"{type(exc).__name__}: {' '.join(str(exc).split())}{where}"
    if text not in errors:
        errors.append(text)


def module_name_of(filename: str) -> str:
    """The dotted module name of a file (packages are folders with `__init__.py`), else its stem."""
    from jaxfuse_lint.project.module_names import ModuleNamer

    named = ModuleNamer().name(filename)
    return named[0] if named is not None else os.path.splitext(os.path.basename(filename))[0]


class Analysis:
    """One parsed module, its model and its (unsuppressed) violations."""

    def __init__(self, module: cst.Module, filename: str, settings: Settings,
                 external_traced: dict[str, str] | None = None, apply_noqa: bool = True,
                 runtime=None, source: str | None = None, should_stop: Callable[[], bool] | None = None) -> None:
        """`source`: the module's code when the caller has it (`module.code` generates it
        again: ~40 ms for a 2,000-line file, once per finding's fix and once for `noqa`).
        `should_stop`: see AnalysisStopped."""
        from jaxfuse_lint.parse.locate import Locator
        from jaxfuse_lint.model import SemanticModel
        from jaxfuse_lint.model.premises import PREVIEW, SILENT
        from jaxfuse_lint.engine.noqa import parse_suppressions

        self.module = module
        self._source = source
        self.filename = filename
        self.settings = settings
        apply_noqa = apply_noqa and IGNORE_NOQA not in settings.extra  # `--ignore-noqa`
        self.errors: list[str] = []
        self.model = SemanticModel(module, settings.jax_modules, external_traced, runtime=runtime)
        # The file's dotted module name, asked for only when a rule needs it (a package's module is a
        # library's: JF302's evidence, model/call_frequency.py).
        self.model.module_name = functools.partial(module_name_of, filename)
        if settings.assume_traced:  # library mode (model/assumed.py)
            self.model.assume_traced = (module_name_of(filename), settings.assume_traced)
        rules = enabled_rules(settings, filename)
        self.should_stop = should_stop
        self.violations: list[tuple[Rule, Violation]] = []
        # Findings in the preview tier that this run does not report (preview is off): patterns seen
        # but not decided, each with the premise it assumes (model/premises.py).
        self.undecided: list[tuple[Rule, Violation]] = []
        for r, v in _run_rules(self.model, rules, settings, filename, self.errors, should_stop):
            t = v.tier  # the one decision, for every rule: from the finding's premises
            if t == SILENT:
                continue
            if t == PREVIEW and not settings.preview:
                self.undecided.append((r, v))
                continue
            self.violations.append((r, v))
        if runtime is not None:
            from jaxfuse_lint.model.runtime_facts import cite_evidence

            cite_evidence(self.model, [v for _, v in self.violations])
        nodes = set()
        for _, v in self.violations + self.undecided:
            nodes.add(v.range_node or v.node)
            nodes.update(v.line_refs())
        self.locator = Locator(module, nodes, source=self._source, parent=self.model.parent)
        check_noqa = apply_noqa and settings.is_enabled(UNUSED_NOQA, filename) and "noqa" in self.source.lower()
        suppress = parse_suppressions(self.source) if (self.violations or check_noqa) and apply_noqa else None
        if suppress is not None:
            self.violations = [
                (r, v) for r, v in self.violations
                if not suppress.suppressed(r.code, self.locator.line(v.range_node or v.node))
            ]
        if self.undecided and apply_noqa and "noqa" in self.source.lower():
            found = suppress if suppress is not None else parse_suppressions(self.source)
            self.undecided = [(r, v) for r, v in self.undecided
                              if not found.suppressed(r.code, self.locator.line(v.range_node or v.node))]
        self.noqa_diagnostics = self._unused_noqa(suppress) if check_noqa and suppress is not None else []
        self.violations.sort(key=lambda rv: (self.locator.start(rv[1].range_node or rv[1].node), rv[0].code))
        self._plans: dict[int, FixPlan | None] = {}

    @property
    def source(self) -> str:
        if self._source is None:
            self._source = self.module.code
        return self._source

    def _unused_noqa(self, suppress) -> list[Diagnostic]:
        """JF901: `# noqa: JF...` directives that suppressed nothing (noqa.unused_directives)."""
        from jaxfuse_lint.core.diagnostics import Edit, Fix
        from jaxfuse_lint.core.lines import split_lines
        from jaxfuse_lint.engine.noqa import removal_edit, unused_directives
        from jaxfuse_lint.rules import all_rules

        rules = [r for r in all_rules() if r.stage == "model"]
        known = {r.code for r in all_rules()}
        enabled = {r.code for r in rules if rule_runs(r, self.settings, self.filename)}
        lines = split_lines(self.source)
        out = []
        for d, unused, unknown in unused_directives(suppress, lines, lambda c: c in enabled, known):
            parts = []
            if unused:
                parts.append("unused: " + ", ".join(f"`{c}`" for c in unused))
            if unknown:
                parts.append("unknown: " + ", ".join(f"`{c}`" for c in unknown))
            line = lines[d.row - 1]
            start, end, content = removal_edit(d, line, unused + unknown)
            fix = None
            if self.settings.is_fixable(UNUSED_NOQA):
                what = "Remove the unused `noqa` directive" if not content or content == "#" else "Remove the unused codes"
                fix = Fix(Applicability.SAFE, what, (Edit(content, Location(d.row, start + 1), Location(d.row, end + 1)),))
            out.append(Diagnostic(UNUSED_NOQA, "unused-noqa", f"Unused `noqa` directive ({'; '.join(parts)})",
                                  self.filename, Location(d.row, d.start + 1), Location(d.row, d.end + 1),
                                  fix=fix, noqa_row=d.row))
        return out

    def plan(self, rule: Rule, v: Violation) -> FixPlan | None:
        if not self.settings.is_fixable(rule.code):  # `unfixable`, or not in `fixable`
            return None
        if id(v) not in self._plans:
            plan = _build_plan(rule, v, self.model, self.settings, self.errors, self.filename)
            if plan is not None and self.model.runtime is not None:
                from jaxfuse_lint.model.runtime_facts import unsafe_if_recorded

                plan = unsafe_if_recorded(plan, v, self.model)
            self._plans[id(v)] = plan
        return self._plans[id(v)]

    def diagnostic(self, rule: Rule, v: Violation, with_fix: bool = True) -> Diagnostic:
        from jaxfuse_lint.codemods.plan import plan_to_fix

        start, end = self.locator.range(v.range_node or v.node)
        fix = None
        if with_fix:
            plan = self.plan(rule, v)
            if plan is not None:
                try:
                    fix = plan_to_fix(self.module, plan, self.source, self.model.parent,
                                      with_cpython=cpython_reads(self.settings))
                except Exception as exc:  # a fix that cannot be built is dropped; the finding stays
                    self._plans[id(v)] = None
                    _fix_error(self.errors, self.filename, rule.code, exc)
        text = v.render(self.locator.line)
        line = self.locator.line
        preview = v.preview
        if preview is not None:
            text += " (preview: " + "".join(p if isinstance(p, str) else str(line(p.node)) for p in preview) + ")"
        premises = tuple(
            PremiseRecord(p.name, p.status, ": ".join(x for x in (p.inference, p.render_source(line)) if x))
            for p in v.premises)
        return Diagnostic(
            code=rule.code, name=rule.name, message=text, filename=self.filename,
            location=start, end_location=end, fix=fix, noqa_row=start.row, premises=premises,
        )

    def undecided_diagnostics(self) -> list[Diagnostic]:
        """The patterns seen but not decided (see `undecided`), located, without fixes."""
        out = [self.diagnostic(r, v, with_fix=False) for r, v in self.undecided]
        out.sort(key=lambda d: (d.location.row, d.location.column, d.code))
        return out

    def diagnostics(self, with_fixes: bool = True) -> list[Diagnostic]:
        out = []
        for r, v in self.violations:
            if with_fixes:
                _checkpoint(self.should_stop)
            out.append(self.diagnostic(r, v, with_fixes))
        if self.noqa_diagnostics:
            out += self.noqa_diagnostics
            out.sort(key=lambda d: (d.location.row, d.location.column, d.code))
        return out


def parse_verdict(text: str, filename: str, settings: Settings,
                  parse: Callable[[str], cst.Module] | None = None,
                  code: str | None = None) -> tuple[cst.Module | None, Diagnostic | str | None]:
    """libcst's parse of the text in the project's grammar (parse/grammar.py): (the module, None),
    or (None, JF000), or (None, the notice that says the file was not checked: no parser here
    reads `target-version`'s grammar, or the text is too deep for libcst and the running Python
    cannot judge it)."""
    import libcst as cst

    guard = parse_guard_text(text, filename)
    if guard is not None:
        if not cpython_reads(settings):
            return None, not_checked(filename, settings, "it is nested too deeply or too long to parse safely")
        return None, guard
    try:
        # `code`: the text as libcst is given it (lone backslash lines masked: parse/continuations.py;
        # same rows and columns), where it differs.
        if parse is None:
            from jaxfuse_lint.parse.reparse import parse_in_pieces as parse  # a large file in pieces (memory)
        return parse(text if code is None else code), None
    except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError) as exc:
        if not readable(settings):
            return None, not_checked(filename, settings)
        return None, syntax_error_diagnostic(filename, exc, text, cpython=cpython_reads(settings))


def too_large(size: int, filename: str, settings: Settings, *, notebook_code: bool = False) -> Diagnostic | None:
    """JF000 for a file over `max-file-size`: not analysed (a 50 MB file drove a worker to 14 GB).
    A notebook's file is bounded by `max-notebook-size` (it is mostly outputs, which are never
    decoded), and its code, the joined code cells (`notebook_code`), by `max-file-size`."""
    notebook = filename.lower().endswith(".ipynb")
    limit = settings.max_notebook_size if notebook and not notebook_code else settings.max_file_size
    if size <= limit:
        return None
    loc = Location(1, 1)
    if notebook and notebook_code:
        text = f"Notebook not checked: its code cells hold {size:,} bytes, over `max-file-size` ({limit:,} bytes)"
    else:
        key = "max-notebook-size" if notebook else "max-file-size"
        text = f"File not checked: {size:,} bytes is over `{key}` ({limit:,} bytes)"
    return Diagnostic(SYNTAX_ERROR, "syntax-error", text, filename, loc, loc, noqa_row=1)


def check_source(source: bytes | str, filename: str, settings: Settings, *, with_fixes: bool = True,
                 external_traced: dict[str, str] | None = None, apply_noqa: bool = True,
                 model_hook: Callable[[SemanticModel], None] | None = None,
                 runtime=None, as_python: bool = False,
                 parse: Callable[[str], cst.Module] | None = None,
                 should_stop: Callable[[], bool] | None = None) -> FileResult:
    """Check one file. `external_traced`: its functions that other modules trace (see project/);
    `model_hook` is called with the file's model when it was parsed (the runner's project summary).
    A `.ipynb` filename means the source is a notebook's JSON (see notebook.py), unless
    `as_python` (the notebook's cells joined into a module). `parse`: what parses the text
    (default `libcst.parse_module`; the language server's reparse.IncrementalParser).
    `should_stop`: asked between the steps; AnalysisStopped is raised when it says yes."""
    import libcst as cst

    if filename.lower().endswith(".ipynb") and not as_python:
        return check_notebook(source, filename, settings, with_fixes=with_fixes, external_traced=external_traced,
                              apply_noqa=apply_noqa, model_hook=model_hook, should_stop=should_stop)
    result = FileResult(filename)
    big = too_large(len(source), filename, settings, notebook_code=as_python)
    if big is not None:
        result.diagnostics.append(big)
        return result
    try:
        text, _ = decode(source) if isinstance(source, bytes) else (source, "utf-8")
    except (UnicodeDecodeError, SyntaxError, LookupError) as exc:
        result.diagnostics.append(syntax_error_diagnostic(
            filename, exc, data=source if isinstance(source, bytes) else None))
        return result
    result.source = text
    if runtime is None:
        runtime = runtime_facts_for(text, settings)
    else:
        runtime = runtime.for_text(text)
    if not external_traced and runtime is None and not mentions_jax(text, settings):
        # No rule has anything to say about it; its syntax is still checked.
        result.skipped = True
        broken, notice = check_text(text, filename, settings)
        result.diagnostics.extend([broken] if broken is not None else [])
        result.errors.extend([notice] if notice is not None else [])
        return result
    # Identifiers as Python reads them (`ｇ` is `g`): analysed normalised, reported as written.
    names = identifiers.normalized(text)
    work = names.text if names is not None else text
    masked, unsupported = continuations.mask(work)  # lone backslash lines: libcst misreads them
    if unsupported is not None:
        result.diagnostics.append(continuation_diagnostic(filename, text, unsupported))
        return result
    _checkpoint(should_stop)
    module, unparsed = parse_verdict(work, filename, settings, parse, code=masked)
    if module is None:
        if isinstance(unparsed, str):
            result.errors.append(unparsed)
        elif unparsed is not None:
            result.diagnostics.append(names.diagnostic(unparsed) if names is not None else unparsed)
        return result
    _checkpoint(should_stop)
    try:
        analysis = Analysis(module, filename, settings, external_traced, apply_noqa, runtime=runtime, source=masked,
                            should_stop=should_stop)
        result.diagnostics = analysis.diagnostics(with_fixes)
        result.undecided = analysis.undecided_diagnostics()
        if masked is not work:
            result.diagnostics = [_with_backslash_lines(d) for d in result.diagnostics]
            result.undecided = [_with_backslash_lines(d) for d in result.undecided]
        if names is not None:
            result.diagnostics = [names.diagnostic(d) for d in result.diagnostics]
            result.undecided = [names.diagnostic(d) for d in result.undecided]
        if model_hook is not None:
            model_hook(analysis.model)
    except AnalysisStopped:
        raise
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
               model_hook: Callable[[SemanticModel], None] | None = None, as_python: bool = False) -> FixOutcome:
    """Apply fixes to a fixed point. Safe fixes always; unsafe ones only with `unsafe`."""
    import libcst as cst
    from jaxfuse_lint.codemods.plan import is_valid_python
    from jaxfuse_lint.codemods.plan import non_overlapping

    if filename.lower().endswith(".ipynb") and not as_python:
        return fix_notebook(source, filename, settings, unsafe=unsafe, external_traced=external_traced,
                            model_hook=model_hook)
    big = too_large(len(source), filename, settings, notebook_code=as_python)
    if big is not None:
        outcome = FixOutcome(filename, "", "", undecodable=source if isinstance(source, bytes) else source.encode())
        outcome.remaining = [big]
        return outcome
    if isinstance(source, bytes):
        try:
            text, encoding = decode(source)
        except (UnicodeDecodeError, SyntaxError, LookupError) as exc:  # left alone, as check reports it
            outcome = FixOutcome(filename, "", "", undecodable=source)
            outcome.remaining = [syntax_error_diagnostic(filename, exc, data=source)]
            return outcome
    else:
        text, encoding = source, "utf-8"
    outcome = FixOutcome(filename, text, text, encoding=encoding)
    runtime = runtime_facts_for(text, settings)
    if not external_traced and runtime is None and not mentions_jax(text, settings):
        broken, notice = check_text(text, filename, settings)
        outcome.remaining = [broken] if broken is not None else []
        outcome.errors.extend([notice] if notice is not None else [])
        return outcome
    allowed = {Applicability.SAFE} | ({Applicability.UNSAFE} if unsafe else set())
    rejected: set[tuple[str, int, int, str]] = set()
    # Identifiers as Python reads them (`ｇ` is `g`): fixed normalised; the lines the fixes leave
    # keep their spelling (`names.restore`).
    names = identifiers.normalized(text)
    work = names.text if names is not None else text
    code, unsupported = continuations.mask(work)  # restored in what is written (`_fixed_text`)
    if unsupported is not None:
        outcome.remaining = [continuation_diagnostic(filename, text, unsupported)]  # left alone
        return outcome
    parsed, unparsed = parse_verdict(work, filename, settings, code=code)
    if parsed is None:  # left alone
        if isinstance(unparsed, str):
            outcome.errors.append(unparsed)
        else:
            outcome.remaining = [names.diagnostic(unparsed) if names is not None else unparsed]
        return outcome
    cpython = cpython_reads(settings)
    # Each pass reads the parse that judged its text (the first: parse_verdict's; the next: the
    # one that validated the fixes), and only one pass's tree and model are alive at a time: a
    # file at the size ceiling took ~1.3 KB of memory per byte of source with three of them.
    module: cst.Module | None = parsed
    parsed = None
    analysis: Analysis | None = None
    hooked = False
    for _ in range(MAX_FIX_PASSES):
        if module is None:
            from jaxfuse_lint.parse.reparse import parse_in_pieces

            module = parse_in_pieces(code)
        # The recorded facts are about the original text; later passes match them by name.
        analysis = Analysis(module, filename, settings, external_traced, source=code,
                            runtime=runtime.for_text(code) if runtime else None)
        outcome.errors.extend(e for e in analysis.errors if e not in outcome.errors)
        if not hooked:
            hooked = True
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
        new_code, applied, new_module = _apply_valid(module, batch, filename, outcome, rejected, code, analysis,
                                                     cpython)
        if not applied or new_code == code:
            break
        for r, v, _ in applied:
            d = analysis.diagnostic(r, v, with_fix=False)
            outcome.fixed.append(d)
        code = new_code
        module, analysis = new_module, None
    outcome.source = code
    # What is left, located in the fixed text: the last pass's findings when it analysed that
    # text (it found nothing more to fix), else a check of it.
    if analysis is not None:
        final = FileResult(filename, analysis.diagnostics(with_fixes=True), code)
    else:
        module = None
        final = check_source(code, filename, settings, with_fixes=True, external_traced=external_traced,
                             runtime=runtime, as_python=True)
    module = analysis = None
    # JF901's fixes edit comments only (text edits, not libcst plans): applied last, once the
    # other fixes have settled which directives are still used.
    noqa_fixes = [d for d in final.diagnostics if d.code == UNUSED_NOQA and d.fix is not None
                  and d.fix.applicability in allowed]
    if noqa_fixes:
        from jaxfuse_lint.core.edits import apply_edits

        new_code = apply_edits(code, [e for d in noqa_fixes for e in d.fix.edits])
        if is_valid_python(new_code, filename, with_cpython=cpython) is None:
            outcome.fixed.extend(noqa_fixes)
            code = outcome.source = new_code
            final = check_source(code, filename, settings, with_fixes=True, external_traced=external_traced,
                                 runtime=runtime, as_python=True)
    outcome.remaining = final.diagnostics
    outcome.source = _fixed_text(code, work, filename, outcome)
    if names is not None:
        outcome.source = names.restore(outcome.source)
        outcome.fixed = [names.diagnostic(d) for d in outcome.fixed]
        if outcome.source != code:  # what is left, located in the text as it will be written
            outcome.remaining = check_source(outcome.source, filename, settings, with_fixes=True,
                                             external_traced=external_traced, runtime=runtime,
                                             as_python=True).diagnostics
    return outcome


def _with_backslash_lines(d: Diagnostic) -> Diagnostic:
    """A diagnostic of a masked text (parse/continuations.py) whose fix writes its backslash lines back."""
    if d.fix is None:
        return d
    from dataclasses import replace

    edits = tuple(replace(e, content=continuations.restore(e.content)) for e in d.fix.edits)
    return replace(d, fix=replace(d.fix, edits=edits))


def _fixed_text(code: str, original: str, filename: str, outcome: FixOutcome) -> str:
    """The fixed code with the backslash lines it was parsed without (continuations.py); the
    original when the fixes moved one where CPython would read it otherwise (never written)."""
    restored = continuations.restore(code)
    if restored == code or restored == original:
        return restored
    from jaxfuse_lint.parse.parser_guard import cpython_rejects

    if cpython_rejects(restored, filename) is not None:
        outcome.errors.append(f"{filename}: fixes not applied: they would move a line that holds only a backslash")
        outcome.fixed = []
        return original
    return restored


def continuation_diagnostic(filename: str, text: str, row: int) -> Diagnostic:
    """JF000 for a backslash line that continues onto a line indented differently: CPython's
    verdict when it rejects the file, else that libcst cannot read it as Python does."""
    from jaxfuse_lint.parse.parser_guard import cpython_diagnostic, cpython_rejects
    from jaxfuse_lint.parse.syntax_errors import syntax_error_at

    exc = cpython_rejects(text, filename)
    if exc is not None:
        return cpython_diagnostic(filename, exc)
    return syntax_error_at(filename, row, 1, "the line after this backslash is indented differently from it "
                                             "(Python takes the backslash line's indentation; not supported)")


def _apply_valid(module, batch, filename, outcome, rejected, code, analysis, cpython: bool = True):
    """Apply a batch of fixes; if the result is invalid, find and drop the fixes that break it.
    (the new code, the fixes applied, libcst's parse of the new code (None: not made))."""
    from jaxfuse_lint.codemods.plan import apply_plans, is_valid_python, parse_valid

    parent = analysis.model.parent  # only the paths to the replaced nodes are visited
    try:
        new_code = apply_plans(module, [p for _, _, p in batch], parent).code
        new_module, problem = parse_valid(new_code, filename, with_cpython=cpython)
        if problem is None:
            return new_code, batch, new_module
    except Exception:  # one plan that cannot be applied: found and dropped one by one below
        pass
    good = []
    for r, v, p in batch:
        try:
            single = apply_plans(module, [p], parent).code
            problem = is_valid_python(single, filename, with_cpython=cpython)
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
        return code, [], None
    try:
        new_code = apply_plans(module, [p for _, _, p in good], parent).code
    except Exception:
        return code, [], None
    new_module, problem = parse_valid(new_code, filename, with_cpython=cpython)
    if problem is not None:
        return code, [], None
    return new_code, good, new_module


# -- notebooks: the pipeline over a notebook's cells joined into one module (parse/notebook.py) --------

def notebook_syntax_error(filename: str, message: str) -> Diagnostic:
    loc = Location(1, 1)
    return Diagnostic(SYNTAX_ERROR, "syntax-error", f"Could not read notebook: {message}", filename, loc, loc,
                      noqa_row=None)


def check_notebook(source: bytes | str, filename: str, settings, **kwargs):
    """`engine.check_source` for a notebook: diagnostics located in cells."""
    from jaxfuse_lint.parse.notebook import NotebookError, decode_text, read

    result = FileResult(filename)
    big = too_large(len(source), filename, settings)  # `max-notebook-size`: not read, one JF000
    if big is not None:
        result.diagnostics.append(big)
        return result
    try:
        raw = decode_text(source)
        nb = read(raw)
    except (UnicodeDecodeError, NotebookError) as exc:
        result.diagnostics.append(notebook_syntax_error(filename, _why(exc)))
        return result
    result.source = raw
    if not nb.python or not nb.module:
        result.skipped = True
        return result
    big = too_large(len(nb.module), filename, settings, notebook_code=True)  # the code, not the outputs
    if big is not None:
        result.diagnostics.append(big)
        return result
    # A cell the parser guard refuses (CPython rejects it, shaped to hurt libcst's parser: HTML after a
    # Colab form line) is left out alone, before any parse of the joined cells.
    cells = _guarded_cells(nb, filename, settings)
    inner = check_source(nb.module, filename, settings, as_python=True, **kwargs)
    if _unparsed(inner.diagnostics, inner.errors):
        # IPython compiles cell by cell: a cell that does not parse is reported and left out alone.
        said = nb.isolate_unparsable(_cell_verdict(filename, settings, inner.skipped))
        if said:
            cells += [d for d in said if not isinstance(d, str)]
            inner = check_source(nb.module, filename, settings, as_python=True, **kwargs)
            inner.errors[:0] = [d for d in said if isinstance(d, str)]
    result.diagnostics = cells + [nb.to_cells(d) for d in inner.diagnostics]
    result.diagnostics.sort(key=lambda d: (d.cell or 0, d.location.row, d.location.column, d.code))
    result.undecided = [nb.to_cells(d) for d in inner.undecided]
    result.errors = inner.errors
    result.skipped = inner.skipped
    return result


def _unparsed(diagnostics: list[Diagnostic], errors: list[str]) -> bool:
    """Whether the engine gave up on a text because it does not parse (JF000, or the notice)."""
    return any(d.code == SYNTAX_ERROR and d.message.startswith("Could not parse") for d in diagnostics) or any(
        ": not checked:" in e for e in errors)


def _guarded_cells(nb, filename: str, settings: Settings) -> list[Diagnostic]:
    """The parser guard (parse/parser_guard.py) on the joined cells and, where it refuses them, on each
    cell: the cells it refuses are reported and left out alone (IPython compiles cell by cell)."""
    if not cpython_reads(settings) or parse_guard_text(nb.module, filename) is None:
        return []
    said = nb.isolate_unparsable(lambda text: parse_guard_text(text, filename))
    return [d for d in said if not isinstance(d, str)]


def _cell_verdict(filename: str, settings: Settings, syntax_only: bool) -> Callable[[str], Diagnostic | str | None]:
    """How one cell's text is judged: as the engine judged the whole (CPython's parser for a
    notebook without JAX, libcst's for one the rules analyse), in the project's grammar."""
    def verdict(text: str) -> Diagnostic | str | None:
        if syntax_only:
            broken, notice = check_text(text, filename, settings)
            return broken or notice
        return parse_verdict(text, filename, settings)[1]

    return verdict


def fix_notebook(source: bytes | str, filename: str, settings, **kwargs):
    """`engine.fix_source` for a notebook: the outcome's texts are the notebook's JSON."""
    from jaxfuse_lint.parse.notebook import NotebookError, decode_text, read

    big = too_large(len(source), filename, settings)
    if big is not None:
        outcome = FixOutcome(filename, "", "", undecodable=source if isinstance(source, bytes) else source.encode())
        outcome.remaining = [big]
        return outcome
    try:
        raw = decode_text(source)
        nb = read(raw)
    except (UnicodeDecodeError, NotebookError) as exc:
        text = source if isinstance(source, str) else source.decode("utf-8", "replace")
        outcome = FixOutcome(filename, text, text)
        outcome.remaining = [notebook_syntax_error(filename, _why(exc))]
        return outcome
    encoding = "utf-8-sig" if isinstance(source, bytes) and source.startswith(b"\xef\xbb\xbf") else "utf-8"
    outcome = FixOutcome(filename, raw, raw, encoding=encoding)
    if not nb.python or not nb.module:
        return outcome
    big = too_large(len(nb.module), filename, settings, notebook_code=True)  # the code, not the outputs
    if big is not None:
        outcome.remaining = [big]
        return outcome
    cells = _guarded_cells(nb, filename, settings)
    inner = fix_source(nb.module, filename, settings, as_python=True, **kwargs)
    if inner.source == nb.module and _unparsed(inner.remaining, inner.errors):
        said = nb.isolate_unparsable(_cell_verdict(filename, settings, not mentions_jax(nb.module, settings)))
        if said:
            cells += [d for d in said if not isinstance(d, str)]
            inner = fix_source(nb.module, filename, settings, as_python=True, **kwargs)
            inner.errors[:0] = [d for d in said if isinstance(d, str)]
    outcome.errors = inner.errors
    outcome.dropped = inner.dropped
    if inner.source != nb.module:
        try:
            sources = nb.cell_sources(inner.source)
        except NotebookError as exc:
            outcome.errors.append(f"{filename}: fixes not applied: {exc}")
            kwargs.pop("model_hook", None)
            remaining = check_source_cells(nb, filename, settings, **kwargs)
            outcome.remaining = remaining
            return outcome
        outcome.fixed = [nb.to_cells(d) for d in inner.fixed]
        changed = {n: s for n, s in sources.items() if s != nb.cell_source(n)}
        outcome.source = nb.with_sources(changed) if changed else raw
        fixed_nb = read(outcome.source)
        outcome.remaining = cells + [fixed_nb.to_cells(d) for d in inner.remaining]
    else:
        outcome.remaining = cells + [nb.to_cells(d) for d in inner.remaining]
    return outcome


def check_source_cells(nb: Notebook, filename: str, settings, **kwargs) -> list[Diagnostic]:
    kwargs.pop("unsafe", None)
    return [nb.to_cells(d) for d in check_source(nb.module, filename, settings, as_python=True, **kwargs).diagnostics]


def _why(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    return str(exc)
