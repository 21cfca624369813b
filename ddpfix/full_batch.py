"""DDP211's fix (unsafe): full-batch training takes every WORLD_SIZE-th sample on each rank.

A loop that hands the model the whole of tensors built once (`prediction = net(x)`, then
`loss_func(prediction, y)`) repeats the same steps on every rank. The fix cuts, right before the
training loop, each rank's part of the model's inputs and of the targets the loss compares the
model's output with, one size on every rank (`x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]`:
up to WORLD_SIZE - 1 samples are left out), and has the loop read those; what runs after
the loop (an evaluation, a plot) still reads every sample, and a plain run takes `x[0::1]`, every
sample, as before.

Unsafe: it takes the first dimension for the sample dimension (a sequence-first tensor would be cut
along time), and the averaged gradient of the parts equals the whole batch's only for a loss that
averages over samples. Where the loss is known to sum (`reduction="sum"`, in the
call or in the criterion it calls), or the loop walks a sequence one element at a time, there is no fix.
"""

from __future__ import annotations

import libcst as cst

from .analysis.flow import binds
from .order import Order
from .syntax import calls_in, child_nodes, code_of, dotted, kwarg, walk
from .task_broadcast import TENSOR_METHODS


def targets_of(facts, loop: cst.CSTNode, forward: cst.Call, whole: dict[str, str]) -> tuple[set[str], str | None]:
    """The whole tensors the loss compares `forward`'s output with (`whole`: a name read in the loop ->
    the whole tensor it is, or is made from at every step): positional arguments beside it in a call,
    or the other operand of arithmetic with it; and why there is no fix (a loss that sums), else None."""
    outputs = _outputs(loop, forward)
    found: set[str] = set()
    for node in walk(loop):
        if isinstance(node, cst.Call) and node is not forward:
            args = [a for a in node.args if a.keyword is None and not a.star]
            if not any(_holds(a.value, forward, outputs) for a in args):
                continue
            if _sums(facts, node, loop):
                return set(), "the loss sums over samples: each rank's part would weigh 1/WORLD_SIZE of the whole"
            picked = _picked(node, forward, outputs, whole)
            if picked is not None:
                return set(), f"the loss compares rows an index picks ({picked}): cut by rank, it would pick others"
            found |= {
                whole[n] for a in args if not _holds(a.value, forward, outputs) for n in _names(a.value) & set(whole)
            }
        elif isinstance(node, cst.BinaryOperation):
            for side, other in ((node.left, node.right), (node.right, node.left)):
                if _holds(side, forward, outputs):
                    found |= {whole[n] for n in _names(other) & set(whole)}
    return found, None


def shard(ctx, loop: cst.CSTNode, names: list[str]) -> None:
    """Cut each rank's part of `names` right before `loop`, and have the loop read the parts."""
    rank, world = ctx.env("RANK"), ctx.env("WORLD_SIZE")
    spelled = {n: ctx.plan.fresh(f"{n}_shard") for n in names}
    lines = [f"{spelled[n]} = {n}[{rank}::{world}][: len({n}) // {world}]" for n in names]
    lines[0] += "  # this rank's part of the full batch, one size on every rank"
    ctx.plan.insert_before(loop, ctx.plan.statements("\n".join(lines)), order=Order.SAMPLER)
    parent = ctx.facts.index.parent
    for node in walk(loop):
        if type(node) is cst.Name and node.value in spelled and _is_read(parent, node):
            ctx.plan.replace(node, lambda n, s=spelled[node.value]: n.with_changes(value=s))


CONVERSIONS = {"from_numpy", "tensor", "Tensor", "FloatTensor", "LongTensor", "as_tensor", "Variable"}


def converted(loop: cst.CSTNode, name: str) -> str | None:
    """The name `name` is made from at every step of `loop` by conversions alone (`inputs =
    torch.from_numpy(x_train)`, `Variable(torch.Tensor(x)).to(device)`): its one binding in the loop,
    to `name` alone, through conversions and tensor methods only (`codec.encode(idx)` makes new data)."""
    assigns = [n for n in walk(loop) if isinstance(n, cst.Assign) and name in binds(n)]
    if len(assigns) != 1 or len(assigns[0].targets) != 1 or dotted(assigns[0].targets[0].target) != name:
        return None
    expr = assigns[0].value
    while isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in TENSOR_METHODS:
            expr = func.value  # a method of the tensor (`.float()`, `.to(device)`)
            continue
        positional = [a for a in expr.args if a.keyword is None and not a.star]
        if (dotted(func) or "").split(".")[-1] not in CONVERSIONS or len(positional) != 1:
            return None
        expr = positional[0].value
    return expr.value if isinstance(expr, cst.Name) else None


def outermost_loop(index, node: cst.CSTNode) -> cst.For | cst.While | None:
    """The outermost loop around `node` in its own function (or at module level)."""
    out = None
    for anc in index.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(anc, (cst.For, cst.While)):
            out = anc
    return out


def closure_loop(facts, node: cst.CSTNode) -> cst.For | cst.While | None:
    """The outermost loop that hands the function holding `node` to an optimizer's `step` (`def
    closure(): ... loss.backward()`, then `optimizer.step(closure)` in the loop, as LBFGS takes it)."""
    func = facts.index.enclosing(node, cst.FunctionDef)
    loop = outermost_loop(facts.index, func) if func is not None else None
    if loop is None:
        return None
    for call in calls_in(loop):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "step":
            if any(a.keyword is None and dotted(a.value) == func.name.value for a in call.args):
                return loop
    return None


def _is_read(parent, node: cst.Name) -> bool:
    """Is `node` a read of its name (not an attribute's name, a keyword, a parameter or a target)?"""
    up = parent.get(node)
    if isinstance(up, (cst.Attribute, cst.Arg)):
        return up.value is node
    return not isinstance(up, (cst.AssignTarget, cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias, cst.AsName))


def _outputs(loop: cst.CSTNode, forward: cst.Call) -> set[str]:
    """The names the loop binds to `forward`'s output (`prediction = net(x)`)."""
    out = set()
    for node in walk(loop):
        if isinstance(node, cst.Assign) and any(c is forward for c in calls_in(node.value)):
            out |= binds(node)
    return out


def _picked(call: cst.Call, forward: cst.Call, outputs: set[str], whole: dict[str, str]) -> str | None:
    """The text of a subscript in the loss `call`'s arguments that picks rows of the model's output or
    of a whole tensor (`output[idx_train]`), if any."""
    for arg in call.args:
        for node in walk(arg.value):
            if isinstance(node, cst.Subscript) and (
                _holds(node.value, forward, outputs) or _names(node.value) & set(whole)
            ):
                return code_of(node)
    return None


def _holds(expr: cst.BaseExpression, forward: cst.Call, outputs: set[str]) -> bool:
    return any(n is forward for n in walk(expr)) or bool(_names(expr) & outputs)


def _names(expr: cst.CSTNode) -> set[str]:
    """The names `expr` reads as values: not attributes' names, and not keyword arguments' values."""
    if isinstance(expr, cst.Arg):
        return set() if expr.keyword is not None else _names(expr.value)
    if isinstance(expr, cst.Name):
        return {expr.value}
    if isinstance(expr, cst.Attribute):
        return _names(expr.value)
    return set().union(*(_names(c) for c in child_nodes(expr)))


def _sums(facts, call: cst.Call, loop: cst.CSTNode) -> bool:
    """Does the loss `call` sum over samples: `reduction="sum"` (or `size_average=False`) in it, or in the
    constructor of the criterion it calls (`criterion = nn.MSELoss(reduction="sum")`)?"""
    calls = [call]
    name = dotted(call.func)
    if name is not None and "." not in name:
        made = facts.names.value_before(facts.index.scope_of(loop), name, loop) or facts.names.value_before(
            facts.module, name, loop
        )
        if isinstance(made, cst.Call):
            calls.append(made)
    for c in calls:
        reduction, size_average = kwarg(c, "reduction"), kwarg(c, "size_average")
        if reduction is not None and isinstance(reduction.value, cst.SimpleString):
            if reduction.value.evaluated_value == "sum":
                return True
        if (
            size_average is not None
            and isinstance(size_average.value, cst.Name)
            and size_average.value.value == "False"
        ):
            return True
    return False


__all__ = ["CONVERSIONS", "closure_loop", "converted", "outermost_loop", "shard", "targets_of"]
