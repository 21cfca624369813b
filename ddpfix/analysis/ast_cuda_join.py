"""Whether a function of one of the script's own modules joins the process group only where there is
a GPU: each `init_process_group(...)` in it runs after a `torch.cuda.set_device(...)` on its own path,
or names the "nccl" backend (`utils.init_distributed_mode(args)` in many research repositories). Read
off Python's `ast`. A DDP wrap needs that group, so a script that joins only through such helpers
wraps on CUDA, whatever device it picks for other things (DDP303)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from .ast_reading import ast_dotted, calls, string_constant

# (what a statement sits under: an `if` test and its branch, or a loop, handler or case that may not
# run; the test's dump or the node's id names it)
Guards = frozenset
_TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))  # TryStar: Python 3.11+


@dataclass(frozen=True)
class _Event:
    cuda: bool  # True: set_device / nccl; False: a join
    guards: Guards
    order: tuple[int, int]  # the statement's place in source order (line, column)
    line: int


def cuda_join_line(func: ast.FunctionDef | ast.AsyncFunctionDef, qual: Callable[[str], str]) -> int | None:
    """The line of the first GPU commitment (`set_device`, the "nccl" backend) that every join in
    `func` follows on its own path (each `if` around the commitment is around the join too, on the
    same branch); None when `func` joins nowhere itself or one of its joins could run without a GPU.
    `qual` spells a dotted name through the module's imports."""
    if not any(joins_itself(call, qual) for call in calls(func)):
        return None  # most functions: no join of their own
    events: list[_Event] = []
    _scan(func.body, Guards(), events, qual)
    joins = [e for e in events if not e.cuda]
    firsts = []
    for join in joins:
        before = [e for e in events if e.cuda and e.order <= join.order and e.guards <= join.guards]
        if not before:
            return None
        firsts.append(before[0].line)
    return min(firsts) if firsts else None


def _scan(body: list[ast.stmt], guards: Guards, events: list[_Event], qual: Callable[[str], str]) -> None:
    for stmt in body:
        if isinstance(stmt, ast.If):
            test = ast.dump(stmt.test)
            _scan(stmt.body, guards | {(test, True)}, events, qual)
            _scan(stmt.orelse, guards | {(test, False)}, events, qual)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            _scan(stmt.body, guards, events, qual)
        elif isinstance(stmt, _TRY):
            _scan(stmt.body, guards, events, qual)
            for part in [*stmt.handlers, stmt.orelse]:
                _scan(part.body if isinstance(part, ast.ExceptHandler) else part, guards | {id(part)}, events, qual)
            _scan(stmt.finalbody, guards, events, qual)
        elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            _scan([*stmt.body, *stmt.orelse], guards | {id(stmt)}, events, qual)
        elif isinstance(stmt, ast.Match):
            for case in stmt.cases:
                _scan(case.body, guards | {id(case)}, events, qual)
        elif not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            order = (stmt.lineno, stmt.col_offset)
            for call in calls(stmt):
                joins = joins_itself(call, qual)
                if qual(ast_dotted(call.func) or "") == "torch.cuda.set_device" or (joins and _nccl(call)):
                    events.append(_Event(True, guards, order, call.lineno))
                if joins:
                    events.append(_Event(False, guards, order, call.lineno))


def joins_itself(call: ast.Call, qual: Callable[[str], str]) -> bool:
    """Is `call` torch's own `init_process_group(...)`?"""
    name = qual(ast_dotted(call.func) or "")
    return name.startswith("torch.distributed") and name.rsplit(".", 1)[-1] == "init_process_group"


def _nccl(call: ast.Call) -> bool:
    backend = next((k.value for k in call.keywords if k.arg == "backend"), call.args[0] if call.args else None)
    return string_constant(backend) == "nccl"


__all__ = ["cuda_join_line", "joins_itself"]
