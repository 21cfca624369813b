"""Statements on a path that only evaluates: a branch that ends the program (`sys.exit()`, `raise`) or
the function (`return` of nothing that holds the model) and reaches no training on the way, as in
`if args.test_only: net = load(); net = nn.DataParallel(net); evaluate(net); sys.exit(0)` before the
training code. A DataParallel line there wraps no model that trains: under torchrun each process can
evaluate with its plain model, and its conversion is not the trained model's."""

from __future__ import annotations

import libcst as cst

from ..syntax import assign_targets, is_main_guard, mentions
from .index import TreeIndex
from .names import Names
from .ranks import EXIT_CALLS
from .training import Training


def evaluation_branch(index: TreeIndex, names: Names, training: Training, call: cst.Call) -> cst.IndentedBlock | None:
    """The branch of an `if` (not the program's `__main__` block) around the statement of `call`, which
    binds one name (`net = nn.DataParallel(net)`), that always leaves the program or function after
    it, with nothing from that statement to the exit reaching training; None where there is none."""
    stmt = index.site(call).stmt
    targets = assign_targets(stmt)
    if len(targets) != 1:
        return None
    x: cst.CSTNode = stmt
    while True:
        block = index.parent.get(x)
        owner = index.parent.get(block) if isinstance(block, cst.IndentedBlock) else None
        if not isinstance(owner, (cst.If, cst.Else)):
            return None
        test = owner if isinstance(owner, cst.If) else index.parent.get(owner)
        if is_main_guard(test):
            return None
        body = list(block.body)  # type: ignore[union-attr]
        rest = body[next(i for i, s in enumerate(body) if s is x) :]
        if any(training.reaches_training(s) or _trains_elsewhere(index, training, s) for s in rest):
            return None
        if _leaves(names, body[-1], targets[0], index.scope_of(stmt)):
            return block  # type: ignore[return-value]
        x = test  # type: ignore[assignment]


def _trains_elsewhere(index: TreeIndex, training: Training, stmt: cst.CSTNode) -> bool:
    """Does `stmt` call a function or method of the script's own modules that trains (`fit(net, loader)`
    from a local package)? `reaches_training` follows only this file's functions."""
    return any(index.contains(stmt, call) for call in training.module_training_calls)


def _leaves(names: Names, last: cst.CSTNode, handle: str, scope: cst.CSTNode) -> bool:
    """Does `last` end the program, or the function without handing the model out?"""
    if not isinstance(last, cst.SimpleStatementLine):
        return False
    small = last.body[-1]
    if isinstance(small, cst.Raise):
        return True
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return (names.call_qual(small.value) or "") in EXIT_CALLS
    if isinstance(small, cst.Return) and isinstance(scope, cst.FunctionDef) and "." not in handle:
        shared = any(handle in (n.value for n in g.names) for g in _declarations(scope))
        return not shared and (small.value is None or not mentions(small.value, handle))
    return False


def _declarations(func: cst.FunctionDef) -> list:
    """The function's `global` and `nonlocal` statements (a name they share outlives the return)."""
    out = []
    for line in func.body.body:
        if isinstance(line, cst.SimpleStatementLine):
            out += [s for s in line.body if isinstance(s, (cst.Global, cst.Nonlocal))]
    return out


__all__ = ["evaluation_branch"]
