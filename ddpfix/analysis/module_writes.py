"""Files every rank writes inside the script's own modules: a checkpoint saved, an experiment
tracker created, in a function or a class of `utils.py` / `trainer.py`, with no rank test around it
there. The summaries record them (read off Python's `ast` here) as findings with their file and
line, carried to the functions that call them unless the call itself is under a rank test; the rules
report them at the script's call (local_writes.py), since the fix belongs to the module."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from .ast_reading import ast_dotted, is_rank_test
from .effects import TRACKER_CTORS, TRACKER_MODULES
from .module_summary import Finding

EVERY_RANK_SAVE = "every_rank_save"  # torch.save with no rank test around it (detail: "torch.save")
EVERY_RANK_TRACKER = "every_rank_tracker"  # SummaryWriter(...) / wandb.init(...) likewise (detail: its name)
PER_RANK_KINDS = {EVERY_RANK_SAVE, EVERY_RANK_TRACKER}


def rank_guarded_calls(func: ast.AST) -> set[int]:
    """The calls (by id) in `func` under a branch on a rank test (`if is_main_process():`, `if
    self.args.rank == 0:`, its `else` too)."""
    out: set[int] = set()
    for node in ast.walk(func):
        if isinstance(node, ast.If) and is_rank_test(node.test):
            for stmt in [*node.body, *node.orelse]:
                out.update(id(n) for n in ast.walk(stmt) if isinstance(n, ast.Call))
    return out


def every_rank_writes(func: ast.AST, qual: Callable[[str], str], path: Path) -> set[Finding]:
    """The checkpoints and trackers `func` writes on every rank: `torch.save(...)`, `SummaryWriter(...)`,
    `wandb.init(...)` outside any rank test of its own (`qual` spells a dotted name through the
    module's imports)."""
    guarded = rank_guarded_calls(func)
    out: set[Finding] = set()
    for call in (n for n in ast.walk(func) if isinstance(n, ast.Call)):
        if id(call) in guarded:
            continue
        name = qual(ast_dotted(call.func) or "")
        if name == "torch.save":
            out.add(Finding(EVERY_RANK_SAVE, path, call.lineno, "torch.save"))
        elif name in TRACKER_CTORS or name in {f"{m}.init" for m in TRACKER_MODULES}:
            out.add(Finding(EVERY_RANK_TRACKER, path, call.lineno, name.rsplit(".", 1)[-1] if "." in name else name))
    return out


__all__ = ["EVERY_RANK_SAVE", "EVERY_RANK_TRACKER", "PER_RANK_KINDS", "every_rank_writes", "rank_guarded_calls"]
