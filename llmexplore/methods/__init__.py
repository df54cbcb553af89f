"""Intrinsic-reward methods and their registry."""

from llmexplore.methods.base import IntrinsicReward, MethodContext, MethodOptions, RewardBatch
from llmexplore.methods.registry import (
    ENTRY_POINT_GROUP,
    get_method,
    list_methods,
    method_names,
    parse_options,
    register_method,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "IntrinsicReward",
    "MethodContext",
    "MethodOptions",
    "RewardBatch",
    "get_method",
    "list_methods",
    "method_names",
    "parse_options",
    "register_method",
]
