"""Answers about the nodes of one tree, remembered by the node's `id`.

Rules ask the analysis about the same nodes many times over (where a call goes, where a node sits,
which collective a call issues). LibCST's node hash is Python code, so the answers are kept by `id`;
each entry keeps its node alive, so no other object can take that id while the memo lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class NodeMemo:
    """`memo(node, fn, *args)` is `fn(node, *args)`, computed once per node and arguments."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[Any, tuple[object, Any]] = {}

    def __call__(self, node: object, fn: Callable[..., Any], *args: Any) -> Any:
        key = (id(node), *args) if args else id(node)
        known = self._known.get(key)
        if known is not None and known[0] is node:
            return known[1]
        value = fn(node, *args)
        self._known[key] = (node, value)
        return value


__all__ = ["NodeMemo"]
