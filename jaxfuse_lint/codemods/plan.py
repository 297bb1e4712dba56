"""Fix plans: what a codemod wants changed, applied to the CST by node identity.

A codemod (in `codemods/`) turns a rule's Violation into a FixPlan: a mapping
from original nodes to their replacements (or removal, or statements inserted
before them), plus imports to add. Plans are applied to the tree, never to
text, so formatting and comments elsewhere survive libcst's round trip; the
text edits that reporters show are derived afterwards by diffing the result.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Callable, Iterable, Union

import libcst as cst

from jaxfuse_lint.core.lines import split_lines
from jaxfuse_lint.core.diagnostics import Applicability, Edit, Fix, Location, split_fix_message

Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel]


@dataclass(frozen=True)
class ImportSpec:
    """`import module as asname` (obj None) or `from module import obj as asname`."""

    module: str
    obj: str | None = None
    asname: str | None = None


@dataclass(eq=False)
class FixPlan:
    applicability: Applicability
    message: str
    replacements: dict[cst.CSTNode, Replacement] = field(default_factory=dict)
    imports: tuple[ImportSpec, ...] = ()

    def targets(self) -> Iterable[cst.CSTNode]:
        return self.replacements.keys()


def plan(safe: bool, message: str, replacements: dict, imports: Iterable[ImportSpec] = ()) -> FixPlan:
    return FixPlan(Applicability.SAFE if safe else Applicability.UNSAFE, message, dict(replacements),
                   tuple(imports))


class _Replacer(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, Replacement],
                 paths: set[cst.CSTNode] | None = None) -> None:
        super().__init__()
        self.replacements = replacements
        self.paths = paths  # the targets and their ancestors: nothing else needs visiting

    def on_visit(self, node) -> bool:  # type: ignore[override]
        return self.paths is None or node in self.paths

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        replacement = self.replacements.get(original_node)
        if replacement is None:
            return updated_node
        return replacement


def apply_plans(module: cst.Module, plans: Iterable[FixPlan],
                parent: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None) -> cst.Module:
    """The module with the plans applied. `parent` (the model's parent links): only the paths
    from the module to the replaced nodes are visited, instead of every node (a fix in a
    1,500-line file took ~0.3 s to apply, most of it visiting what it does not change)."""
    replacements: dict[cst.CSTNode, Replacement] = {}
    imports: list[ImportSpec] = []
    for plan in plans:
        replacements.update(plan.replacements)
        imports.extend(plan.imports)
    paths = _paths_to(replacements, parent, module) if parent is not None else None
    new = module.visit(_Replacer(replacements, paths)) if replacements else module
    if imports:
        # Only a fix that adds an import needs libcst's codemod package: importing it (its matchers)
        # takes about 2 s, more than checking a whole file.
        from libcst.codemod import CodemodContext
        from libcst.codemod.visitors import AddImportsVisitor

        context = CodemodContext()
        for imp in imports:
            AddImportsVisitor.add_needed_import(context, imp.module, imp.obj, imp.asname)
        new = AddImportsVisitor(context).transform_module(new)
    return new


def _paths_to(targets: Iterable[cst.CSTNode], parent, module: cst.Module) -> set[cst.CSTNode] | None:
    """The targets and their ancestors; None when a target is not linked up to `module`."""
    paths: set[cst.CSTNode] = set()
    for node in targets:
        n = node
        while n is not None and n not in paths:
            paths.add(n)
            if n is module:
                break
            n = parent(n)
        else:
            if n is None:
                return None
    return paths if module in paths else None


def non_overlapping(plans: list[FixPlan], parents: dict[cst.CSTNode, cst.CSTNode]) -> list[FixPlan]:
    """Plans whose targets are disjoint subtrees; the rest wait for the next pass."""
    taken: set[cst.CSTNode] = set()
    taken_ancestors: set[cst.CSTNode] = set()
    chosen = []
    for plan in plans:
        targets = list(plan.targets())
        ancestors_of_plan: set[cst.CSTNode] = set()
        clash = False
        for t in targets:
            if t in taken or t in taken_ancestors:
                clash = True
                break
            p = parents.get(t)
            while p is not None:
                if p in taken:
                    clash = True
                    break
                ancestors_of_plan.add(p)
                p = parents.get(p)
            if clash:
                break
        if clash:
            continue
        chosen.append(plan)
        taken.update(targets)
        taken_ancestors |= ancestors_of_plan
    return chosen


def is_valid_python(code: str, filename: str = "<fixed>", *, with_libcst: bool = True,
                    with_cpython: bool = True) -> str | None:
    """None when the code parses (libcst, unless not `with_libcst`) and compiles (CPython, unless
    not `with_cpython`: the running Python does not read the project's grammar, parse/grammar.py;
    then libcst decides); else the error, on one line."""
    return parse_valid(code, filename, with_libcst=with_libcst, with_cpython=with_cpython)[1]


def parse_valid(code: str, filename: str = "<fixed>", *, with_libcst: bool = True,
                with_cpython: bool = True) -> tuple[cst.Module | None, str | None]:
    """is_valid_python, with libcst's parse of the code when it made one (`--fix` analyses the
    fixed code next: parsing a large file is a large part of a pass)."""
    module = None
    if with_libcst or not with_cpython:
        from jaxfuse_lint.parse.reparse import parse_in_pieces  # a large file's parse, in pieces (memory)

        try:
            module = parse_in_pieces(code)
        except cst.ParserSyntaxError as exc:
            return None, " ".join(str(exc).split())
    if not with_cpython:
        return module, None
    return module, _cpython_error(code, filename)


def _cpython_error(code: str, filename: str) -> str | None:
    try:
        compile(code, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # null bytes and the like
        return str(exc)
    return None


def edits_between(before: str, after: str) -> tuple[Edit, ...]:
    """Whole-line edits that turn `before` into `after` (what reporters and editors apply)."""
    a = split_lines(before)
    b = split_lines(after)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edits.append(Edit("".join(b[j1:j2]), Location(i1 + 1, 1), Location(i2 + 1, 1)))
    return tuple(edits)


class _Layout:
    """A module's top-level statements with the row each starts on (its leading blank and
    comment lines included) and its code; and, per set of imports, the edits that add them.
    Built once per module, so that each fix costs what its own statement costs."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.index = {id(stmt): i for i, stmt in enumerate(module.body)}
        self.codes = [module.code_for_node(stmt) for stmt in module.body]
        header = "".join(module.code_for_node(line) for line in module.header)
        footer = "".join(module.code_for_node(line) for line in module.footer)
        self.rows = []
        row = 1 + header.count("\n")
        for code in self.codes:
            self.rows.append(row)
            row += len(split_lines(code))
        self.code = module.code
        self.valid = (all(code.endswith(("\n", "\r")) for code in self.codes)
                      and header + "".join(self.codes) + footer == self.code)
        self.import_edits: dict[tuple[ImportSpec, ...], tuple[str | None, tuple[Edit, ...]]] = {}

    def imports(self, specs: tuple[ImportSpec, ...]) -> tuple[str | None, tuple[Edit, ...]]:
        """(the module's code with `specs` added, or None if that failed; the edits that add them)."""
        if specs not in self.import_edits:
            try:
                self.import_edits[specs] = self._add_imports(specs)
            except Exception:
                self.import_edits[specs] = (None, ())
        return self.import_edits[specs]

    def _add_imports(self, specs: tuple[ImportSpec, ...]) -> tuple[str | None, tuple[Edit, ...]]:
        """AddImportsVisitor visits and regenerates the whole tree (seconds on a long file), yet
        it reads and changes only the module's leading block: a docstring, the imports right
        after it (which it extends, or adds to), and the statement after them (given a blank
        line before it). So it runs on a stand-in module of those statements alone: its rows are
        the module's own, and so are its edits."""
        module = self.module
        body = module.body
        lead = 1 if body and _docstring_or_strict(body[0]) else 0
        while lead < len(body) and _is_import_line(body[lead]):
            lead += 1
        whole = lead + 1 >= len(body)
        small = module if whole else module.with_changes(body=body[:lead + 1], footer=())
        before = self.code if whole else "".join(
            module.code_for_node(line) for line in module.header) + "".join(self.codes[:lead + 1])
        after = apply_plans(small, [FixPlan(Applicability.SAFE, "", {}, specs)]).code
        return after, edits_between(before, after)


def _is_import_line(stmt: cst.CSTNode) -> bool:
    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], (cst.Import, cst.ImportFrom)))


def _docstring_or_strict(stmt: cst.CSTNode) -> bool:
    """What AddImportsVisitor never puts an import before (libcst's `_skip_first`)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    first = stmt.body[0]
    if isinstance(first, cst.Expr):
        return isinstance(first.value, cst.SimpleString)
    return (isinstance(first, cst.Assign) and len(first.targets) == 1
            and isinstance(first.targets[0].target, cst.Name) and first.targets[0].target.value == "__strict__")


_LAYOUTS: list[_Layout] = []  # the last few modules' layouts (a module is analysed, then dropped)


def _layout(module: cst.Module) -> _Layout:
    for layout in _LAYOUTS:
        if layout.module is module:
            return layout
    layout = _Layout(module)
    _LAYOUTS.insert(0, layout)
    del _LAYOUTS[4:]
    return layout


def _local_fix(module: cst.Module, plan: FixPlan, parent, with_cpython: bool = True) -> Fix | None | bool:
    """plan_to_fix from the top-level statements the plan changes: each is rewritten and
    diffed alone (a whole-file diff per fix made fixes quadratic in the file's size). False
    when this cannot tell (the caller then takes the whole-file way)."""
    layout = _layout(module)
    if not layout.valid or not plan.replacements:
        return False
    tops: dict[int, cst.CSTNode] = {}
    for target in plan.replacements:
        n = target
        while n is not None and id(n) not in layout.index:
            n = parent(n)
        if n is None or parent(n) is not module:
            return False
        tops[layout.index[id(n)]] = n
    paths = _paths_to(plan.replacements, parent, module)
    if paths is None:
        return False
    edits: list[Edit] = []
    for i, stmt in sorted(tops.items()):
        try:
            new = stmt.visit(_Replacer(plan.replacements, paths))
            if isinstance(new, cst.RemovalSentinel):
                code = ""
            elif isinstance(new, cst.FlattenSentinel):
                code = "".join(module.code_for_node(n) for n in new.nodes)
            else:
                code = module.code_for_node(new)
        except Exception:  # a codemod bug must not take the report down
            return None
        if code and is_valid_python(code, with_libcst=False, with_cpython=with_cpython) is not None:
            return None
        offset = layout.rows[i] - 1
        for e in edits_between(layout.codes[i], code):
            edits.append(Edit(e.content, Location(e.location.row + offset, 1), Location(e.end_location.row + offset, 1)))
    if plan.imports:
        after, import_edits = layout.imports(tuple(plan.imports))
        if after is None:
            return None
        for ie in import_edits:
            for e in edits:  # an import added inside a changed statement: the whole-file way decides
                if ie.location.row < max(e.end_location.row, e.location.row + 1) and \
                        e.location.row < max(ie.end_location.row, ie.location.row + 1):
                    return False
        edits.extend(import_edits)
    if not edits:
        return None
    edits.sort(key=lambda e: (e.location.row, e.end_location.row))
    title, detail = split_fix_message(plan.message)
    return Fix(plan.applicability, title, tuple(edits), detail)


def plan_to_fix(module: cst.Module, plan: FixPlan, source: str | None = None,
                parent: Callable[[cst.CSTNode], cst.CSTNode | None] | None = None, *,
                with_cpython: bool = True) -> Fix | None:
    """The edits of one fix. `source`: the module's code, when the caller has it; `parent`:
    see apply_plans; `with_cpython`: see is_valid_python."""
    if parent is not None and (source is None or source is _layout(module).code or source == _layout(module).code):
        local = _local_fix(module, plan, parent, with_cpython)
        if local is not False:
            return local
    try:
        after = apply_plans(module, [plan], parent).code
    except Exception:  # a codemod bug must not take the report down
        return None
    before = module.code if source is None else source
    # A fix offered with a diagnostic is checked by CPython's compiler alone: parsing the whole
    # result with libcst as well cost ~0.25 s per fix in a 1,500-line file, on every edit in an
    # editor. `--fix` checks what it writes with both (engine.fix_source).
    if after == before or is_valid_python(after, with_libcst=False, with_cpython=with_cpython) is not None:
        return None
    title, detail = split_fix_message(plan.message)
    return Fix(plan.applicability, title, edits_between(before, after), detail)
