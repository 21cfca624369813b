"""Which reduction over the ranks a shown total needs: SUM or AVG, from what it is divided by where it is
shown, or where the script divided it in place before (see metric_reduce's docstring)."""

from __future__ import annotations

import libcst as cst

from .analysis.flow import last_binding, reads
from .syntax import code_of, dotted, walk

SUM, AVG = "sum", "avg"


def reduction(index, call: cst.Call, name: cst.Name, loaders: set[str], bounds: frozenset[str]) -> str:
    """SUM or AVG for one shown occurrence of a total (see the module's docstring); a total the script
    divided in place before it shows it (`train_loss = train_loss / len(train_loader.sampler)`, `total /=
    n`) by what that division was."""
    found = _division(index, call, name, (cst.Divide, cst.FloorDivide))
    if found is not None:
        division, left = found
        return _by_divisor(division.right, loaders, bounds) if left else AVG
    divisor = _divided_in_place(index, name, index.site(call).stmt)
    return SUM if divisor is None else _by_divisor(divisor, loaders, bounds)


def ratio_partners(index, call: cst.Call, name: cst.Name, sharded: set[str]) -> set[str]:
    """The totals on the other side of the division `name` is shown in, when that side reads totals of
    `sharded` alone (`100. * correct / total`): a ratio of two totals, right whether both are summed or
    both averaged over the ranks. Empty when `name` is in no such division."""
    found = _division(index, call, name, (cst.Divide,))
    if found is None:
        return set()
    division, left = found
    other = division.right if left else division.left
    names = reads(other)
    return names if names and names <= sharded and not _calls(other) else set()


def _division(index, call: cst.Call, name: cst.Name, operators: tuple) -> tuple[cst.BinaryOperation, bool] | None:
    """The innermost division by one of `operators` that holds `name` within `call`, and whether `name` is
    on its left (the divided side); None when there is none."""
    child: cst.CSTNode = name
    for anc in index.ancestors(name):
        if anc is call:
            break
        if isinstance(anc, cst.BinaryOperation) and isinstance(anc.operator, operators):
            return anc, child is anc.left
        child = anc
    return None


def with_ratios(ops: dict[str, str | None], ratios: list[tuple[str, set[str]]]) -> dict[str, str] | None:
    """`ops` with the totals shown in ratios of totals (`100. * correct / total`) given the reduction of
    their partners, which both sides of a ratio must share: summed where one of them is also shown as a
    sum (`%d` of `correct`), else averaged, as before; None when the sides need different ones."""
    grew = True
    while grew:  # a total shown alone decides for those it is in a ratio with
        grew = False
        for name, partners in ratios:
            known = {ops[n] for n in (name, *partners) if ops.get(n) is not None}
            if len(known) > 1:
                return None
            for n in (name, *partners):
                if known and ops.get(n) is None:
                    ops[n], grew = next(iter(known)), True
    return {n: AVG if op is None else op for n, op in ops.items()}


DICTS = {"dict", "collections.defaultdict", "defaultdict", "collections.OrderedDict", "OrderedDict"}


def dict_of_totals(index, name: str, stmt: cst.CSTNode) -> bool:
    """Is `name` bound to a dict where it is last bound before `stmt` (`losses = {k: 0 for k in keys}`)?
    reduce_over_ranks all-reduces a number, a list or a tensor, not a dict."""
    last = last_binding(index, index.scope_of(stmt), name, stmt, (cst.Assign, cst.AnnAssign))
    value = getattr(last, "value", None)
    return type(value) in (cst.Dict, cst.DictComp) or (type(value) is cst.Call and dotted(value.func) in DICTS)


def _calls(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Call) for n in walk(node))


def _by_divisor(divisor: cst.BaseExpression, loaders: set[str], bounds: frozenset[str]) -> str:
    """A total divided by the size of a dataset, or by the whole run's count of batches (a loop's bound
    cut by rank, or the dataset's size over the batch size), is summed; divided by anything per rank,
    averaged."""
    whole = _dataset_size(divisor, loaders) or code_of(divisor) in bounds or _batches_of(divisor, loaders)
    return SUM if whole else AVG


def _batches_of(expr: cst.BaseExpression, loaders: set[str]) -> bool:
    """`len(loader.dataset) / loader.batch_size`, `len(ds) // batch_size`: the whole dataset's number of
    batches, the same on every rank."""
    if not (type(expr) is cst.BinaryOperation and isinstance(expr.operator, (cst.Divide, cst.FloorDivide))):
        return False
    size = dotted(expr.right) or ""
    per_batch = type(expr.right) is cst.Integer or size == "bs" or size.rpartition(".")[2] == "batch_size"
    return per_batch and _dataset_size(expr.left, loaders)


def _divided_in_place(index, name: cst.Name, stmt: cst.CSTNode) -> cst.BaseExpression | None:
    """What the total `name` was divided by where it was last bound before `stmt`, in `name = name / d`
    or `name /= d` (None: its last binding there is no such division)."""
    last = last_binding(index, index.scope_of(stmt), name.value, stmt, (cst.Assign, cst.AugAssign))
    if isinstance(last, cst.AugAssign) and isinstance(last.operator, (cst.DivideAssign, cst.FloorDivideAssign)):
        return last.value
    if isinstance(last, cst.Assign) and isinstance(last.value, cst.BinaryOperation):
        value = last.value
        if isinstance(value.operator, (cst.Divide, cst.FloorDivide)) and name.value in reads(value.left):
            return value.right
    return None


def _dataset_size(expr: cst.BaseExpression, loaders: set[str]) -> bool:
    """`len(train_set)`, `len(loader.dataset)`: a size that is the same on every rank (not `len(loader)`,
    nor `len(loader.sampler)`: a DistributedSampler's length is this rank's share)."""
    if not (isinstance(expr, cst.Call) and dotted(expr.func) == "len" and len(expr.args) == 1):
        return False
    arg = dotted(expr.args[0].value) or ""
    owner, _, attr = arg.rpartition(".")
    return bool(arg) and arg not in loaders and not (owner in loaders and attr in ("sampler", "batch_sampler"))


__all__ = ["AVG", "SUM", "dict_of_totals", "ratio_partners", "reduction", "with_ratios"]
