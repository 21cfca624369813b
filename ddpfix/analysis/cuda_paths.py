"""Code that only runs where there is a GPU: a DDP wrap after `torch.cuda.set_device(...)`,
`init_process_group("nccl")`, `assert torch.cuda.is_available()` or `if not torch.cuda.is_available():
raise ...` on its own path is on CUDA by design, whatever device choice the script makes elsewhere."""

from __future__ import annotations

import libcst as cst

from ..syntax import calls_in, code_of, dotted, is_literal, kwarg, positional, string_value
from .index import TreeIndex
from .names import Names


def cuda_only_path(index: TreeIndex, names: Names, call: cst.Call) -> bool:
    """Does the wrap run only where CUDA is there: after, on its own path, a statement that needs a
    GPU (`torch.cuda.set_device(...)`, `init_process_group("nccl")`, `assert torch.cuda.is_available()`,
    `if not torch.cuda.is_available(): raise ...`), or a call of a function of this file that makes
    one unconditionally (`ddp_setup(rank, world_size)`)? "Its own path": every `if` around that
    statement in the function is also around the wrap, on the same branch."""
    scope = index.scope_of(call)
    guards = _guards(index, call, scope)
    body = scope.body.body if isinstance(scope, cst.FunctionDef) else scope.body
    for stmt in _statements(body):
        if not index.before(stmt, call) or index.contains(stmt, call):
            continue
        if _guards(index, stmt, scope) <= guards and _needs_cuda(index, names, stmt, depth=0):
            return True
    return False


def _statements(body) -> list[cst.BaseStatement]:
    """The statements of a block and of the `if`/`try`/`with` blocks in it (not of functions or loops)."""
    out: list[cst.BaseStatement] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, cst.If):
            branch: cst.CSTNode | None = stmt
            while isinstance(branch, cst.If):
                out += _statements(branch.body.body)
                branch = branch.orelse
            if isinstance(branch, cst.Else):
                out += _statements(branch.body.body)
        elif isinstance(stmt, (cst.Try, cst.With)):
            out += _statements(stmt.body.body)
    return out


def _guards(index: TreeIndex, node: cst.CSTNode, scope: cst.CSTNode) -> set[tuple[str, bool]]:
    """(the test, which branch) of every `if` around `node` inside `scope`."""
    out = set()
    child = node
    for anc in index.ancestors(node):
        if anc is scope:
            break
        if isinstance(anc, cst.If) and child is not anc.test:
            out.add((code_of(anc.test), child is anc.body))
        child = anc
    return out


def _needs_cuda(index: TreeIndex, names: Names, stmt: cst.BaseStatement, depth: int) -> bool:
    """Does `stmt` itself (not an `if` inside it) stop or fail on a machine without a GPU?"""
    if isinstance(stmt, cst.If):
        return _cuda_test(names, stmt.test) is False and any(
            isinstance(s, (cst.Raise,)) or (isinstance(s, cst.Expr) and _exits(names, s.value))
            for s in (
                small for line in stmt.body.body if isinstance(line, cst.SimpleStatementLine) for small in line.body
            )
        )
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Assert) and _cuda_test(names, small.test) is True:
            return True
    for call in calls_in(stmt):
        q = names.call_qual(call) or ""
        if q == "torch.cuda.set_device":
            return True
        if q.endswith("init_process_group"):
            backend = positional(call, 0) or kwarg(call, "backend")
            if backend is not None and string_value(backend.value) == "nccl":
                return True
        callee = index.callee_of(call)
        if callee is not None and depth < 2:
            if any(_needs_cuda(index, names, s, depth + 1) for s in callee.body.body if not isinstance(s, cst.If)):
                return True
    return False


def _cuda_test(names, test: cst.BaseExpression) -> bool | None:
    """True for `torch.cuda.is_available()`, False for its negation (`not ...`, `... is False`,
    `... == False`), None for anything else."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _cuda_test(names, test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.Is, cst.Equal)) and is_literal(target.comparator, False):
            inner = _cuda_test(names, test.left)
            return None if inner is None else not inner
        return None
    if isinstance(test, cst.Call) and names.call_qual(test) == "torch.cuda.is_available":
        return True
    return None


def _exits(names: Names, expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and (names.call_qual(expr) or dotted(expr.func) or "") in (
        "sys.exit",
        "exit",
        "quit",
        "os._exit",
    )


__all__ = ["cuda_only_path"]
