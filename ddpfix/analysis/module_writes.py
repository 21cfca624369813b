"""Files every rank writes inside the script's own modules: a checkpoint saved, an experiment
tracker created, in a function or a class of `utils.py` / `trainer.py`, with no rank test around it
there. The summaries record them (read off Python's `ast` here) as findings with their file and
line, carried to the functions that call them unless the call itself is under a rank test; the rules
report them at the script's call (local_writes.py), since the fix belongs to the module."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from .ast_reading import ast_dotted, calls, is_rank_test, nodes
from .effects import FILE_HANDLERS, IN_MEMORY_FILES, TRACKER_CTORS, TRACKER_MODULES, WRITERS
from .module_summary import Finding

EVERY_RANK_SAVE = "every_rank_save"  # torch.save with no rank test around it (detail: "torch.save")
EVERY_RANK_TRACKER = "every_rank_tracker"  # SummaryWriter(...) / wandb.init(...) likewise (detail: its name)
EVERY_RANK_LOG_FILE = "every_rank_log_file"  # logging.basicConfig(filename=...) / a FileHandler likewise
EVERY_RANK_PRINT = "every_rank_print"  # a `print(...)` statement likewise, its text not naming the rank
PER_RANK_KINDS = {EVERY_RANK_SAVE, EVERY_RANK_TRACKER, EVERY_RANK_LOG_FILE, EVERY_RANK_PRINT}


def rank_guarded_calls(func: ast.AST) -> set[int]:
    """The calls (by id) in `func` under a branch on a rank test (`if is_main_process():`, `if
    self.args.rank == 0:`, its `else` too, and either side of `... if rank == 0 else ...`)."""
    out: set[int] = set()
    for node in nodes(func):
        if isinstance(node, ast.If) and is_rank_test(node.test):
            for stmt in [*node.body, *node.orelse]:
                out.update(id(n) for n in ast.walk(stmt) if isinstance(n, ast.Call))
        elif isinstance(node, ast.IfExp) and is_rank_test(node.test):  # `SummaryWriter() if rank == 0 else None`
            for part in (node.body, node.orelse):
                out.update(id(n) for n in ast.walk(part) if isinstance(n, ast.Call))
    return out


def every_rank_writes(func: ast.AST, qual: Callable[[str], str], path: Path) -> set[Finding]:
    """The checkpoints, files and trackers `func` writes on every rank: `torch.save(...)`, the other
    writers DDP401 knows (`save_image`, `np.save`, `imageio.mimsave`, ...), `open(path, "w")`,
    `SummaryWriter(...)`, `wandb.init(...)` outside any rank test of its own (`qual` spells a dotted name through the
    module's imports)."""
    guarded = rank_guarded_calls(func)
    out: set[Finding] = set()
    for call in calls(func):
        if id(call) in guarded:
            continue
        name = qual(ast_dotted(call.func) or "")
        if name == "torch.save" and not _in_memory(call, func, qual):
            out.add(Finding(EVERY_RANK_SAVE, path, call.lineno, "torch.save"))
        elif name in WRITERS and name != "torch.save" and not _per_rank(_path_arg(call, *WRITERS[name])):
            out.add(Finding(EVERY_RANK_SAVE, path, call.lineno, name))
        elif name in TRACKER_CTORS or name in {f"{m}.init" for m in TRACKER_MODULES}:
            out.add(Finding(EVERY_RANK_TRACKER, path, call.lineno, _short(name)))
        elif name in FILE_HANDLERS or (
            name == "logging.basicConfig" and any(k.arg == "filename" for k in call.keywords)
        ):
            file = next((k.value for k in call.keywords if k.arg in ("filename", "file")), None)
            file = file if file is not None or name == "logging.basicConfig" else (call.args or [None])[0]
            if not _per_rank(file):
                out.add(Finding(EVERY_RANK_LOG_FILE, path, call.lineno, _short(name)))
        elif name == "open" and _writes(call) and not _per_rank(call.args[0] if call.args else None):
            out.add(Finding(EVERY_RANK_LOG_FILE, path, call.lineno, "open"))
    out.update(_prints(func, guarded, qual, path))
    return out


def _prints(func: ast.AST, guarded: set[int], qual: Callable[[str], str], path: Path) -> set[Finding]:
    """`print(...)` statements outside any rank test, where `print` is the builtin (not `from rich import
    print`) and the text does not name the rank (`print(f"[rank {rank}] ...")` reports per rank on purpose)."""
    if qual("print") != "print":
        return set()
    return {
        Finding(EVERY_RANK_PRINT, path, stmt.lineno, "print")
        for stmt in nodes(func)
        if isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and ast_dotted(stmt.value.func) == "print"
        and id(stmt.value) not in guarded
        and not _per_rank(stmt.value)
    }


def _in_memory(save: ast.Call, func: ast.AST, qual: Callable[[str], str]) -> bool:
    """`torch.save(state, buf)` into `io.BytesIO()`, or a name every assignment of which in `func` is one."""
    target = next((k.value for k in save.keywords if k.arg == "f"), save.args[1] if len(save.args) > 1 else None)

    def buffer(value: ast.AST | None) -> bool:
        return isinstance(value, ast.Call) and qual(ast_dotted(value.func) or "") in IN_MEMORY_FILES

    if buffer(target) or not isinstance(target, ast.Name):
        return buffer(target)
    values = [
        n.value for n in nodes(func) if isinstance(n, ast.Assign) and any(ast_dotted(t) == target.id for t in n.targets)
    ]
    return bool(values) and all(buffer(v) for v in values)


def _path_arg(call: ast.Call, at: int, keyword: str) -> ast.AST | None:
    """The path a writer is handed: its keyword, else its argument at `at`."""
    named = next((k.value for k in call.keywords if k.arg == keyword), None)
    return named if named is not None else (call.args[at] if len(call.args) > at else None)


def _short(name: str) -> str:
    """`SummaryWriter` for `torch.utils.tensorboard.SummaryWriter`; `wandb.init` and
    `logging.basicConfig` keep their module."""
    parts = name.split(".")
    return name if len(parts) == 2 and parts[0] in ("wandb", "mlflow", "logging") else parts[-1]


def _writes(call: ast.Call) -> bool:
    """`open(path, "w")`, `"wb"`, `"a"`, `"x"`: a file opened for writing (the builtin's mode)."""
    mode = next((k.value for k in call.keywords if k.arg == "mode"), call.args[1] if len(call.args) > 1 else None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax")


def _per_rank(file: ast.AST | None) -> bool:
    """A file named after the rank (`f"train_{rank}.log"`): not shared."""
    return file is not None and any(
        "rank" in (ast_dotted(n) or "").rsplit(".", 1)[-1].lower()
        for n in ast.walk(file)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


__all__ = [
    "EVERY_RANK_LOG_FILE",
    "EVERY_RANK_PRINT",
    "EVERY_RANK_SAVE",
    "EVERY_RANK_TRACKER",
    "PER_RANK_KINDS",
    "every_rank_writes",
    "rank_guarded_calls",
]
