"""What a local module's function does wrong in its process-group setup, read with Python's `ast` for
its summary (summaries.py): a hard-coded `nccl` backend, literal rank/world size/init method arguments,
and a GPU picked by the global rank (`torch.device(dist.get_rank())`, `.cuda(rank)`)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from .ast_cuda_join import joins_itself
from .ast_reading import ast_dotted, calls, cuda_fstring_of, nodes, string_constant
from .module_summary import GLOBAL_RANK_DEVICE, HARDCODED_BACKEND, INIT_ARGS, Finding


def setup_findings(func: ast.AST, qualify: Callable[[str], str], path: Path) -> set[Finding]:
    """Hard-coded process-group arguments and GPUs picked by the global rank, in one function."""
    out: set[Finding] = set()
    global_vars = {
        ast_dotted(t)
        for n in nodes(func)
        if isinstance(n, ast.Assign) and _global_rank(qualify, n.value)
        for t in n.targets
        if ast_dotted(t)
    }
    for call in calls(func):
        qual = qualify(ast_dotted(call.func) or "")
        last = qual.split(".")[-1]
        if joins_itself(call, qualify):
            backend = next((k.value for k in call.keywords if k.arg == "backend"), None)
            backend = backend or (call.args[0] if call.args else None)
            if string_constant(backend) == "nccl":
                out.add(Finding(HARDCODED_BACKEND, path, call.lineno, "nccl"))
            literal = [
                k.arg
                for k in call.keywords
                if k.arg in ("rank", "world_size", "init_method")
                and isinstance(k.value, ast.Constant)
                and k.value.value != "env://"
            ]
            if literal:
                out.add(Finding(INIT_ARGS, path, call.lineno, ", ".join(literal)))
        device_args: list[ast.AST] = []
        if qual == "torch.device":
            device_args = list(call.args[:2])
        elif qual == "torch.cuda.set_device" or last in ("to", "cuda"):
            device_args = list(call.args[:1])
        for arg in device_args:
            if _global_rank(qualify, arg, global_vars) or cuda_fstring_of(
                arg, lambda e: _global_rank(qualify, e, global_vars)
            ):
                out.add(Finding(GLOBAL_RANK_DEVICE, path, call.lineno, ast.unparse(arg)))
    return out


def _global_rank(qualify: Callable[[str], str], expr: ast.AST | None, names: set = frozenset()) -> bool:
    """`dist.get_rank()`, `int(os.environ["RANK"])`, or a name holding one of them."""
    if expr is None:
        return False
    if ast_dotted(expr) in names:
        return True
    for n in ast.walk(expr):
        if isinstance(n, ast.Call) and qualify(ast_dotted(n.func) or "").endswith("distributed.get_rank"):
            return True
        if (
            isinstance(n, ast.Subscript)
            and ast_dotted(n.value) in ("os.environ",)
            and string_constant(n.slice) == "RANK"
        ):
            return True
        if (
            isinstance(n, ast.Call)
            and ast_dotted(n.func) in ("os.environ.get", "os.getenv")
            and n.args
            and string_constant(n.args[0]) == "RANK"
        ):
            return True
    return False


__all__ = ["setup_findings"]
