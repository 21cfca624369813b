"""Where a script uses its model as a container (`model[0]`, `len(model)`, `for layer in model:`,
`list(model)`): an `nn.Sequential`, `nn.ModuleList` or `nn.ModuleDict` answers those, the DDP wrapper
does not (`TypeError: 'DistributedDataParallel' object is not subscriptable`, `... has no len()`,
`... is not iterable`). DDP308 reads them through the plain module."""

from __future__ import annotations

import libcst as cst

from .syntax import dotted, walk

# Builtins that take the container itself: its length, an iterator over it, or its members.
CONTAINER_CALLS = frozenset({"len", "iter", "reversed", "list", "tuple", "enumerate", "zip", "next", "sorted"})


def container_uses(
    facts, handle: str, wrap_stmt: cst.CSTNode
) -> list[tuple[cst.BaseExpression, str, cst.CSTNode | None]]:
    """(the handle's expression, how it is used, where that use may run the members it reaches) for
    each use of `handle` as a container once it is the wrapper, in source order. A member that is
    called (`model[0](x)`: the call) or the members walked (`for layer in model: x = layer(x)`: the
    loop) may run a forward; `len(model)` runs none (None)."""
    out: list[tuple[cst.BaseExpression, str, cst.CSTNode | None]] = []
    parent = facts.index.parent
    for node in walk(facts.module):
        kind = type(node)
        if kind is cst.Subscript and dotted(node.value) == handle:  # also `model[0] = ...`: it fails the same
            outer = parent.get(node)
            runs = outer if isinstance(outer, cst.Call) and outer.func is node else None
            out.append((node.value, f"{handle}[...]", runs))
        elif kind is cst.Call and dotted(node.func) in CONTAINER_CALLS:
            for arg in node.args:
                if arg.keyword is None and not arg.star and dotted(arg.value) == handle:
                    out.append(
                        (arg.value, f"{dotted(node.func)}({handle})", None if dotted(node.func) == "len" else node)
                    )
        elif kind in (cst.For, cst.CompFor) and dotted(node.iter) == handle:
            out.append((node.iter, f"for ... in {handle}", node))
    return [u for u in out if facts.wraps.after_wrap(u[0], handle, wrap_stmt)]


__all__ = ["CONTAINER_CALLS", "container_uses"]
