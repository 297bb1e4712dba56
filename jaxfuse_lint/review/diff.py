"""What a pull request changed: `git diff BASE...HEAD` parsed with unidiff.

For each file the head side's added lines and its hunks (the line ranges of the
head version that the diff shows, added and context lines alike): GitHub takes
review comments only on lines inside a hunk, and a multi-line comment (hence a
suggestion) only when its first and last line are in the same hunk. The diff
uses git's default three lines of context, as GitHub's pull-request diff does.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field


class ReviewError(Exception):
    """A usage problem (not a git repository, unknown base...): one line, exit 2."""


@dataclass
class ChangedFile:
    path: str  # repository-relative, POSIX separators (the head side's name)
    added: set[int] = field(default_factory=set)  # 1-based head line numbers
    hunks: list[tuple[int, int]] = field(default_factory=list)  # inclusive head line ranges
    submodule: bool = False  # a gitlink on the head side (a commit of another repository), not a file

    def hunk_containing(self, first: int, last: int) -> tuple[int, int] | None:
        for start, end in self.hunks:
            if start <= first and last <= end:
                return (start, end)
        return None

    def changed_in(self, first: int, last: int) -> list[int]:
        return [r for r in range(first, max(first, last) + 1) if r in self.added]


def git(args: list[str], cwd: str, *, binary: bool = False) -> str | bytes:
    cmd = ["git", "-c", "core.quotepath=false", *args]
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise ReviewError("git is not installed (review reads the pull request's diff with git)") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ReviewError(f"`git {' '.join(args)}` failed: {message[-1] if message else proc.returncode}")
    return proc.stdout if binary else proc.stdout.decode("utf-8", "surrogateescape")


def repository_root(cwd: str) -> str:
    try:
        return str(git(["rev-parse", "--show-toplevel"], cwd)).strip()
    except ReviewError:
        raise ReviewError(f"{cwd}: not inside a git repository (review needs the pull request's history)") from None


def resolve_commit(ref: str, cwd: str) -> str:
    try:
        return str(git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd)).strip()
    except ReviewError:
        raise ReviewError(
            f"unknown revision `{ref}` (in a shallow CI checkout, fetch the base first: "
            f"`git fetch origin {ref}` or checkout with fetch-depth: 0)"
        ) from None


def diff_text(base: str, head: str, cwd: str) -> str:
    """The three-dot diff (from the merge base), ignoring the user's diff configuration."""
    return str(git([
        "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", "--unified=3",
        "--src-prefix=a/", "--dst-prefix=b/", f"{base}...{head}", "--",
    ], cwd))


_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote_git_path(name: str) -> str:
    """git's C-style quoting ("a/\\303\\251.py") back to the path."""
    if not (len(name) >= 2 and name.startswith('"') and name.endswith('"')):
        return name
    out = bytearray()
    body = name[1:-1]
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if re.match(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt)))
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


# The head side's mode is a gitlink's (160000): `new file mode`, `new mode`, or `index a..b 160000`.
_GITLINK = re.compile(r"^(?:new file mode 160000|new mode 160000|index \S+ 160000)$", re.MULTILINE)


def parse_diff(text: str) -> dict[str, ChangedFile]:
    """Repository-relative path -> ChangedFile, for files the head side still has."""
    from unidiff import PatchSet

    files: dict[str, ChangedFile] = {}
    for patched in PatchSet(text):
        if patched.is_removed_file or patched.is_binary_file:
            continue
        target = unquote_git_path(patched.target_file or "")
        if target.startswith("b/"):
            target = target[2:]
        if not target or target == "/dev/null":
            continue
        changed = ChangedFile(target, submodule=_GITLINK.search(str(patched.patch_info)) is not None)
        for hunk in patched:
            if hunk.target_length:
                changed.hunks.append((hunk.target_start, hunk.target_start + hunk.target_length - 1))
            for line in hunk:
                if line.is_added and line.target_line_no is not None:
                    changed.added.add(line.target_line_no)
        if changed.added:
            files[target] = changed
    return files
