"""Answers about the nodes of one tree, remembered by the node's `id`.

Rules ask the analysis about the same nodes many times over (where a call goes, where a node sits,
which collective a call issues). LibCST's node hash is Python code, so the answers are kept by `id`;
each entry keeps its node alive, so no other object can take that id while the memo lives (which is
why an entry found by id is the node's own). The two most asked (`TreeIndex.callee_of`,
`LocalModules.target_of`, hundreds of thousands of questions over the goldens) do the same inline: a
lookup through the memo costs a Python call more, 4% of `diff` over those two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_NO_ARG = object()


class NodeMemo:
    """`memo(node, fn)` is `fn(node)` and `memo(node, fn, arg)` is `fn(node, arg)`, each computed once."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[Any, tuple[object, Any]] = {}

    def __call__(self, node: object, fn: Callable[..., Any], arg: Any = _NO_ARG) -> Any:
        if arg is _NO_ARG:
            known = self._known.get(id(node))
            if known is None:
                known = self._known[id(node)] = (node, fn(node))
        else:
            key = (id(node), arg)
            known = self._known.get(key)
            if known is None:
                known = self._known[key] = (node, fn(node, arg))
        return known[1]


__all__ = ["NodeMemo"]
