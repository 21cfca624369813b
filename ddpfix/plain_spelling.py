"""How code reaches the plain module behind a DDP wrapper that may or may not be there: under DDP the
module it holds, in a plain run the model itself (`getattr(model, "module", model)`)."""

from __future__ import annotations

import libcst as cst

UNWRAP = 'getattr({name}, "module", {name})'


def unwrap_code(index, at: cst.CSTNode, name: str) -> str:
    """`getattr(name, "module", name)` for the wrapper `name` read at `at`, its quotes the other kind
    where `at` sits in an f-string of double quotes (before Python 3.12 the expressions of an
    f-string cannot reuse its quote)."""
    node = index.parent.get(at)
    while node is not None and not isinstance(node, cst.FormattedString):
        node = index.parent.get(node)
    spelled = UNWRAP.format(name=name)
    return spelled.replace('"', "'") if node is not None and '"' in node.start else spelled


__all__ = ["UNWRAP", "unwrap_code"]
