"""What a function of the script's own modules sums over a DataLoader it receives and then reduces over
the ranks, read with Python's `ast`: a loop over the loader with no training step in it that adds into
a name (`sum_num += torch.eq(pred, labels).sum()`), then, after the loop, a call handed that name which
issues a collective (`dist.all_reduce(sum_num)`, or `reduce_value(sum_num, average=False)` of a helper
that does). Each rank's sum is added to the others': over a loader every rank iterates whole, every
sample counts WORLD_SIZE times (DDP212)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from .ast_reading import ast_dotted, nodes
from .ast_reading import parents as parents_of
from .loader_params import iterated_param
from .model_params import ast_trains

REDUCED = "reduced"  # a parameter use: summed over in a loop and the sum reduced over the ranks after it
# ... where the loop runs with gradients on or issues a collective itself: shards of different lengths
# could leave a rank waiting, so no exact sharding is offered
REDUCED_EACH_BATCH = "reduced_each_batch"
NO_GRAD = ("no_grad", "inference_mode")
# A division of a reduced value by anything but a count of samples (`len(val_set)`) may be an average
# over the ranks (`value /= world_size`, `/ nprocs`, `/ total` of another reduced count): whole-set values
# then stay right, and sharding would change them. Only a division by `len(...)` is taken for a mean
# over the data.
SUM_OPS = ("SUM",)


@dataclass
class SumLoop:
    after: list[ast.Call] = field(default_factory=list)  # calls after the loop handed a name it adds into
    averaged: bool = False  # the function divides one of those names after the loop (ast_divided)
    inside: list[ast.Call] = field(default_factory=list)  # the calls of the loop itself
    no_grad: bool = False  # under torch.no_grad() / inference_mode (a `with` or the function's decorator)


def ast_summed(func: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> dict[str, SumLoop]:
    """parameter -> the loop over it that trains nothing and adds into a name handed to a call after it
    (whether such a call issues a collective is for the caller to say: it may be a helper of another module)."""
    known = dict.fromkeys(params)
    parents = parents_of(func)
    decorated = any(_no_grad(d) for d in func.decorator_list)
    out: dict[str, SumLoop] = {}
    for loop in nodes(func):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        param = iterated_param(loop.iter, known)
        if param is None or ast_trains(loop):
            continue
        sums = {n.target.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
        end = loop.end_lineno or loop.lineno
        after = [
            c
            for c in nodes(func)
            if isinstance(c, ast.Call)
            and c.lineno > end
            and any(isinstance(a, ast.Name) and a.id in sums for a in [*c.args, *(k.value for k in c.keywords)])
        ]
        if after:
            inside = [c for c in ast.walk(loop) if isinstance(c, ast.Call)]
            averaged = divided_after(func, end, sums)
            out[param] = SumLoop(after, averaged, inside, decorated or _under_no_grad(loop, parents))
    return out


def ast_averages(func: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> dict[str, tuple]:
    """parameter -> (flag, its default) for a parameter the function divides by the world size (a
    helper that averages what it all-reduces): flag None when it always does, else the parameter it does
    so under (`if average: value /= world_size`), with that parameter's default (None: not a literal)."""
    parents = parents_of(func)
    defaults = dict(zip(reversed([a.arg for a in func.args.args]), reversed(func.args.defaults)))
    defaults.update({a.arg: d for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults) if d is not None})
    out: dict[str, tuple] = {}
    for node in nodes(func):
        name = ast_divided(node)
        if name not in params:
            continue
        flag, child, up = None, node, parents.get(node)
        while up is not None and up is not func:
            if isinstance(up, (ast.If, ast.IfExp)) and isinstance(up.test, ast.Name) and up.test.id in params:
                body = up.body if isinstance(up.body, list) else [up.body]
                flag = up.test.id if child in body else None  # (in the `else`: under `not flag`; read as always)
                break
            child, up = up, parents.get(up)
        default = defaults.get(flag) if flag is not None else None
        out[name] = (flag, default.value if isinstance(default, ast.Constant) else None)
    return out


MISSING = object()  # a call that does not give a parameter (its default applies)


def averaged(averages: dict[str, tuple], handed: list[str], flag_value: Callable[[str], object]) -> bool:
    """Does a call of a function whose averaged parameters are `averages` (`ast_averages`) divide what it
    is handed (`handed`: the parameters its arguments bind) by the world size? `flag_value(flag)`: the
    literal the call gives that parameter, MISSING when it gives none, None when it is no literal (then
    it may: counted as averaged)."""
    for param in handed:
        if param not in averages:
            continue
        flag, default = averages[param]
        if flag is None:
            return True
        value = flag_value(flag)
        if (default if value is MISSING else value) is not False:
            return True
    return False


def ast_call_averages(call: ast.Call, params: list[str], averages: dict[str, tuple]) -> bool:
    """Does `call` of a function with parameters `params` and averaged parameters `averages`
    (`ast_averages`) divide what it is handed by the world size (`reduce_value(x)` with `if average:
    value /= world_size`, `average=True` by default)?"""
    handed = [params[i] for i in range(min(len(call.args), len(params)))] + [k.arg for k in call.keywords if k.arg]

    def flag_value(flag: str) -> object:
        given = next((k.value for k in call.keywords if k.arg == flag), None)
        if given is None and flag in params and params.index(flag) < len(call.args):
            given = call.args[params.index(flag)]
        if given is None:
            return MISSING
        return given.value if isinstance(given, ast.Constant) else None

    return averaged(averages, handed, flag_value)


def divided_after(scope: ast.AST, line: int, sums: set[str]) -> bool:
    """Is one of `sums` divided (ast_divided) in `scope` below `line`: maybe an average over the ranks?"""
    return any(getattr(n, "lineno", 0) > line and ast_divided(n) in sums for n in nodes(scope))


def ast_divided(node: ast.AST) -> str | None:
    """The name `node` divides by what may be the world size (anything but `len(...)`): `x /= world_size`,
    `x / dist.get_world_size()`, `x.div_(n)`; else None."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
        return node.target.id if isinstance(node.target, ast.Name) and _not_size(node.value) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.FloorDiv)):
        return node.left.id if isinstance(node.left, ast.Name) and _not_size(node.right) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("div", "div_"):
        owner = node.func.value
        return owner.id if isinstance(owner, ast.Name) and any(_not_size(a) for a in node.args) else None
    return None


def ast_sum_op(call: ast.Call) -> bool:
    """Does the collective `call` sum (no `op=` other than ReduceOp.SUM)?"""
    op = next((k.value for k in call.keywords if k.arg == "op"), call.args[1] if len(call.args) > 1 else None)
    return op is None or (ast_dotted(op) or "").split(".")[-1] in SUM_OPS


def _not_size(divisor: ast.AST) -> bool:
    """Is `divisor` anything but a count of samples (`len(val_set)`, `len(loader.dataset)`)?"""
    return not any(isinstance(n, ast.Call) and ast_dotted(n.func) == "len" for n in ast.walk(divisor))


def _no_grad(node: ast.AST) -> bool:
    """`torch.no_grad()`, `@torch.inference_mode()`, `no_grad()`."""
    target = node.func if isinstance(node, ast.Call) else node
    return (ast_dotted(target) or "").split(".")[-1] in NO_GRAD


def _under_no_grad(node: ast.AST, parents: dict) -> bool:
    up = parents.get(node)
    while up is not None:
        if isinstance(up, (ast.With, ast.AsyncWith)) and any(_no_grad(i.context_expr) for i in up.items):
            return True
        up = parents.get(up)
    return False


__all__ = [
    "MISSING",
    "NO_GRAD",
    "REDUCED",
    "REDUCED_EACH_BATCH",
    "SUM_OPS",
    "SumLoop",
    "ast_averages",
    "ast_call_averages",
    "averaged",
    "ast_divided",
    "ast_sum_op",
    "ast_summed",
]
