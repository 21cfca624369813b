"""The process that starts the ranks: a script that launches itself with `mp.spawn` runs its
`__main__` block once, in a parent process that is none of the ranks (the spawned processes import
the script under another name, so the block does not run there). What runs only there runs once:
it prints, writes or downloads once, not once per rank."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property

import libcst as cst

from ..syntax import calls_in
from .index import TreeIndex
from .launch import Launch
from .training import HELPER_DEPTH


class Launcher:
    """Which code runs in the `mp.spawn` parent only."""

    def __init__(self, index: TreeIndex, launch: Launch, mentions_rank: Callable[[cst.CSTNode], bool]) -> None:
        self.index = index
        self.launch = launch
        self.mentions_rank = mentions_rank

    def runs(self, node: cst.CSTNode, _depth: int = 0) -> bool:
        """Does `node` run once, in the process that starts the ranks with `mp.spawn`, and in none of
        them? The `__main__` block and the functions only it calls, none of which the spawned function
        reaches. Not where the `__main__` block also runs the spawned function itself on a rank it is
        given (`train(int(os.environ["LOCAL_RANK"]), args)` under torchrun)."""
        if not self.launch.spawn_calls or self.spawned is None:
            return False
        scope = self.index.scope_of(node)
        if scope is self.index.module:
            guard = self.launch.main_guard
            return guard is not None and self.index.contains(guard, node)
        if scope in self.spawned or _depth >= HELPER_DEPTH:
            return False
        callers = self.index.callers_of(scope)  # type: ignore[arg-type]
        return bool(callers) and all(self.runs(c, _depth + 1) for c in callers)

    @cached_property
    def spawned(self) -> set[cst.FunctionDef] | None:
        """The functions `mp.spawn` starts and every function of this file they call; None when the
        launching code also runs one of them on a rank of its own."""
        targets: set[cst.FunctionDef] = set()
        for spawn in self.launch.spawn_calls:
            fn = next((a for a in spawn.args if a.keyword is None), None) or next(
                (a for a in spawn.args if a.keyword is not None and a.keyword.value == "fn"), None
            )
            func = self.index.func_by_name.get(fn.value.value) if fn and isinstance(fn.value, cst.Name) else None
            if func is not None:
                targets.add(func)
        for func in targets:
            for call in self.index.callers_of(func):
                if any(self.mentions_rank(a.value) for a in call.args):
                    return None  # `train(int(os.environ["LOCAL_RANK"]), args)`: run once per rank too
        reached, todo = set(targets), list(targets)
        while todo:
            for call in calls_in(todo.pop().body):
                callee = self.index.callee_of(call)
                if callee is not None and callee not in reached:
                    reached.add(callee)
                    todo.append(callee)
        return reached


__all__ = ["Launcher"]
