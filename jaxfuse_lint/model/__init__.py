"""The JAX semantic model: names, traced regions, static/traced values, axis sizes, loops."""
from jaxfuse_lint.model.scopes import Binding, ClassInfo, Function, Scope, walk
from jaxfuse_lint.model.semantic import LoopSite, SemanticModel
from jaxfuse_lint.model.shapes import Shape
from jaxfuse_lint.model.traced import TraceReason, keyword, positional
from jaxfuse_lint.model.values import Kind

__all__ = [
    "Binding", "ClassInfo", "Function", "Kind", "LoopSite", "Scope", "SemanticModel", "Shape",
    "TraceReason", "keyword", "positional", "walk",
]
