"""What a review found: the changed files with the findings on their changed lines, and the comments.

`review/core.py` builds these; `review/summary.py` renders them as Markdown.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from jaxfuse_lint.core.diagnostics import Diagnostic
from jaxfuse_lint.review.comments import ReviewComment
from jaxfuse_lint.review.diff import ChangedFile


@dataclass
class FileReview:
    path: str  # repository-relative
    source: str
    changed: ChangedFile
    diagnostics: list[Diagnostic] = field(default_factory=list)  # only those on changed lines


@dataclass
class Review:
    base: str  # the ref as given
    base_sha: str
    head_sha: str
    files: list[FileReview] = field(default_factory=list)
    comments: list[ReviewComment] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was left out and why (a submodule at a .py path)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.diagnostics]
