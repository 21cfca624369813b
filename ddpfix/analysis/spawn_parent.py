"""Code the launching process runs alone: in a script that starts its workers with `mp.spawn`, what
runs before the spawn in the same function (or in the `__main__` block) runs once per machine, in the
parent, never in a worker. A check-then-create or a download there does not race with the workers."""

from __future__ import annotations

import libcst as cst

from ..syntax import dotted, positional
from .index import TreeIndex
from .launch import Launch


def runs_before_spawn(index: TreeIndex, launch: Launch, node: cst.CSTNode) -> bool:
    """Does `node` run in the process that calls `mp.spawn`, before that call, and in no worker? At
    module level that is code of the `__main__` block (the rest of the module runs again in every
    worker the spawn start method starts); in a function, one that is not the spawned target."""
    scope = index.scope_of(node)
    for spawn in launch.spawn_calls:
        if index.scope_of(spawn) is not scope or not index.before(node, spawn):
            continue
        if isinstance(scope, cst.Module):
            guard = launch.main_guard
            if guard is not None and index.contains(guard, node) and index.contains(guard, spawn):
                return True
            continue
        target = positional(spawn, 0)
        if isinstance(scope, cst.FunctionDef) and (target is None or dotted(target.value) != scope.name.value):
            return True
    return False


__all__ = ["runs_before_spawn"]
