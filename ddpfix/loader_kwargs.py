"""Shared by the sampler rules: the fix for a DataLoader whose arguments come from a dict
(`DataLoader(ds, **train_kwargs)`) that may hold `shuffle` (on some paths only, say when CUDA is
present) or the dataset. Whether the loader shuffles is then known at run time only, so the sampler
goes into the dict at run time, taking `shuffle` out of it:

    if DISTRIBUTED:
        train_kwargs["sampler"] = DistributedSampler(train_set, shuffle=train_kwargs.pop("shuffle", False))
    train_loader = DataLoader(train_set, **train_kwargs)

A plain run never enters the `if`: the dict, the loader and its order stay as they were."""

from __future__ import annotations

import libcst as cst

from .analysis import Loader
from .analysis.values import handle_of
from .edits import epoch_name
from .rule import Context, Order
from .syntax import calls_in, code_of, dotted, kwarg, positional

SAMPLER = "torch.utils.data.distributed.DistributedSampler"


def star_dict(call: cst.Call) -> str | None:
    """The name of the one dict unpacked into `call` (`**train_kwargs`), if there is exactly one."""
    stars = [a for a in call.args if a.star == "**"]
    if len(stars) == 1 and isinstance(stars[0].value, cst.Name):
        return stars[0].value.value
    return None


def kwargs_fix_blocker(facts, call: cst.Call) -> str | None:
    """Why the one dict unpacked into `call` cannot be changed just before it, or None when it can."""
    name = star_dict(call)
    if name is None:
        return "its arguments come from several dicts: change them by hand"
    dicts = facts.data.dicts
    index = facts.index
    escape = dicts.escapes(name, call)
    if escape is not None:
        return f"{name} is handed on at line {dicts.line(escape)} before the loader: change it by hand"
    later = dicts.uses_after(name, call)
    if later is not None:
        return (
            f"{name} is used again at line {dicts.line(later)}, which a change here would reach too: change it by hand"
        )
    scope = index.scope_of(call)
    if any(isinstance(a, (cst.For, cst.While)) and index.contains(scope, a) for a in index.ancestors(call)):
        return f"the loader is built in a loop from {name}: change it by hand"
    return None


def prefix(target: str) -> str:
    """`train_loader` -> "train"; `loader`, `dataloader`, `data_loader` -> "" (plain `sampler`);
    `loaders["train"]` -> "train"."""
    if target.endswith('"]'):
        target = target[target.index('["') + 2 : -2]
    elif target.endswith("]"):
        target = target[: target.index("[")]
    base = target.split(".")[-1]
    for suffix in ("_dataloader", "_loader", "dataloader", "loader", "_dl", "dl", "_data"):
        if base.lower().endswith(suffix):
            rest = base[: -len(suffix)].rstrip("_")
            return "" if rest.lower() in ("", "data") else rest
    return "" if base.lower() in ("data", "dataset") else base


def dataset_name(ctx: Context, loader: Loader, ds_arg: cst.Arg) -> tuple[str, list[cst.BaseStatement]]:
    """How the sampler names the loader's dataset: its variable, or a new one bound to the expression
    the loader was given (`TensorDataset(x, y)`), whose statement goes before the loader and which
    takes the expression's place in the call."""
    existing = handle_of(ds_arg.value)  # `train_set`, `self.train_set`, `datasets["train"]`
    if existing is not None:
        return code_of(ds_arg.value), []
    plan = ctx.plan
    p = prefix(loader.local or loader.target or "loader")
    name = plan.fresh(f"{p}_dataset" if p else "dataset")
    stmts = plan.statements("{ds} = {value}", ds=name, value=code_of(ds_arg.value))

    def use_name(node: cst.Call) -> cst.Call:
        args = [
            a.with_changes(value=cst.Name(name))
            if a.value.deep_equals(ds_arg.value) and (a.keyword is None or a.keyword.value == "dataset")
            else a
            for a in node.args
        ]
        return node.with_changes(args=args)

    plan.replace(loader.site.node, use_name)
    return name, stmts


def dict_brings_sampler(ctx: Context, call: cst.Call, contents) -> bool:
    """Does the dict unpacked into the loader `call` bring a sampler that leaves the loader to it: a
    DistributedSampler (or what cannot be told), or a sampler of another kind on every path or beside a
    DistributedSampler, which is reported here, to shard by hand? False where it has no `sampler`, and where
    its own sampler is set on some paths only (`if args.use_sampler: train_kwargs["sampler"] =
    WeightedRandomSampler(...)`): the fix adds a DistributedSampler on the other paths (`if DISTRIBUTED and
    "sampler" not in train_kwargs:`), and the paths with its own are reported on the output."""
    facts = ctx.facts
    key = contents.keys.get("sampler")
    if key is None:
        return False
    kinds = [_sampler_kind(facts, v) for v in key.values]
    own = next((k for k in kinds if k is not None and k != DISTRIBUTED_KIND), None)
    if own is None:
        return True
    if not key.always and DISTRIBUTED_KIND not in kinds:
        return False
    where = "on every path" if key.always else "on the paths that set it"
    report_own_sampler(ctx, call, f"whose arguments bring a {own} of their own {where}")
    return True


def report_own_sampler(ctx: Context, call: cst.Call, what: str) -> None:
    """A training loader left to a sampler of another kind than DistributedSampler: reported, to shard by hand."""
    ctx.report(
        call, f"training DataLoader {what}: it does not shard the data by rank; shard it per rank by hand", fix="none"
    )


def sampler_of_its_own(facts, value: cst.BaseExpression) -> str | None:
    """The class name of the sampler `value` is (or a name bound to), where it is one of another kind than
    DistributedSampler (`SubsetRandomSampler(train_idx)`, a class of the script named `*Sampler`); None where
    it is a DistributedSampler or cannot be told."""
    kind = _sampler_kind(facts, value)
    return None if kind == DISTRIBUTED_KIND else kind


def has_unpassed_sampler(facts, call: cst.Call) -> bool:
    """A DistributedSampler already built (or got from a helper) over this loader's dataset and never
    passed: DDP202's case."""
    ds = positional(call, 0) or kwarg(call, "dataset")
    if ds is None:
        return False
    return any(b.dataset is not None and b.dataset.deep_equals(ds.value) for b in facts.data.sampler_bindings)


DISTRIBUTED_KIND = "DistributedSampler"


def _sampler_kind(facts, value: cst.BaseExpression) -> str | None:
    """DISTRIBUTED_KIND for a DistributedSampler (built there or bound to the name given), the class's name for
    another sampler (`WeightedRandomSampler`, `RandomSampler`, a class of the script named `*Sampler`), None for
    what cannot be told."""
    values = [value]
    if type(value) is cst.Name:
        values = [a.value for a in facts.index.assigns for t in a.targets if dotted(t.target) == value.value] or values
    samplers = set(facts.data.sampler_calls)
    kinds = []
    for v in values:
        calls = [c for c in calls_in(v) if (dotted(c.func) or "").endswith("Sampler")]
        if any(c in samplers for c in calls):
            return DISTRIBUTED_KIND
        kinds += [(dotted(c.func) or "").rsplit(".", 1)[-1] for c in calls]
    return kinds[0] if kinds else None


def add_sampler_to_kwargs(ctx: Context, loader: Loader, batch_loop: cst.CSTNode, ds_arg: cst.Arg | None) -> None:
    facts, plan = ctx.facts, ctx.plan
    call = loader.site.node
    assert isinstance(call, cst.Call)
    name = star_dict(call)
    contents = facts.data.kwargs_of(call)
    assert name is not None and contents is not None
    q = contents.quote
    if ds_arg is not None:
        ds, stmts = dataset_name(ctx, loader, ds_arg)
    else:
        ds, stmts = f"{name}[{q}dataset{q}]", []
    shuffle = f"{name}.pop({q}shuffle{q}, False)" if contents.has("shuffle") else "False"
    distributed = ctx.env("DISTRIBUTED")
    own = contents.has("sampler")  # a sampler of its own on some paths (dict_brings_sampler)
    stmts += plan.statements(
        "if {D}:\n    {n}[{q}sampler{q}] = {cls}({ds}, shuffle={sh})",
        D=f"{distributed} and {q}sampler{q} not in {name}" if own else distributed,
        n=name,
        q=q,
        cls=plan.ref(SAMPLER, "DistributedSampler"),
        ds=ds,
        sh=shuffle,
    )
    plan.insert_before(loader.site.stmt, stmts, order=Order.SAMPLER)

    epoch_loop = facts.data.epoch_loop_for(batch_loop)
    epoch = epoch_name(ctx, epoch_loop) if epoch_loop is not None else None
    if epoch_loop is None or epoch is None:
        return
    same = facts.index.scope_of(epoch_loop) is facts.index.scope_of(call) and loader.binding is loader.site.stmt
    reach = loader.target if same else facts.data.loader_reach(loader, epoch_loop)
    if reach is None:
        return
    test = f"isinstance({reach}.sampler, {plan.ref(SAMPLER, 'DistributedSampler')})" if own else distributed
    stmts = plan.statements("if {D}:\n    {l}.sampler.set_epoch({e})", D=test, l=reach, e=epoch)
    plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)


__all__ = [
    "add_sampler_to_kwargs",
    "dataset_name",
    "kwargs_fix_blocker",
    "prefix",
    "dict_brings_sampler",
    "has_unpassed_sampler",
    "star_dict",
]
