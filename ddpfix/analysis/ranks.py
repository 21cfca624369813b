"""Ranks: the one rank detector. Which values and conditions depend on the rank (read by the
evaluator of rankvalues.py: `rank == 0`, `not rank`, `args.local_rank in [-1, 0]`, `is_main_process()`,
`master_process`, helpers returning them and names bound from them), which code only some ranks run
(branches, early exits, rank-0 helpers, a `print` the script silenced on the other ranks), which calls
are collectives (torch.distributed ops, and helpers of this file or of the script's modules that issue
them), and, for a rank-dependent condition, whether rank 0 and the other ranks take it.
"""

from __future__ import annotations

import re
from functools import cached_property

import libcst as cst

from ..syntax import assigned_value, calls_in, child_nodes, code_of, dotted, is_statement
from .index import TreeIndex
from .launch import Launch
from .names import Names
from .node_memo import NodeMemo
from .rankvalues import BOOL, RANK, RankValues
from .spawned import Launcher
from .summaries import COLLECTIVE, SILENCES_PRINT
from .torch_api import COLLECTIVES
from .training import HELPER_DEPTH

# Functions that only rank 0 runs, by name or decorator: `save_on_master`, `@rank_zero_only`.
RANK0_FUNCTION = re.compile(
    r"(^|_)on_(master|main|rank_?0|rank_?zero)$|(^|_)(master|main_process|rank_?zero|rank_?0)_only$", re.IGNORECASE
)
PRINT_SLOTS = {"builtins.print", "__builtin__.print", "__builtins__.print"}
EXIT_CALLS = {"sys.exit", "exit", "quit", "os._exit"}

GLOBAL_RANK_SOURCES = re.compile(r"get_rank\(\)|environ(?:\.get\(|\[)\s*['\"]RANK['\"]")
LOCAL_RANK_SOURCES = re.compile(r"environ(?:\.get\(|\[)\s*['\"]LOCAL_RANK['\"]|get_local_rank\(\)|local_rank")

MAYBE = None  # a condition whose value for a rank class cannot be told


class Ranks:
    """The one rank detector: which names and tests depend on the rank, which code only some ranks
    run, and which calls are collectives. Every rule reads ranks through it."""

    def __init__(self, index: TreeIndex, names: Names, launch: Launch) -> None:
        self.index = index
        self.names = names
        self.launch = launch
        self.modules = launch.modules
        self.values = RankValues(index, names, launch.modules)
        self.launcher = Launcher(index, launch, self.mentions_rank)
        self._early_exits: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        self._collectives = NodeMemo()  # call -> the collective it issues

    # ------------------------------------------------------------------ values and tests
    def depends_on_rank(self, expr: cst.CSTNode) -> bool:
        """May `expr`'s value differ between ranks (`rank`, `rank == 0`, `f"log_{rank}.txt"`, `data[rank]`)?"""
        return self.values.of(expr).varies

    def mentions_rank(self, expr: cst.CSTNode) -> bool:
        """Does `expr` read a rank itself (`f"[rank {rank}] loss"`, `seed + args.local_rank`), rather
        than something merely computed on each rank?"""
        if isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and self.is_rank(expr):
            return True
        for child in child_nodes(expr):
            if isinstance(expr, cst.Attribute) and child is expr.attr:
                continue
            if isinstance(expr, cst.Arg) and child is expr.keyword:
                continue
            if self.mentions_rank(child):
                return True
        return False

    def is_rank(self, expr: cst.CSTNode) -> bool:
        """Is `expr` itself a rank or a rank test (`rank`, `args.local_rank`, `dist.get_rank()`,
        `is_master`), rather than a value computed from one (`seed = base + rank`)?"""
        value = self.values.of(expr)
        return value.kind in (RANK, BOOL) and value.varies

    def is_rank_test(self, expr: cst.CSTNode) -> bool:
        """Used as a condition, may `expr` be true on some ranks and false on others? `rank == 0`,
        `not rank`, `args.local_rank in [-1, 0]`, `is_main_process()`, `master_process` are; a flag
        every rank shares (`ddp = int(os.environ.get("RANK", -1)) != -1`) is not."""
        return self.values.truth(expr)[2]

    def takes(self, test: cst.BaseExpression) -> tuple[bool | None, bool | None]:
        """(does rank 0 take this branch, does a rank > 0 take it); None where it cannot be told."""
        zero, other, _ = self.values.truth(test)
        return zero, other

    def rank_ifs(self) -> list[cst.If]:
        return [i for i in self.index.ifs if self.is_rank_test(i.test)]

    # ------------------------------------------------------------------ code only some ranks run
    def rank_guarded(self, node: cst.CSTNode, _depth: int = 0) -> bool:
        """Do only some ranks run `node`, or none of them? Inside a branch on a rank test (`if rank == 0:`,
        its `else`, `x if is_main_process() else None`), after an early exit some ranks take
        (`if rank != 0: return`), in a rank-0 helper (`def save_on_master`, `@rank_zero_only`), in a
        function of this file that is only ever called where only some ranks run, or in the process
        that starts the ranks with `mp.spawn` (see `in_launcher`)."""
        return self.guard_of(node, _depth=_depth, follow_callers=True) is not None or self.in_launcher(node)

    def never_runs(self, node: cst.CSTNode) -> bool:
        """Is `node` in a branch of its function that no rank takes: `if rank == 0 and ckpt is not None:`
        with `ckpt = None` never rebound, the `else` of a test true everywhere?"""
        child = node
        for anc in self.index.ancestors(node):
            kind = type(anc)
            if kind is cst.If and child is not anc.test:  # type: ignore[attr-defined]
                zero, other, _ = self.values.truth(anc.test)  # type: ignore[attr-defined]
                taken = zero is True or other is True if child is anc.body else zero is False or other is False  # type: ignore[attr-defined]
                if not taken and zero is not None and other is not None:
                    return True
            elif kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
                return False
            child = anc
        return False

    def in_launcher(self, node: cst.CSTNode) -> bool:
        """Does `node` run once, in the process that starts the ranks with `mp.spawn` (spawned.py)?"""
        return self.launcher.runs(node)

    def guard_of(self, node: cst.CSTNode, *, follow_callers: bool = False, _depth: int = 0) -> cst.CSTNode | None:
        """The node that makes `node` run on some ranks only (the `if`, the early exit, the function),
        or None. Without `follow_callers` the search stops at `node`'s function."""
        child = node
        for anc in self.index.ancestors(node):
            kind = type(anc)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
            if kind is cst.If or kind is cst.IfExp or kind is cst.While:
                if child is not anc.test and self.is_rank_test(anc.test):  # type: ignore[attr-defined]
                    return anc
            elif kind is cst.IndentedBlock or kind is cst.Module:
                if is_statement(child):
                    exit_ = self._early_exit_before(anc, child)  # type: ignore[arg-type]
                    if exit_ is not None:
                        return exit_
            elif kind is cst.FunctionDef:
                if RANK0_FUNCTION.search(anc.name.value) or any(
                    RANK0_FUNCTION.search((dotted(_decorator(d)) or "").rsplit(".", 1)[-1]) for d in anc.decorators
                ):
                    return anc  # def save_on_master(...), @rank_zero_only: the helper itself is rank-0 only
                if follow_callers and _depth < HELPER_DEPTH:
                    callers = self.index.callers_of(anc)
                    if callers and all(self.guard_of(c, follow_callers=True, _depth=_depth + 1) for c in callers):
                        return anc
                return None
            elif kind is cst.ClassDef or kind is cst.Lambda:
                return None
            child = anc
        return None

    def _early_exit_before(self, block: cst.CSTNode, stmt: cst.BaseStatement) -> cst.If | None:
        """`if rank != 0: return` (or `continue`, `raise`, `sys.exit()`) earlier in `block`: the rest of
        the block runs on the ranks that stay only."""
        exits = self._early_exits.get(block)
        if exits is None:
            exits = self._early_exits[block] = [s for s in block.body if self._is_early_exit(s)]  # type: ignore[attr-defined]
        return next((e for e in exits if self.index.before(e, stmt)), None)

    def _is_early_exit(self, stmt: cst.CSTNode) -> bool:
        if not (isinstance(stmt, cst.If) and stmt.orelse is None and _always_exits(self.names, stmt.body)):
            return False
        zero, other, varies = self.values.truth(stmt.test)
        return varies and (zero is True or other is True)  # one side always leaves

    def print_silenced(self, call: cst.CSTNode, _depth: int = 0) -> bool:
        """Has the script replaced `builtins.print` on the other ranks before `call` runs
        (`setup_for_distributed(is_master)`, here or in one of the script's modules)? Earlier in
        `call`'s own function, or before every call of that function (followed through helpers); a
        function this file never calls by name (a method, a callback) is taken to run after the setup."""
        sites = self.print_silencers
        if not sites:
            return False
        scope = self.index.scope_of(call)
        here = [s for s in sites if self.index.scope_of(s) is scope]
        if any(self.index.before(s, call) for s in here):
            return True
        if here or scope is self.index.module or _depth >= HELPER_DEPTH:
            return False
        callers = self.index.callers_of(scope)  # type: ignore[arg-type]
        return all(self.print_silenced(c, _depth + 1) for c in callers)

    @cached_property
    def print_silencers(self) -> list[cst.CSTNode]:
        """Calls (and statements) that replace `builtins.print`: `builtins.print = ...` itself, a call
        of a function of this file that does, or of a script's module's function that does (SILENCES_PRINT)."""
        assigning: list[cst.CSTNode] = []
        for assign in self.index.assigns:
            if any(
                dotted(t.target) in PRINT_SLOTS or self.names.qualname(t.target) in PRINT_SLOTS for t in assign.targets
            ):
                assigning.append(assign)
        funcs = {f for f in (self.index.scope_of(a) for a in assigning) if isinstance(f, cst.FunctionDef)}
        for _ in range(HELPER_DEPTH):
            more = {
                self.index.scope_of(c)
                for f in funcs
                for c in self.index.callers_of(f)
                if isinstance(self.index.scope_of(c), cst.FunctionDef)
            }
            if more <= funcs:
                break
            funcs |= more
        out = [a for a in assigning if self.index.scope_of(a) is self.index.module]
        for call in self.index.calls:
            callee = self.index.callee_of(call)
            if (callee is not None and callee in funcs) or (
                callee is None and self.modules.call_does(call, SILENCES_PRINT)
            ):
                out.append(call)
        return out

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

    def plain_value(self, name: str) -> int | None:
        """What a plain run (no torchrun environment) gives the module-level rank variable `name`:
        the default of `int(os.environ.get("RANK", -1))`; None when it cannot be told."""
        for site in self.names.assignments(self.index.module, name):
            value = assigned_value(site.stmt)
            if isinstance(value, cst.Call) and dotted(value.func) == "int" and value.args:
                value = value.args[0].value
            if isinstance(value, cst.Call) and self.names.call_qual(value) in ("os.environ.get", "os.getenv"):
                if len(value.args) > 1:
                    default = self.values.of(value.args[1].value)
                    if default.kind == "const" and isinstance(default.zero, (int, str)):
                        try:
                            return int(default.zero)
                        except ValueError:
                            return None
                return None
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

    # ------------------------------------------------------------------ collectives
    def collective_op(self, call: cst.Call) -> str | None:
        """The collective `call` issues ("all_reduce", or "helper()" for a function that issues one)."""
        return self._collectives(call, self._collective_op)

    def _collective_op(self, call: cst.Call) -> str | None:
        op = self._torch_collective(call)
        if op is not None:
            return op
        callee = self.index.callee_of(call)
        if callee is not None and callee in self.collective_helpers:
            return f"{callee.name.value}()"
        if callee is None and self.modules.call_does(call, COLLECTIVE):
            return f"{dotted(call.func)}()"
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
                    callee = self.index.callee_of(call)
                    if (
                        self._torch_collective(call) is not None
                        or callee in found
                        or (callee is None and self.modules.call_does(call, COLLECTIVE))
                    ):
                        found.add(func)
                        changed = True
                        break
        return found

    def torch_collective(self, call: cst.Call) -> str | None:
        """The collective `call` itself issues ("all_reduce"), not through a function."""
        return self._torch_collective(call)

    def _torch_collective(self, call: cst.Call) -> str | None:
        """`dist.all_reduce(...)` -> "all_reduce", also where `dist` comes from a module of the script's
        own that imports torch.distributed (`from utils import dist`)."""
        q = self.names.call_qual(call) or ""
        if not q.startswith("torch.distributed."):
            q = self.modules.library_name(call.func) or q
        if q.startswith("torch.distributed.") and q.rsplit(".", 1)[-1] in COLLECTIVES:
            return q.rsplit(".", 1)[-1]
        return None

    def collectives_in(self, node: cst.CSTNode) -> list[tuple[cst.Call, str]]:
        out = []
        for call in calls_in(node):
            op = self.collective_op(call)
            if op is not None:
                out.append((call, op))
        return out


def _decorator(d: cst.Decorator) -> cst.BaseExpression:
    return d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator


def _always_exits(names: Names, body: cst.BaseSuite) -> bool:
    """Does this branch always leave (its last statement a return/raise/continue/break or sys.exit())?"""
    stmts = list(body.body)
    if not stmts:
        return False
    last = stmts[-1]
    small = last if isinstance(body, cst.SimpleStatementSuite) else None
    if isinstance(last, cst.SimpleStatementLine):
        small = last.body[-1]
    if small is not None:
        if isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
            return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return (names.call_qual(small.value) or "") in EXIT_CALLS
    return False


__all__ = ["COLLECTIVES", "MAYBE", "Ranks"]
