"""`jaxfuse-lint review`: lint what a pull request changed and build the review payload.

The head versions of the changed Python files are read from git (`git show
HEAD:path`), so the review describes the commit it names whatever the working
tree holds; only findings that touch an added line are kept. Nothing here talks
to the network: the payload is JSON for `POST /repos/{owner}/{repo}/pulls/{n}/reviews`
that a workflow posts (examples/github-review.yml).
"""
from __future__ import annotations

import ast
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable

from jaxfuse_lint.core import gitignore
from jaxfuse_lint.core.config import Settings
from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.parse.notebook import is_notebook
from jaxfuse_lint.core.edits import apply_edits
from jaxfuse_lint.report.paths import printable
from jaxfuse_lint.review.comments import build_comment
from jaxfuse_lint.review.results import FileReview, Review
from jaxfuse_lint.review.summary import render_summary
from jaxfuse_lint.review.diff import (
    ReviewError,
    diff_text,
    git,
    parse_diff,
    repository_root,
    resolve_commit,
)

from jaxfuse_lint.discover.files import is_source  # `include`: notebooks too (review/notebooks.py)

if TYPE_CHECKING:
    import pathspec


def review_payload(review: Review) -> dict[str, Any]:
    """The review as the JSON body of `POST /repos/{owner}/{repo}/pulls/{n}/reviews`."""
    return {
        "commit_id": review.head_sha,
        "event": "COMMENT",
        "body": render_summary(review),
        "comments": [c.to_json() for c in review.comments],
    }


def _excluded(rel: str, exclude: pathspec.PathSpec) -> bool:
    parts = PurePosixPath(rel).parts
    for i in range(1, len(parts)):
        directory = "/".join(parts[:i])
        if exclude.match_file(directory + "/") or exclude.match_file(parts[i - 1] + "/"):
            return True
    return exclude.match_file(rel) or exclude.match_file(parts[-1])


def _selected(rel: str, root: str, paths: tuple[str, ...], settings: Settings) -> bool:
    """Is the changed file `rel` under one of PATHS and not excluded by the configuration?"""
    absolute = os.path.normpath(os.path.join(root, rel))
    if not is_source(Path(absolute), settings, Path(settings.project_root) if settings.project_root else None):
        return False
    if paths:
        named = False
        for p in paths:
            target = os.path.abspath(p)
            if absolute == target:
                return True  # named explicitly: always checked, as `check` does
            if absolute.startswith(target.rstrip(os.sep) + os.sep):
                named = True
        if not named:
            return False
    project = settings.project_root or root
    try:
        relative = Path(absolute).resolve().relative_to(Path(project).resolve()).as_posix()
    except ValueError:
        relative = rel
    exclude = gitignore.spec(list(settings.exclude) + list(settings.extend_exclude))
    return not _excluded(relative, exclude)


def _utf8(path: str) -> bool:
    """Whether the path is UTF-8 (a review comment names its file in JSON, which cannot carry
    other bytes: GitHub could not place it)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_head_file(head: str, rel: str, root: str) -> bytes:
    return git(["show", f"{head}:{rel}"], root, binary=True)  # type: ignore[return-value]


def run_review(
    base: str,
    paths: tuple[str, ...],
    settings: Settings,
    *,
    head: str = "HEAD",
    cwd: str | None = None,
    verify: bool = False,
    echo: Callable[[str], None] = lambda message: None,
    profile=None,
) -> Review:
    """`profile`: a runtime profile (jaxfuse_lint.runtime) that --verify uses where no spec is configured."""
    from jaxfuse_lint.engine.pipeline import check_source, decode

    cwd = cwd or os.getcwd()
    root = repository_root(cwd)
    base_sha = resolve_commit(base, root)
    head_sha = resolve_commit(head, root)
    review = Review(base=base, base_sha=base_sha, head_sha=head_sha)
    changed_files = parse_diff(diff_text(base_sha, head_sha, root))
    abs_paths = tuple(os.path.abspath(os.path.join(cwd, p)) for p in paths)
    for rel in sorted(changed_files):
        if not _selected(rel, root, abs_paths, settings):
            continue
        changed = changed_files[rel]
        if changed.submodule:
            review.notes.append(f"{printable(rel)}: a submodule, not a file: skipped")
            continue
        data = read_head_file(head_sha, rel, root)
        filename = os.path.join(root, rel)
        result = check_source(data, filename, settings)
        review.errors.extend(result.errors)
        try:
            source = result.source if result.source is not None else decode(data)[0]
        except Exception:  # undecodable: JF000 says so; there is no text to quote
            source = data.decode("utf-8", "replace")
        if rel.lower().endswith(".ipynb"):  # rows are in cells; the diff is of the JSON file
            from jaxfuse_lint.report.notebooks import source_file_rows
            from jaxfuse_lint.review.notebooks import changed_lines

            rows = source_file_rows(source)
            kept = [d for d in result.diagnostics if d.cell is not None and changed_lines(source, d, changed, rows)]
        else:
            kept = [d for d in result.diagnostics if changed.changed_in(d.location.row, d.end_location.row)]
        for d in kept:
            d.filename = rel  # as GitHub names it
        review.files.append(FileReview(rel, source, changed, kept))
    evidence: dict[int, str] = {}
    if verify:
        evidence = _verify_fixes(review, settings, root, echo, profile)
    for f in review.files:
        if f.diagnostics and not _utf8(f.path):
            n = len(f.diagnostics)
            review.notes.append(f"{printable(f.path)}: {n} finding{'s' if n != 1 else ''} not posted as "
                                f"{'comments' if n != 1 else 'a comment'}: the file name is not UTF-8")
            continue
        if f.path.lower().endswith(".ipynb") and f.diagnostics:
            from jaxfuse_lint.report.notebooks import source_file_rows
            from jaxfuse_lint.review.notebooks import build_notebook_comment

            rows = source_file_rows(f.source)
            for d in f.diagnostics:
                review.comments.append(build_notebook_comment(d, f.path, f.source, f.changed, rows,
                                                              evidence.get(id(d))))
            continue
        for d in f.diagnostics:
            review.comments.append(build_comment(d, f.path, f.source, f.changed, evidence.get(id(d))))
    return review


def _notebook_module_view(f, filename: str, settings: Settings) -> tuple[str, dict[int, Diagnostic | None]] | None:
    """A notebook's code cells as the module `verify` runs, and each of the file's diagnostics
    located in that module (its fix's edits too); None when the notebook has no Python."""
    from jaxfuse_lint.engine.pipeline import check_source
    from jaxfuse_lint.parse.notebook import NotebookError, read
    from jaxfuse_lint.verify.loader import register_notebook

    try:
        nb = read(f.source)
    except NotebookError:
        return None
    if not nb.python or not nb.module:
        return None
    register_notebook(filename, nb)  # errors and source lines then name cells
    by_place: dict[tuple, Diagnostic] = {}
    for found in check_source(nb.module, filename, settings, as_python=True).diagnostics:
        shown = nb.to_cells(found)
        by_place.setdefault((shown.code, shown.cell, shown.location.row, shown.location.column), found)
    return nb.module, {id(d): by_place.get((d.code, d.cell, d.location.row, d.location.column))
                       for d in f.diagnostics}


def enclosing_function(source: str, row: int) -> str | None:
    """The module-level function whose definition spans `row` (what a verify spec names)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [dec.lineno for dec in node.decorator_list])
            if first <= row <= (node.end_lineno or node.lineno):
                return node.name
    return None


def _verify_fixes(review: Review, settings: Settings, root: str, echo: Callable[[str], None],
                  profile=None) -> dict[int, str]:
    """Measure each fix whose function has a [tool.jaxfuse-lint.verify] spec, or else that a runtime
    profile recorded signatures for (imports and runs the code)."""
    try:
        from jaxfuse_lint.verify.api import resolve_arg_specs, verify_pair
        from jaxfuse_lint.verify.errors import VerifyError
    except ImportError as exc:
        raise ReviewError(f"--verify needs jaxfuse_lint.verify ({exc})") from None
    evidence: dict[int, str] = {}
    cache: dict[tuple[str, str, str], str] = {}
    unmeasured: dict[str, None] = {}  # "path::func" of fixes no spec or recorded run says how to call
    for f in review.files:
        filename = os.path.join(root, f.path)
        source, in_source = f.source, {id(d): d for d in f.diagnostics}
        if is_notebook(f.path):
            view = _notebook_module_view(f, filename, settings)
            if view is None:
                continue
            source, in_source = view
        for d in f.diagnostics:
            located = in_source.get(id(d))
            if located is None or located.fix is None or not located.fix.edits:
                continue
            func = enclosing_function(source, located.location.row)
            if func is None:
                continue
            try:
                resolved = resolve_arg_specs(source, func, filename=filename, settings=settings)
            except VerifyError:
                resolved = None
            if resolved is None or resolved.origin != "[tool.jaxfuse-lint.verify]":
                if profile is not None:  # the signatures a recorded run compiled it for
                    from jaxfuse_lint.runtime.verify_profile import evidence_for_fix

                    after = apply_edits(source, located.fix.edits)
                    key = (f.path, func, after)
                    if key not in cache:
                        echo(f"verifying {f.path}::{func} ({d.code} fix) for its recorded signatures...")
                        cache[key] = evidence_for_fix(profile, source, after, filename, func,
                                                      target=settings.target, gpu=settings.gpu)
                    if cache[key]:
                        evidence[id(d)] = cache[key]
                if id(d) not in evidence:
                    unmeasured.setdefault(f"{f.path}::{func}")
                continue  # no verify spec for this function: nothing else is run
            after = apply_edits(source, located.fix.edits)
            key = (f.path, func, after)
            if key not in cache:
                echo(f"verifying {f.path}::{func} ({d.code} fix)...")
                result = verify_pair(source, after, func, resolved.args, resolved.static, filename=filename,
                                     target=settings.target, gpu=settings.gpu)
                if result.verdict == "error":
                    cache[key] = f"verification failed: {result.error}"
                elif not result.measured_on_target and result.verdict != "proved":
                    cache[key] = f"{result.summary()} (unproved on this backend: {result.environment['stand_in']})"
                else:
                    cache[key] = f"{result.summary()} (verdict: {result.verdict})"
            evidence[id(d)] = cache[key]
    if unmeasured:
        echo(_unmeasured_hint(list(unmeasured), profile is not None))
    return evidence


def _unmeasured_hint(targets: list[str], had_profile: bool) -> str:
    """Why --verify quoted no evidence for some fixes, and what would let it measure them."""
    path, _, func = targets[0].rpartition("::")
    module = os.path.splitext(path)[0].replace("/", ".").replace(os.sep, ".")
    n = len(targets)
    shown = ", ".join(f"`{t}`" for t in targets[:3]) + (f" and {n - 3} more" if n > 3 else "")
    why = ("no [tool.jaxfuse-lint.verify] spec names " + ("its" if n == 1 else "their") + " argument shapes"
           + ("" if had_profile else " and no runtime profile recorded a call"))
    return (f"--verify measured no fix in {shown}: {why}. Add one to pyproject.toml, e.g. "
            f"`[tool.jaxfuse-lint.verify]` `\"{module}:{func}\" = [\"f32[1024,3]\"]` (one shape per array "
            f"argument), or record a run: `jaxfuse-lint record -- python -m pytest`")
