"""Where module-level code goes: the torchrun constants, a module-level process-group setup and the
imports ddpfix adds.

Each must be bound before the first statement that needs it, in the script's own code or in code
another rule inserts, run at module level or in a function called at module level before that
point; and never above the binding of a name it reads. Between those bounds it goes where a person
would put it: right after the imports.

Positions are *gaps* of the module body: gap `g` is just before top-level statement `g` (`g` =
the number of statements: the end of the file).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Sequence

import libcst as cst

from .analysis import ScriptFacts
from .plan import Order, Plan
from .syntax import dotted, names_in, single_small, strip_docstring

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Placement:
    """Module-level positions for the edits of one plan."""

    def __init__(self, facts: ScriptFacts, plan: Plan) -> None:
        self.facts = facts
        self.plan = plan
        self.body = list(facts.module.body)

    # ------------------------------------------------------------------ bounds
    def needed_by(self, names: Iterable[str]) -> int:
        """The first gap by which `names` must be bound for the edits planned so far (the end of the
        file when no planned edit mentions them)."""
        wanted = set(names)
        flow = self.facts.flow
        best = len(self.body)
        if not wanted:
            return best
        plan = self.plan
        for anchor, inserts in plan.before.items():
            if any(wanted & names_in(s) for i in inserts for s in i.stmts):
                best = min(best, flow.runs_at(anchor))
        for anchor, inserts in plan.after.items():
            if any(wanted & names_in(s) for i in inserts for s in i.stmts):
                top = flow.top_index(anchor)
                best = min(best, top + 1 if self._is_top(anchor) else flow.runs_at(anchor))
        for block, inserts in plan.prepends.items():
            if any(wanted & names_in(s) for i in inserts for s in i.stmts):
                best = min(best, 0 if block is self.facts.module else flow.runs_at(block))
        for node, fns in plan.replacements.items():
            if _replacement_mentions(node, fns, wanted):
                best = min(best, flow.runs_at(node))
        for stmt, cond in plan.guards.items():
            if wanted & set(_WORD.findall(cond)):
                best = min(best, flow.runs_at(stmt))
        return best

    def bound_after(self, names: Iterable[str]) -> int:
        """The first gap after the script binds every one of `names` at module level; names the script
        never binds there add no bound."""
        floor = strip_docstring(self.body)  # after the docstring and `from __future__` imports
        for name in set(names):
            i = self.facts.flow.first_binding([name])
            if i is not None:
                floor = max(floor, i + 1)
        return floor

    def late_imports(self, names: Iterable[str], upper: int) -> list[cst.BaseStatement]:
        """The script's own imports of `names` that come only at or after gap `upper` and can move up:
        plain top-level imports of the standard library or torch (`import os` below the first line
        that needs it). Moving those is what a person would do; anything else stays a lower bound."""
        out = []
        for name in set(names):
            i = self.facts.flow.first_binding([name])
            if i is None or i < upper:
                continue
            stmt = self.body[i]
            small = single_small(stmt)
            if (
                isinstance(small, cst.Import)
                and len(small.names) == 1
                or (isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None)
            ):
                top = _import_top(stmt)
                if top in sys.stdlib_module_names or top == "torch":
                    out.append(stmt)
        return sorted(set(out), key=self.body.index)

    def hoist(self, stmts: Sequence[cst.BaseStatement], gap: int) -> None:
        """Move the script's own import statements `stmts` up, ahead of gap `gap`: the standard
        library's into the file's first imports, before the first that is not the standard library's
        or sorts after it (`import os` between `import argparse` and `import time`), torch's after its
        last import above `gap`."""
        imports = [i for i in range(strip_docstring(self.body), gap) if _is_import(self.body[i])]
        for stmt in stmts:
            if imports and _stdlib(stmt):
                later = (i for i in imports if not _stdlib(self.body[i]) or _sort_key(self.body[i]) > _sort_key(stmt))
                at = next(later, None)
                if at is None:
                    self.plan.move_after(stmt, self.body[imports[-1]], order=Order.IMPORTS)
                else:
                    self.plan.move_before(stmt, self.body[at], order=Order.IMPORTS)
            elif imports:
                self.plan.move_after(stmt, self.body[imports[-1]], order=Order.IMPORTS)
            elif gap == 0:
                self.plan.move_before(stmt, self.body[0], order=Order.IMPORTS)
            else:
                self.plan.move_after(stmt, self.body[gap - 1], order=Order.IMPORTS)

    def choose(self, lower: int, upper: int, prefer_after: int | None = None) -> int:
        """The gap between `lower` and `upper` a person would pick: after the imports (or after the
        statement `prefer_after`), else after the last import before `upper`, else as low as
        allowed. Where `lower > upper` nothing is right: `upper` (the caller decides what to say)."""
        if lower > upper:
            return upper
        if prefer_after is not None and lower <= prefer_after + 1 <= upper:
            return prefer_after + 1
        anchor = self.plan.import_anchor()
        if anchor is not None:
            gap = self.body.index(anchor) + 1
            if gap <= upper:
                return max(gap, lower)
        imports = [i for i, s in enumerate(self.body[:upper]) if _is_import(s)]
        if imports:
            return max(imports[-1] + 1, lower)
        return lower

    # ------------------------------------------------------------------ edits
    def insert(self, gap: int, stmts: Sequence[cst.BaseStatement], order: Order) -> None:
        if gap == 0:
            self.plan.prepend(self.facts.module, stmts, order=order)
        else:
            self.plan.insert_after(self.body[gap - 1], stmts, order=order)

    def next_statement(self, gap: int) -> cst.BaseStatement | None:
        return self.body[gap] if gap < len(self.body) else None

    def new_import_names(self) -> dict[str, str]:
        """Local name -> module of each import the plan adds."""
        out = {}
        for spec in self.plan.imports:
            out[spec.local] = spec.module
        return out

    def limit_imports(self, extra: Iterable[int] = ()) -> None:
        """Keep the imports the plan adds above the first statement that needs them (and above the
        gaps in `extra`, where inserted module-level code reads them)."""
        names = self.new_import_names()
        if not names:
            return
        gap = min([self.needed_by(names), *extra])
        if gap < len(self.body):
            self.plan.import_limit = self.body[gap]

    def _is_top(self, node: cst.CSTNode) -> bool:
        i = self.facts.flow.top_index(node)
        return i < len(self.body) and self.body[i] is node


def _replacement_mentions(node: cst.CSTNode, fns, wanted: set[str]) -> bool:
    """Does the replacement of `node` introduce one of `wanted`? (Replacements are functions of the
    node; run on the original they show the names they bring.)"""
    new = node
    try:
        for fn in fns:
            new = fn(new)
    except Exception:  # noqa: BLE001 - a replacement that needs the edited node: assume it may
        return True
    return bool(wanted & (names_in(new) - names_in(node)))


def _import_top(stmt: cst.BaseStatement) -> str:
    """The top-level package a one-module import statement imports from (`os`, `torch`)."""
    small = single_small(stmt)
    if isinstance(small, cst.Import):
        return (dotted(small.names[0].name) or "").split(".")[0]
    if isinstance(small, cst.ImportFrom) and small.module is not None:
        return (dotted(small.module) or "").split(".")[0]
    return ""


def _stdlib(stmt: cst.BaseStatement) -> bool:
    return _import_top(stmt) in sys.stdlib_module_names


def _sort_key(stmt: cst.BaseStatement) -> tuple[bool, str]:
    """isort's order within a section: `import x` lines before `from x import y`, each by module."""
    small = single_small(stmt)
    module = small.names[0].name if isinstance(small, cst.Import) else getattr(small, "module", None)
    return isinstance(small, cst.ImportFrom), (dotted(module) or "") if module is not None else ""


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(single_small(stmt), (cst.Import, cst.ImportFrom))


__all__ = ["Placement"]
