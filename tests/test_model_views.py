"""The analyses read the model through protocols (model/view.py's `ModelView`, extended next to
each analysis that reads another one through the model); `SemanticModel` implements them all.
No type checker runs here, so this checks every member each protocol declares by name."""
from __future__ import annotations

import textwrap
from typing import Protocol

import libcst as cst
import pytest

from jaxfuse_lint.model import SemanticModel
from jaxfuse_lint.model.computed_arrays import ComputedArrayView
from jaxfuse_lint.model.device_arrays import DeviceView
from jaxfuse_lint.model.numpy_values import NumpyView
from jaxfuse_lint.model.runtime_facts import RuntimeView
from jaxfuse_lint.model.shape_view import ShapeView
from jaxfuse_lint.model.staging import StagingView
from jaxfuse_lint.model.static_use import StaticUseView
from jaxfuse_lint.model.traced import TracingView
from jaxfuse_lint.model.values import ValueView
from jaxfuse_lint.model.view import ModelView

VIEWS = [ModelView, TracingView, ValueView, NumpyView, DeviceView, ShapeView, RuntimeView, StagingView, StaticUseView,
         ComputedArrayView]


def members(view: type) -> set[str]:
    """The attributes and methods a protocol declares, its bases' included."""
    out: set[str] = set()
    for cls in view.__mro__:
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        out |= set(cls.__dict__.get("__annotations__", {}))
        out |= {name for name, value in cls.__dict__.items()
                if not name.startswith("_") and (callable(value) or isinstance(value, property))}
    return out


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: v.__name__)
def test_the_semantic_model_implements_every_view(view):
    model = SemanticModel(cst.parse_module(textwrap.dedent("""
        import jax

        @jax.jit
        def f(x):
            return x + 1
    """)))
    declared = members(view)
    assert declared >= {"qn", "index"}
    missing = sorted(name for name in declared if not hasattr(type(model), name) and name not in vars(model))
    assert missing == []
