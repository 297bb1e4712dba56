"""What a rule's variant generator provides, and how variants become source text.

A generator is a module with:

- `CODE`: the rule's code;
- `FEATURES`: an ordered mapping of feature name -> the values the variants take (the rule
  extracts the same features from real code and asks the table about them);
- `HEADER`: the imports every variant needs;
- `function(features, name) -> str`: one jitted function of that name, with its shapes and
  dtypes declared (jaxtyping annotations, read by the linter, never imported), that holds the
  pattern in the form the features say;
- `args(features) -> list[str]`: its argument shapes, as `verify --arg` spells them;
- `variants() -> Iterable[dict]`: the feature combinations to calibrate;
- optionally `advised(features, name) -> str | None`: the form the rule advises, for a rule
  without a codemod or a form its codemod does not fix (None, or no `advised`: the "after"
  version is the rule's own fix of `function`); and `advised_args(features) -> list[str] | None`
  where the advised form takes its arguments in another layout;
- optionally `NEAREST` (numeric features whose values stand for size classes), `PAGE` (the
  groupings of features the rule's page shows) and `TIMED` (feature name -> the values a timed
  target, XLA:CPU, calibrates: running and timing every variant costs more than compiling it).

`module(generator, [features...])` puts many variants in one module (the agreement test checks
them in one pass).
"""
from __future__ import annotations

import importlib
import itertools
from types import ModuleType
from typing import Any, Iterable, Iterator, Mapping

# Rule code -> generator module (in this package).
GENERATORS = {
    "JF101": "jf101",
    "JF201": "jf201",
    "JF202": "jf202",
    "JF207": "jf207",
    "JF102": "jf102",
    "JF103": "jf103",
    "JF104": "jf104",
    "JF203": "jf203",
    "JF204": "jf204",
    "JF205": "jf205",
    "JF206": "jf206",
}


def generator(code: str) -> ModuleType:
    return importlib.import_module(f"jaxfuse_lint.calibrate.{GENERATORS[code]}")


def product(features: Mapping[str, Iterable[Any]]) -> Iterator[dict]:
    names = list(features)
    for values in itertools.product(*(features[n] for n in names)):
        yield dict(zip(names, values))


def module(gen: ModuleType, variants: Iterable[Mapping[str, Any]], stem: str = "f") -> tuple[str, list[str]]:
    """One module holding each variant as `<stem>_<i>`; returns (source, function names)."""
    names, parts = [], [gen.HEADER.rstrip() + "\n"]
    for i, features in enumerate(variants):
        name = f"{stem}_{i}"
        names.append(name)
        parts.append("\n\n" + gen.function(features, name).rstrip() + "\n")
    return "".join(parts), names


def source(gen: ModuleType, features: Mapping[str, Any], name: str = "f") -> str:
    return gen.HEADER.rstrip() + "\n\n\n" + gen.function(features, name).rstrip() + "\n"


def dtype_spec(dtype: str) -> tuple[str, str]:
    """("f32", "Float32") for "float32": the `--arg` prefix and the jaxtyping annotation name."""
    return {"float32": ("f32", "Float32"), "bfloat16": ("bf16", "BFloat16"), "float16": ("f16", "Float16"),
            "float64": ("f64", "Float64"), "int32": ("i32", "Int32")}[dtype]
