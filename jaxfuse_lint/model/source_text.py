"""A node's source text as messages quote it: on one line, shortened."""
from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:
    from jaxfuse_lint.model import SemanticModel


def code_of(model: "SemanticModel", node: cst.CSTNode, limit: int = 60) -> str:
    """Source text of a node on one line, shortened for messages."""
    text = " ".join(model.module.code_for_node(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
