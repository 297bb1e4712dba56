"""The text prescan of one file: its imports, module-level re-exports and the names it calls,
read with regular expressions, without parsing it.

Import statements give the project's module graph (who imports whom, within the checked
paths); module-level `from .impl import f` lines are re-exports, so that `pkg.f` resolves to
the module that defines `f`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from jaxfuse_lint.core.json_types import str_list, str_map, typed
from jaxfuse_lint.project.module_names import absolute, package_of

_IMPORT = re.compile(
    r"^([ \t]*)(?:from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)|import[ \t]+([^\n;#]*))",
    re.M,
)
_COMMENT = re.compile(r"#[^\n]*")
_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")


@dataclass
class Prescan:
    """What the text of one file says about imports, without parsing it."""

    imports: set[str] = field(default_factory=set)  # absolute module names (and `from m import x`: m.x)
    reexports: dict[str, str] = field(default_factory=dict)  # module-level name -> absolute qualified name
    called: set[str] = field(default_factory=set)  # names written right before `(`: what it may call

    def to_json(self) -> dict:
        return {"imports": sorted(self.imports), "reexports": self.reexports, "called": sorted(self.called)}

    @classmethod
    def from_json(cls, data: dict) -> "Prescan":
        """Inverse of to_json; ValueError if any value has the wrong type (a damaged cache entry)."""
        typed(data, dict, "prescan")
        return cls(set(str_list(data["imports"], "imports")), dict(str_map(data["reexports"], "reexports")),
                   set(str_list(data.get("called", []), "called")))


def _split_names(text: str) -> Iterator[tuple[str, str]]:
    text = _COMMENT.sub("", text).strip().strip("()").replace("\\\n", " ")
    for part in text.split(","):
        bits = part.split()
        if not bits:
            continue
        name = bits[0]
        alias = bits[2] if len(bits) == 3 and bits[1] == "as" else name
        yield name, alias


def prescan(text: str, module: str, is_package: bool) -> Prescan:
    out = Prescan()
    package = package_of(module, is_package)
    for m in _IMPORT.finditer(text):
        indent, dots, mod, names, plain = m.groups()
        top = indent == ""
        if plain is not None:
            for name, alias in _split_names(plain):
                if not all(x.isidentifier() for x in name.split(".")):
                    continue
                out.imports.add(name)
                if top and alias != name:
                    out.reexports[alias] = name
            continue
        base = absolute(len(dots), mod, package)
        if base is None:
            continue
        out.imports.add(base)
        for name, alias in _split_names(names):
            if name == "*" or not name.isidentifier() or not alias.isidentifier():
                continue
            out.imports.add(f"{base}.{name}")
            if top:
                out.reexports[alias] = f"{base}.{name}"
    out.imports.discard(module)
    out.called = set(_CALLED.findall(text))
    return out
