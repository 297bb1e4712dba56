"""What the pipeline produces: diagnostics, fixes and their edits.

Everything a reporter, the fixer, the flake8 plugin or the language server needs
is here, already located (1-based rows and columns, as users see them) and free
of libcst objects, so the output side never reaches back into the analysis.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from jaxfuse_lint.core.json_types import optional, positive, typed

DOCS_URL = "https://github.com/jaxfuse-lint/jaxfuse-lint/blob/main/docs/rules/{name}.md"


class Applicability(str, enum.Enum):
    """ruff's meaning: safe fixes never change results; unsafe ones may."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True, order=True)
class Location:
    """A position in a file: row and column both 1-based (column counts characters)."""

    row: int
    column: int

    def to_json(self) -> dict[str, int]:
        return {"row": self.row, "column": self.column}


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (end exclusive) with `content`."""

    content: str
    location: Location
    end_location: Location
    # In a notebook: the cell (1-based among all cells) the locations are rows of.
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "content": self.content,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
        }
        if self.cell is not None:
            data["cell"] = self.cell
        return data


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    # One short line saying what the fix does (an editor's quick-fix title, ruff's fix message).
    message: str
    edits: tuple[Edit, ...]
    # Why it is safe or unsafe, and what would make an unsafe one safe (shown beside the
    # title: `--output-format full`, the hover, review comments; empty when there is nothing to add).
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }
        if self.detail:
            data["detail"] = self.detail
        return data

    @property
    def described(self) -> str:
        """The title and, after a semicolon, the detail: one sentence for plain-text reports."""
        return f"{self.message}; {self.detail}" if self.detail else self.message


def split_fix_message(message: str) -> tuple[str, str]:
    """A codemod's `title; why` message as (title, detail).

    The title ends at the first `; ` outside backquoted code; everything after it is the detail."""
    quoted = False
    for i, ch in enumerate(message):
        if ch == "`":
            quoted = not quoted
        elif ch == ";" and not quoted and message.startswith("; ", i):
            return message[:i].rstrip(), message[i + 2:].strip()
    return message, ""


@dataclass(frozen=True)
class PremiseRecord:
    """One premise of a finding as the outputs carry it (model/premises.py is the ledger): the
    premise (`traced(`x > 0`)`), its status (proven, recorded, assumed) and its source (the
    inference and the line that show it, the run that recorded it, or what is assumed)."""

    premise: str
    status: str
    source: str

    def to_json(self) -> dict[str, str]:
        return {"premise": self.premise, "status": self.status, "source": self.source}

    @classmethod
    def from_json(cls, data: Any) -> "PremiseRecord":
        typed(data, dict, "premise")
        return cls(typed(data["premise"], str, "premise"), typed(data["status"], str, "premise status"),
                   typed(data["source"], str, "premise source"))


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    noqa_row: int | None = None
    # Free-form facts for richer reporters (verify evidence, trace reasons...).
    extra: dict[str, Any] = field(default_factory=dict)
    # In a notebook (ruff's convention): the cell, 1-based among all cells; rows count
    # from the cell's first line.
    cell: int | None = None
    # What the finding's claim rests on, premise by premise (model/premises.py).
    premises: tuple[PremiseRecord, ...] = ()

    @property
    def url(self) -> str | None:
        if not self.name:
            return None
        return DOCS_URL.format(name=self.name, code=self.code)

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.location.row, self.location.column, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        """ruff's JSON schema, field for field, and the finding's premises."""
        return {
            "cell": self.cell,
            "code": self.code,
            "end_location": self.end_location.to_json(),
            "filename": self.filename,
            "fix": self.fix.to_json() if self.fix else None,
            "location": self.location.to_json(),
            "message": self.message,
            "noqa_row": self.noqa_row,
            "premises": [p.to_json() for p in self.premises],
            "url": self.url,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Diagnostic":
        """Inverse of to_json (the cache stores diagnostics as JSON). Every value is checked for
        its type: anything else is a ValueError (a damaged cache entry is a miss)."""
        typed(data, dict, "diagnostic")
        fix = None
        if data.get("fix"):
            f = typed(data["fix"], dict, "fix")
            fix = Fix(
                Applicability(typed(f["applicability"], str, "applicability")),
                typed(f["message"], str, "fix message"),
                tuple(
                    Edit(typed(e["content"], str, "edit"), _location(e["location"]), _location(e["end_location"]),
                         _cell(e.get("cell")))
                    for e in typed(f["edits"], list, "edits")
                ),
                typed(f.get("detail", ""), str, "fix detail"),
            )
        url = optional(data.get("url"), str, "url") or ""
        name = url.rsplit("/", 1)[-1].removesuffix(".md") if url else ""
        return cls(
            code=typed(data["code"], str, "code"),
            name=name,
            message=typed(data["message"], str, "message"),
            filename=typed(data["filename"], str, "filename"),
            location=_location(data["location"]),
            end_location=_location(data["end_location"]),
            fix=fix,
            noqa_row=None if data.get("noqa_row") is None else positive(data["noqa_row"], "noqa_row"),
            extra=dict(typed(data.get("extra") or {}, dict, "extra")),
            cell=_cell(data.get("cell")),
            premises=tuple(PremiseRecord.from_json(p) for p in typed(data.get("premises") or [], list, "premises")),
        )


def _location(data: Any) -> Location:
    typed(data, dict, "location")
    return Location(positive(data["row"], "row"), positive(data["column"], "column"))


def _cell(value: Any) -> int | None:
    return None if value is None else positive(value, "cell")
