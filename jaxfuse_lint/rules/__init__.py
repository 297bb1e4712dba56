"""The rule registry. Each module `jfNNN_<name>.py` in this package defines one rule
class and exposes it as `RULE`; the registry finds them, so adding a rule means
adding one module (and its fixtures), nothing else."""
from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from jaxfuse_lint.rules.base import LineOf, Rule, Violation, message

__all__ = ["LineOf", "Rule", "Violation", "all_codes", "all_rules", "get_rule", "message"]


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    rules = []
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("jf"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        rule_cls = getattr(module, "RULE", None)
        if rule_cls is not None:
            rules.append(rule_cls())
    rules.sort(key=lambda r: r.code)
    codes = [r.code for r in rules]
    if len(codes) != len(set(codes)):
        raise RuntimeError(f"duplicate rule codes: {codes}")
    return tuple(rules)


def all_codes() -> set[str]:
    return {r.code for r in all_rules()}


def get_rule(code_or_name: str) -> Rule | None:
    key = code_or_name.strip()
    for r in all_rules():
        if r.code == key.upper() or r.name == key:
            return r
    return None
