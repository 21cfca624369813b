"""DDP201's fix for a training DataLoader that has a sampler of its own: a `RandomSampler` or
`SequentialSampler` (inline or through a variable) still draws from the whole dataset on every rank,
so distributed runs get a DistributedSampler in its place (a sampler of another kind, such as
`SubsetRandomSampler(train_idx)`, is reported, to shard by hand); a stream drawn with replacement gets a
random generator seeded per rank instead. A sampler variable that is None on every path (a slot the
script keeps for one) is filled with a DistributedSampler when distributed."""

from __future__ import annotations

import libcst as cst

from .analysis import Loader
from .analysis.flow import reads
from .edits import epoch_name, with_kwarg
from .loader_kwargs import report_own_sampler, sampler_of_its_own
from .order import Order
from .rule import Context
from .syntax import assigned_value, code_of, dotted, is_literal, kwarg, positional

SAMPLER = "torch.utils.data.distributed.DistributedSampler"


LOCAL_SAMPLERS = {
    "torch.utils.data.RandomSampler": "",
    "torch.utils.data.sampler.RandomSampler": "",
    "torch.utils.data.SequentialSampler": ", shuffle=False",
    "torch.utils.data.sampler.SequentialSampler": ", shuffle=False",
}


def swap_local_sampler(ctx: Context, loader: Loader, batch_loop: cst.CSTNode, arg: cst.Arg) -> None:
    """`sampler=RandomSampler(ds)` (inline or through a variable): every rank still draws from the
    whole dataset. Distributed runs get a DistributedSampler instead; plain runs keep theirs."""
    facts = ctx.facts
    ctor, var = arg.value, None
    if not isinstance(ctor, cst.Call):
        var = dotted(ctor)
        sites = facts.names.assignments(facts.index.scope_of(loader.site.node), var) if var else []
        built = {id(facts.index.site(c).stmt) for c in facts.data.sampler_calls}
        if any(id(s.stmt) in built for s in sites):
            return  # `if args.distributed: DistributedSampler(...) else: RandomSampler(...)`: picked per path
        if sites and all(is_literal(assigned_value(s.stmt), None) for s in sites):
            _fill_placeholder(ctx, loader, batch_loop, var, sites[-1].stmt)  # type: ignore[arg-type]
            return
        value = assigned_value(sites[-1].stmt) if sites else None
        ctor = value if isinstance(value, cst.Call) else None
    if ctor is None or facts.names.call_qual(ctor) not in LOCAL_SAMPLERS:
        own = sampler_of_its_own(facts, arg.value)
        if own is not None:  # `SubsetRandomSampler(train_idx)`: it draws the same indices on every rank
            report_own_sampler(ctx, loader.site.node, f"with a {own} of its own")  # type: ignore[arg-type]
        return
    ds = positional(ctor, 0) or kwarg(ctor, "data_source")
    if ds is None:
        return
    replacement = kwarg(ctor, "replacement") or positional(ctor, 1)
    if replacement is not None and not is_literal(replacement.value, False):
        _stream_per_rank(ctx, ctor, replacement)
        return
    if not ctx.report(
        ctor, "training DataLoader samples the whole dataset on every rank: use a DistributedSampler when distributed"
    ):
        return
    cls = ctx.plan.ref(SAMPLER, "DistributedSampler")
    dist_flag = ctx.env("DISTRIBUTED")
    extra = LOCAL_SAMPLERS[facts.names.call_qual(ctor) or ""]
    ctx.plan.replace(
        ctor, lambda n: cst.parse_expression(f"{cls}({code_of(ds.value)}{extra}) if {dist_flag} else {code_of(n)}")
    )
    _set_epoch(ctx, loader, batch_loop, var)


def _fill_placeholder(ctx: Context, loader: Loader, batch_loop: cst.CSTNode, var: str, stmt: cst.CSTNode) -> None:
    """`train_sampler = None`, then `DataLoader(train_set, shuffle=(train_sampler is None),
    sampler=train_sampler)`: the slot the script keeps for a sampler is empty on every path, so every
    rank draws from the whole dataset. Distributed runs fill it with a DistributedSampler."""
    facts = ctx.facts
    call = loader.site.node
    assert isinstance(call, cst.Call)
    message = f"training DataLoader's sampler is `{var} = None` on every path: every rank trains on the whole dataset"
    ds = positional(call, 0) or kwarg(call, "dataset")
    shuffle = kwarg(call, "shuffle") or positional(call, 2)
    why = None
    if ds is None or type(ds.value) is not cst.Name:
        why = "its dataset is no plain name"
    elif not all(
        facts.index.before(site.stmt, stmt)
        for site in facts.names.assignments(facts.index.scope_of(stmt), ds.value.value)
    ):
        why = f"{ds.value.value} is bound after `{var} = None`: build the dataset first"
    elif shuffle is not None and not is_literal(shuffle.value, False) and var not in reads(shuffle.value):
        why = f"it also passes shuffle={code_of(shuffle.value)}, which a sampler excludes: pass shuffle=({var} is None)"
    if why is not None:
        ctx.report(call, f"{message}; {why}, then give it a DistributedSampler when distributed", fix="none")
        return
    if not ctx.report(call, message):
        return
    order = "" if shuffle is not None and not is_literal(shuffle.value, False) else ", shuffle=False"
    value = ctx.plan.expression(
        "{cls}({ds}{order}) if {d} else None",
        cls=ctx.plan.ref(SAMPLER, "DistributedSampler"),
        ds=code_of(ds.value),  # type: ignore[union-attr]
        order=order,
        d=ctx.env("DISTRIBUTED"),
    )
    ctx.plan.replace(assigned_value(stmt), lambda n: value)  # type: ignore[arg-type]
    _set_epoch(ctx, loader, batch_loop, var)


def _set_epoch(ctx: Context, loader: Loader, batch_loop: cst.CSTNode, var: str | None) -> None:
    """`set_epoch` at the top of the epoch loop, through `var` where that loop sees it, else through the
    loader (`train_loader.sampler`)."""
    facts = ctx.facts
    dist_flag = ctx.env("DISTRIBUTED")
    epoch_loop = facts.data.epoch_loop_for(batch_loop)
    epoch = epoch_name(ctx, epoch_loop) if epoch_loop is not None else None
    if epoch is None:
        return
    if var is not None and facts.index.scope_of(epoch_loop) is facts.index.scope_of(loader.site.node):
        target = var
    else:
        reach = facts.data.loader_reach(loader, epoch_loop)
        if reach is None:
            return
        target = f"{reach}.sampler"
    stmts = ctx.plan.statements("if {d}:\n    {s}.set_epoch({e})", d=dist_flag, s=target, e=epoch)
    ctx.plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)


def _stream_per_rank(ctx: Context, ctor: cst.Call, replacement: cst.Arg) -> None:
    """`RandomSampler(ds, replacement=True, num_samples=n)` draws each sample independently, an
    endless stream where samples repeat. A DistributedSampler cannot draw with replacement, and the
    same draws on every rank (one seed everywhere) train every rank on the same samples. Each rank
    drawing its own stream, with its own seed, is what one process drawing N times as many would do."""
    if not is_literal(replacement.value, True):
        ctx.report(
            ctor,
            f"training DataLoader samples with replacement={code_of(replacement.value)}: with replacement every "
            "rank needs its own random stream, without it a DistributedSampler: choose by hand",
            fix="none",
        )
        return
    generator = kwarg(ctor, "generator")
    if generator is not None and ctx.facts.ranks.mentions_rank(generator.value):
        return  # each rank draws its own stream already (`manual_seed(torch.initial_seed() + RANK)`)
    if generator is not None:
        ctx.report(
            ctor,
            "training DataLoader draws with replacement from a generator of its own, the same draws on every "
            "rank: seed that generator differently on each rank",
            fix="none",
        )
        return
    if not ctx.report(
        ctor,
        "training DataLoader draws with replacement, the same samples on every rank: give each rank its own "
        "random stream (a DistributedSampler cannot draw with replacement)",
    ):
        return
    seed_per_rank(ctx, ctor)


def replacement_stream(expr: cst.BaseExpression) -> bool:
    """`RandomSampler(ds, replacement=True, num_samples=n)` with no generator of its own."""
    if not (isinstance(expr, cst.Call) and (dotted(expr.func) or "").split(".")[-1] == "RandomSampler"):
        return False
    replacement = kwarg(expr, "replacement") or positional(expr, 1)
    return replacement is not None and is_literal(replacement.value, True) and kwarg(expr, "generator") is None


def seed_per_rank(ctx: Context, ctor: cst.Call) -> None:
    """Give the sampler `ctor` draws with replacement a generator seeded per rank when distributed."""
    torch = ctx.plan.ref("torch", "torch", style="import")
    flag, rank = ctx.env("DISTRIBUTED"), ctx.env("RANK")
    if flag.endswith(".is_initialized()"):  # decided at run time: under that test the rank is the group's
        rank = flag.removesuffix(".is_initialized()") + ".get_rank()"
    generator = ctx.plan.expression(
        "{t}.Generator().manual_seed({t}.initial_seed() + {r}) if {d} else None", t=torch, r=rank, d=flag
    )
    ctx.plan.replace(ctor, lambda node: with_kwarg(node, "generator", generator))


__all__ = ["LOCAL_SAMPLERS", "SAMPLER", "replacement_stream", "seed_per_rank", "swap_local_sampler"]
