"""Intrinsic-reward methods and their registry.

The names below load on first use (PEP 562), so importing a sub-package such as
``llmexplore.methods.motif.cli`` (a CLI command) does not import torch.
"""

from __future__ import annotations

from typing import Any

_FROM_BASE = {"CheckContext", "IntrinsicReward", "MethodContext", "MethodOptions", "RewardBatch"}
_FROM_REGISTRY = {"ENTRY_POINT_GROUP", "get_method", "list_methods", "method_names", "parse_options",
                  "register_method"}

__all__ = ["CheckContext", "ENTRY_POINT_GROUP", "IntrinsicReward", "MethodContext", "MethodOptions",
           "RewardBatch", "get_method", "list_methods", "method_names", "parse_options", "register_method"]


def __getattr__(name: str) -> Any:
    if name in _FROM_BASE:
        from llmexplore.methods import base

        return getattr(base, name)
    if name in _FROM_REGISTRY:
        from llmexplore.methods import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'llmexplore.methods' has no attribute {name!r}")
