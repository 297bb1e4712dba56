"""ShapeView: what the shape analysis (model/shape_analysis.py and the modules it is built
from) reads of the model besides its structure and names."""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from jaxfuse_lint.model.view import ModelView

if TYPE_CHECKING:
    from jaxfuse_lint.model.numpy_values import NumpyArrays
    from jaxfuse_lint.model.scopes import Function, Scope
    from jaxfuse_lint.model.shapes import Shape
    from jaxfuse_lint.model.traced import TracedRegions


class ShapeView(ModelView, Protocol):
    """What the shape analysis reads of the model besides its structure and names."""

    # The return shapes of other modules' functions this one calls: {callee as written: Shape}.
    external_shapes: dict[str, Shape]

    @property
    def traced(self) -> TracedRegions: ...

    def is_traced_scope(self, scope: Scope) -> bool: ...

    @property
    def numpy_arrays(self) -> NumpyArrays: ...

    def runtime_param_shape(self, fn: Function, name: str) -> Shape | None:
        """The shape a recorded run saw for fn's parameter `name` (model/runtime_facts.py)."""
