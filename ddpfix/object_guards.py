"""An object whose class writes a file on every rank, kept to rank 0 in the script when its module
cannot be edited: `csv_logger = CSVLogger(args, fields, filename=path)`, where `CSVLogger.__init__`
in util/misc.py runs `self.csv_file = open(filename, 'w')` on a line the fix cannot guard alone.

The statement that builds the object and every statement that uses it become rank-0 only together:

    if RANK == 0:
        csv_logger = CSVLogger(args=args, fieldnames=fields, filename=filename)
    ...
    if RANK == 0:
        csv_logger.writerow(row)

Only where that is all the script does with it: the name is bound only by statements that build
the object with the same call (`logger = Logger(path, resume=True)` in one branch, `logger =
Logger(path)` in the other: each is guarded), and each other mention of it is the receiver of a call
that is a statement of its own (`csv_logger.close()`), after the first binding and in the same scope.
Anything else (the object handed to a function, stored, read in an expression, used by a nested
function) leaves the finding without a fix.
"""

from __future__ import annotations

import libcst as cst

from .edits import guard
from .rule import Context
from .syntax import assign_targets, assigned_value, dotted, walk


def rank0_object_statements(ctx: Context, call: cst.Call) -> list[cst.CSTNode] | None:
    """The statements to guard for the object `call` builds (its binding first), or None when the
    object cannot be kept to rank 0 as a whole."""
    facts = ctx.facts
    index = facts.index
    site = index.site(call)
    targets = assign_targets(site.stmt)
    if assigned_value(site.stmt) is not call or len(targets) != 1 or "." in targets[0]:
        return None
    name, scope = targets[0], index.scope_of(call)
    out: list[cst.CSTNode] = [site.stmt]
    first = site.stmt
    uses: list[cst.CSTNode] = []
    for node in walk(facts.module):
        if not isinstance(node, cst.Name) or node.value != name:
            continue
        parent = index.parent.get(node)
        if (isinstance(parent, cst.Attribute) and parent.attr is node) or (
            isinstance(parent, cst.Arg) and parent.keyword is node
        ):
            continue  # `args.log`, `f(log=...)`: another name spelled the same
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            stmt = index.site(node).stmt
            if stmt is not site.stmt:
                if not _builds_alike(stmt, call) or index.scope_of(stmt) is not scope:
                    return None  # bound again, to something else
                out.append(stmt)
                first = stmt if index.before(stmt, first) else first
            continue
        stmt = _own_statement_call(ctx, node)
        if stmt is None or index.scope_of(stmt) is not scope:
            return None
        uses.append(stmt)
    if any(not index.before(first, stmt) for stmt in uses):
        return None
    return out + uses


def _builds_alike(stmt: cst.CSTNode, call: cst.Call) -> bool:
    """Does `stmt` bind one name to a call of the same callable as `call`?"""
    value = assigned_value(stmt)
    return (
        isinstance(value, cst.Call)
        and len(assign_targets(stmt)) == 1
        and dotted(value.func) is not None
        and dotted(value.func) == dotted(call.func)
    )


def guard_object(ctx: Context, statements: list[cst.CSTNode], call: cst.Call) -> None:
    condition = ctx.rank0(call)
    for stmt in statements:
        guard(ctx, stmt, condition)


def _own_statement_call(ctx: Context, node: cst.Name) -> cst.CSTNode | None:
    """The statement `node.method(...)` when that call is the whole statement, else None."""
    parent = ctx.facts.index.parent
    attribute = parent.get(node)
    call = parent.get(attribute) if isinstance(attribute, cst.Attribute) and attribute.value is node else None
    expr = parent.get(call) if isinstance(call, cst.Call) and call.func is attribute else None
    line = parent.get(expr) if isinstance(expr, cst.Expr) else None
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


__all__ = ["rank0_object_statements", "guard_object"]
