"""The codes of the registered rules, read from the rule modules' names, without importing them.

Validating a selection (`select = ["JF2"]`, `--ignore JF401`) happens on every run, warm ones
included; importing the rules for it would load libcst and the model. Each rule lives in
`rules/jfNNN_<name>.py` (see rules/__init__.py), so the file names give the codes;
tests/test_warm_imports.py checks that they are exactly the registry's codes.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

_RULE_MODULE = re.compile(r"(jf\d+)_\w+\.py", re.I)


@lru_cache(maxsize=1)
def rule_codes() -> frozenset[str]:
    directory = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules")
    codes = set()
    for name in os.listdir(directory):
        m = _RULE_MODULE.fullmatch(name)
        if m:
            codes.add(m.group(1).upper())
    return frozenset(codes)
