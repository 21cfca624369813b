"""Ranks: which names and conditions depend on the rank (`rank == 0`, `dist.get_rank() == 0`,
`local_rank in (-1, 0)`, `is_main_process()`, helpers returning them), which code only some ranks
run, which calls are collectives (torch.distributed ops, and helpers of this file that issue them),
and, for a rank-dependent condition, whether rank 0 and the other ranks take it.
"""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from ..syntax import assigned_value, calls_in, code_of, dotted, walk
from .index import TreeIndex
from .launch import Launch
from .names import Names
from .training import HELPER_DEPTH

RANK_NAME = re.compile(
    r"(^|_)(rank|gpu_id|gpu)$|is_main|is_master|main_process|master_process|rank_?zero|global_zero|^master$",
    re.IGNORECASE,
)
COLLECTIVES = {
    "barrier",
    "monitored_barrier",
    "all_reduce",
    "reduce",
    "broadcast",
    "all_gather",
    "all_gather_into_tensor",
    "gather",
    "scatter",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
}
GLOBAL_RANK_SOURCES = re.compile(r"get_rank\(\)|environ(?:\.get\(|\[)\s*['\"]RANK['\"]")
LOCAL_RANK_SOURCES = re.compile(r"environ(?:\.get\(|\[)\s*['\"]LOCAL_RANK['\"]|get_local_rank\(\)|local_rank")

MAYBE = None  # a condition whose value for a rank class cannot be told


class Ranks:
    """The one rank detector: which names and tests depend on the rank, which code only some ranks
    run, and which calls are collectives."""

    def __init__(self, index: TreeIndex, names: Names, launch: Launch) -> None:
        self.index = index
        self.names = names
        self.launch = launch

    # ------------------------------------------------------------------ names
    @cached_property
    def flag_names(self) -> set[str]:
        """Names bound to a rank test: `is_master = rank == 0`, `main_proc = dist.get_rank() == 0`."""
        out = set()
        for assign in self.index.assigns:
            if self._mentions_rank(assign.value, flags=False):
                for t in assign.targets:
                    d = dotted(t.target)
                    if d and isinstance(assign.value, (cst.Comparison, cst.UnaryOperation, cst.BooleanOperation)):
                        out.add(d)
        return out

    @cached_property
    def helper_names(self) -> set[str]:
        """Functions of this file that return a rank test (`def is_main_process(): return get_rank() == 0`)."""
        out = set()
        for func in self.index.funcs:
            for n in walk(func.body):
                if isinstance(n, cst.Return) and n.value is not None and self._mentions_rank(n.value, flags=False):
                    out.add(func.name.value)
                    break
        return out

    def _mentions_rank(self, expr: cst.CSTNode, flags: bool = True) -> bool:
        for n in walk(expr):
            if isinstance(n, (cst.Name, cst.Attribute)):
                d = dotted(n) or ""
                if RANK_NAME.search(d.split(".")[-1]) or (flags and d in self.flag_names):
                    return True
            if isinstance(n, cst.Call):
                q = self.names.call_qual(n) or ""
                if q.endswith(("get_rank", "get_local_rank", "is_main_process")):
                    return True
                if flags and isinstance(n.func, cst.Name) and n.func.value in self.helper_names:
                    return True
        return False

    def depends_on_rank(self, expr: cst.CSTNode) -> bool:
        return self._mentions_rank(expr)

    def is_rank_test(self, expr: cst.CSTNode) -> bool:
        """Does `expr` read a rank by name or call (`rank`, `args.local_rank`, `dist.get_rank()`)?"""
        return self._mentions_rank(expr, flags=False)

    def rank_guarded(self, node: cst.CSTNode, _depth: int = 0) -> bool:
        """Is `node` inside a branch that depends on the rank (`if rank == 0:`, `if is_main_process():`),
        or in a function of this file that is only ever called from such branches?"""
        for anc in self.index.ancestors(node):
            if isinstance(anc, (cst.If, cst.IfExp, cst.While)) and self.is_rank_test(anc.test):
                return True
            if isinstance(anc, cst.FunctionDef):
                if self.is_rank_test(anc.name):
                    return True  # def save_on_master(...): the helper itself is rank-0 only
                if _depth < HELPER_DEPTH:
                    callers = self.index.callers_of(anc)
                    if callers and all(self.rank_guarded(c, _depth + 1) for c in callers):
                        return True
                return False
        return False

    def is_global_rank(self, expr: cst.BaseExpression) -> bool:
        """`rank` bound to `dist.get_rank()` or `os.environ["RANK"]` (not the local rank)."""
        name = dotted(expr)
        if name is None:
            return False
        if name == self.launch.env_names.get("RANK"):
            return True
        if "local" in name.lower():
            return False
        for site in self.names.assignments(self.index.scope_of(expr), name) + self.names.assignments(
            self.index.module, name
        ):
            value = assigned_value(site.stmt)
            if (
                value is not None
                and GLOBAL_RANK_SOURCES.search(code_of(value))
                and not LOCAL_RANK_SOURCES.search(code_of(value))
            ):
                return True
        return False

    def global_rank_var(self, at: cst.CSTNode) -> str | None:
        """A variable of `at`'s function holding the global rank (`rank = dist.get_rank()`), bound before `at`."""
        scope = self.index.scope_of(at)
        if scope is self.index.module:
            return None
        for site in self.names.assignments(scope, "rank"):
            value = assigned_value(site.stmt)
            if value is not None and self.index.before(site.stmt, at) and GLOBAL_RANK_SOURCES.search(code_of(value)):
                return "rank"
        return None

    def is_local_rank(self, expr: cst.BaseExpression) -> bool:
        """`local_rank`, `args.local_rank`, or any name bound to the LOCAL_RANK environment variable
        (`self.gpu_id = int(os.environ["LOCAL_RANK"])`)."""
        name = dotted(expr) or ""
        if name.split(".")[-1].lower() in ("local_rank", "localrank") or name == self.launch.env_names.get(
            "LOCAL_RANK"
        ):
            return True
        return name in self.local_rank_names

    @cached_property
    def local_rank_names(self) -> set[str]:
        out = set()
        for assign in self.index.assigns:
            if self.names.reads_environment(self.index.parent[assign]) and re.search(
                r"environ(?:\.get\(|\[)\s*['\"]LOCAL_RANK['\"]", code_of(assign.value)
            ):
                out.update(d for t in assign.targets if (d := dotted(t.target)))
        return out

    # ------------------------------------------------------------------ conditions
    def takes(self, test: cst.BaseExpression) -> tuple[bool | None, bool | None]:
        """(does rank 0 take this branch, does a rank > 0 take it); None where it cannot be told."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            a, b = self.takes(test.expression)
            return _not(a), _not(b)
        if isinstance(test, cst.BooleanOperation):
            la, lb = self.takes(test.left)
            ra, rb = self.takes(test.right)
            if isinstance(test.operator, cst.And):
                return _and(la, ra), _and(lb, rb)
            return _or(la, ra), _or(lb, rb)
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and self._mentions_rank(test.left):
            comp = test.comparisons[0]
            right = comp.comparator
            op = comp.operator
            if isinstance(right, cst.Integer) and right.evaluated_value == 0:
                if isinstance(op, cst.Equal):
                    return True, False
                if isinstance(op, cst.NotEqual):
                    return False, True
                if isinstance(op, cst.GreaterThan):
                    return False, True
                if isinstance(op, cst.LessThanEqual):
                    return True, False
            if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
                values = [e.value for e in right.elements]
                has_zero = any(isinstance(v, cst.Integer) and v.evaluated_value == 0 for v in values)
                inside = (True if has_zero else False), MAYBE
                if isinstance(op, cst.NotIn):
                    return _not(inside[0]), MAYBE
                return inside
            return MAYBE, MAYBE
        if self._mentions_rank(test):
            name = dotted(test) or (dotted(test.func) if isinstance(test, cst.Call) else None) or ""
            if name and not re.search(r"rank$", name, re.IGNORECASE):
                return True, False  # is_main_process(), is_master, master_process
            return False, True  # `if rank:` -> non-zero ranks
        return MAYBE, MAYBE

    # ------------------------------------------------------------------ collectives
    def collective_op(self, call: cst.Call) -> str | None:
        q = self.names.call_qual(call) or ""
        if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in COLLECTIVES:
            return q.rsplit(".", 1)[-1]
        callee = self.index.callee_of(call)
        if callee is not None and callee in self.collective_helpers:
            return f"{callee.name.value}()"
        return None

    @cached_property
    def collective_helpers(self) -> set[cst.FunctionDef]:
        """Functions of this file that issue a collective, directly or through each other."""
        found: set[cst.FunctionDef] = set()
        changed = True
        while changed:
            changed = False
            for func in self.index.funcs:
                if func in found:
                    continue
                for call in calls_in(func.body):
                    q = self.names.call_qual(call) or ""
                    if (
                        q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in COLLECTIVES
                    ) or self.index.callee_of(call) in found:
                        found.add(func)
                        changed = True
                        break
        return found

    def collectives_in(self, node: cst.CSTNode) -> list[tuple[cst.Call, str]]:
        out = []
        for call in calls_in(node):
            op = self.collective_op(call)
            if op is not None:
                out.append((call, op))
        return out

    def rank_ifs(self) -> list[cst.If]:
        return [i for i in self.index.ifs if self._mentions_rank(i.test)]


def _not(v):
    return None if v is None else not v


def _and(a, b):
    if a is False or b is False:
        return False
    if a is True and b is True:
        return True
    return None


def _or(a, b):
    if a is True or b is True:
        return True
    if a is False and b is False:
        return False
    return None


__all__ = ["Ranks", "COLLECTIVES", "MAYBE"]
