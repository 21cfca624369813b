"""Applies a plan in one pass: `Applier` visits only the subtrees that hold an edit, replaces
expressions, inserts and moves statements in their `Order`, splits `if`s, and gives adjacent statements
that need the same guard one `if`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from .order import Order

TOP_DEFS = (cst.FunctionDef, cst.ClassDef)

if TYPE_CHECKING:
    from .plan import Plan


@dataclass
class Insert:
    order: int
    seq: int
    stmts: list[cst.BaseStatement] = field(default_factory=list)
    moved: cst.BaseStatement | None = None
    blank_after: bool = False
    rule: str | None = None  # the code of the rule that asked for it (None: shared setup, imports)


def blank() -> cst.EmptyLine:
    return cst.EmptyLine(indent=False)


class Applier(cst.CSTTransformer):
    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        # Only subtrees that hold an edit are visited; the rest is kept as it is.
        self.touched: set[cst.CSTNode] = set()
        leaving = [s for stmts in plan.splits.values() for s in stmts]
        for key in (
            *plan.replacements,
            *plan.before,
            *plan.after,
            *plan.prepends,
            *plan.guards,
            *plan.moved,
            *plan.splits,
            *leaving,
        ):
            self.touched.add(key)
            self.touched.update(plan.facts.index.ancestors(key))
        self.leaving = set(leaving)
        self.final: dict[cst.CSTNode, cst.CSTNode] = {}  # a leaving statement -> its rewritten form
        self.replaced: list[cst.CSTNode] = []  # what the replacements made (unread_raws.py reads them)

    def on_visit(self, node) -> bool:
        return node in self.touched

    def on_leave(self, original_node, updated_node):
        fns = self.plan.replacements.get(original_node)
        if fns:
            for fn in fns:
                updated_node = fn(updated_node)
            self.replaced.append(updated_node)
        if isinstance(original_node, cst.IndentedBlock):
            return updated_node.with_changes(body=self._rebuild(original_node, original_node.body, updated_node.body))
        if isinstance(original_node, cst.Module):
            return updated_node.with_changes(body=self._rebuild(original_node, original_node.body, updated_node.body))
        return updated_node

    def _rebuild(self, block, originals, updated) -> list[cst.BaseStatement]:
        plan = self.plan
        mapping = {id(o): u for o, u in zip(originals, updated)}
        items: list[tuple[cst.BaseStatement, str | None]] = []

        def emit(inserts: list[Insert]) -> list[cst.BaseStatement]:
            out: list[cst.BaseStatement] = []
            for ins in sorted(inserts, key=lambda i: (i.order, i.seq)):
                if ins.moved is not None:
                    moved = mapping.get(id(ins.moved))
                    if moved is not None and ins.order == Order.IMPORTS:  # into the imports: no blank line above
                        out.append(moved.with_changes(leading_lines=[l for l in moved.leading_lines if l.comment]))
                    elif moved is not None:
                        out.append(moved)
                else:
                    out.extend(ins.stmts)
            return out

        for stmt in emit(plan.prepends.get(block, [])):
            items.append((stmt, None))
        left: list[cst.EmptyLine] = []  # the blank lines above a statement moved away
        for orig, upd in zip(originals, updated):
            if orig in plan.moved:
                left = left or [l for l in upd.leading_lines if not l.comment]
                continue
            if left and not any(not l.comment for l in upd.leading_lines):
                upd = upd.with_changes(leading_lines=[*left, *upd.leading_lines])
            left = []
            new_before: list[cst.BaseStatement] = []
            owed = None  # the order of an insert that wants a blank line after it, until one is placed
            for ins in sorted(plan.before.get(orig, []), key=lambda i: (i.order, i.seq)):
                stmts = emit([ins])
                if stmts and new_before and type(block) is cst.Module and type(new_before[-1]) in TOP_DEFS:
                    stmts[0] = stmts[0].with_changes(leading_lines=[blank(), blank(), *stmts[0].leading_lines])
                    owed = None  # after a function or class at the top: two blank lines (PEP 8)
                elif stmts and owed is not None and owed != ins.order:  # `setup`, blank line, then the next kind
                    stmts[0] = stmts[0].with_changes(leading_lines=[blank(), *stmts[0].leading_lines])
                    owed = None
                new_before += stmts
                owed = ins.order if ins.blank_after else owed
            if new_before:
                new_before[0] = new_before[0].with_changes(
                    leading_lines=[*upd.leading_lines, *new_before[0].leading_lines]
                )
                top_def = type(block) is cst.Module and type(new_before[-1]) in TOP_DEFS
                lines = [blank()] * (2 if top_def else 1) if owed is not None else []  # (its own moved above)
                upd = upd.with_changes(leading_lines=lines)
                items.extend((s, None) for s in new_before)
            if orig in self.leaving:
                self.final[orig] = upd
            pieces = self._split(orig, upd) if orig in plan.splits else [upd]
            items.extend((p, plan.guards.get(orig)) for p in pieces)
            items.extend((s, None) for s in emit(plan.after.get(orig, [])))
        if type(block) is cst.Module:
            _two_blank_lines_after_new_defs(items, {id(u) for u in updated})
        return _group_guards(items)

    def _split(self, orig: cst.CSTNode, upd: cst.If) -> list[cst.BaseStatement]:
        """The pieces of a split `if`: the first keeps the original header, comments and blank lines."""
        leaving = [self.final[s] for s in self.plan.splits[orig] if s in self.final]
        pieces: list[cst.BaseStatement] = []
        current: list[cst.BaseStatement] = []

        def close() -> None:
            if not current:
                return
            if not pieces:
                pieces.append(upd.with_changes(body=upd.body.with_changes(body=list(current))))
            else:  # a new `if`: the blank lines and comments above its first statement go above it
                first = current[0]
                body = [first.with_changes(leading_lines=[]), *current[1:]]
                pieces.append(
                    cst.If(test=upd.test, body=cst.IndentedBlock(body=body), leading_lines=first.leading_lines)
                )
            current.clear()

        for stmt in upd.body.body:
            if any(stmt is s for s in leaving):
                close()
                if not pieces:
                    stmt = stmt.with_changes(leading_lines=[*upd.leading_lines, *stmt.leading_lines])
                pieces.append(stmt)
            else:
                current.append(stmt)
        close()
        return pieces


def _group_guards(items: list[tuple[cst.BaseStatement, str | None]]) -> list[cst.BaseStatement]:
    out: list[cst.BaseStatement] = []
    i = 0
    while i < len(items):
        stmt, cond = items[i]
        if cond is None:
            out.append(stmt)
            i += 1
            continue
        group = [stmt]
        j = i + 1
        while j < len(items) and items[j][1] == cond and not _has_blank_gap(items[j][0]):
            group.append(items[j][0])
            j += 1
        lead = group[0].leading_lines
        inner = [group[0].with_changes(leading_lines=[]), *group[1:]]
        out.append(cst.If(test=cst.parse_expression(cond), body=cst.IndentedBlock(body=inner), leading_lines=lead))
        i = j
    return out


def _two_blank_lines_after_new_defs(items: list, kept: set[int]) -> None:
    """A function or class the fix adds at the top of the module is followed by two blank lines (PEP 8),
    as it is preceded by them; the statement after it gets the blank lines it lacks."""
    for i in range(len(items) - 1):
        stmt = items[i][0]
        if type(stmt) not in TOP_DEFS or id(stmt) in kept:
            continue
        after, cond = items[i + 1]
        lines = list(after.leading_lines)
        blanks = next((k for k, line in enumerate(lines) if line.comment is not None), len(lines))
        if blanks < 2:
            items[i + 1] = (after.with_changes(leading_lines=[blank()] * (2 - blanks) + lines), cond)


def _has_blank_gap(stmt: cst.BaseStatement) -> bool:
    """A statement separated from the previous one by a blank line starts a new guard group."""
    return any(l.comment is None for l in stmt.leading_lines)


__all__ = ["Applier", "Insert", "blank"]
