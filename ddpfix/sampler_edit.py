"""DDP201's edit of one training DataLoader, shared by its fix in the script and its fix in a module
of the script (a loader factory, loader_factory.py): a `DistributedSampler` over the loader's dataset
when distributed, with `shuffle` moved into it, and `set_epoch(epoch)` first in the epoch loop.

In the script, "when distributed" is the script's own `DISTRIBUTED`; in a factory of a module it is the
factory's new `distributed` parameter, which the script's calls pass."""

from __future__ import annotations

import libcst as cst

from .analysis import Loader
from .drawn_epochs import count_passes
from .edits import engine_set_epoch, epoch_name, set_epoch_statements, with_kwarg
from .loader_kwargs import dataset_name, prefix
from .local_samplers import SAMPLER
from .module_epochs import keep_set_epoch, set_epoch_blocker
from .rule import Context, Order
from .syntax import code_of, dotted, is_literal, kwarg, positional


def add_sampler(ctx: Context, loader: Loader, ds_arg: cst.Arg, *, flag: str | None = None, exact: bool = False) -> str:
    """Give the loader a DistributedSampler under `flag` (default: the script's DISTRIBUTED), built
    just before it; the sampler's name. `exact`: instead, each rank's own indices in order,
    `range(RANK, len(dataset), WORLD_SIZE)`, none repeated (shards may differ by one sample: for
    evaluation whose sums are reduced, DDP212)."""
    plan = ctx.plan
    call = loader.site.node
    assert isinstance(call, cst.Call)
    p = prefix(loader.local or loader.target or "loader")
    head = "self." if (loader.local or "").startswith("self.") else ""  # the sampler lives where the loader is built
    stmt = loader.site.stmt
    sampler_cls = None if exact else plan.ref(SAMPLER, "DistributedSampler")
    dist_flag = flag if flag is not None else ctx.env("DISTRIBUTED")

    ds_expr, new_stmts = dataset_name(ctx, loader, ds_arg)
    sampler_base = f"{p}_sampler" if p else "sampler"
    sampler = f"{head}{sampler_base}" if head else plan.fresh(sampler_base)

    shuffle_arg = kwarg(call, "shuffle")
    shuffle_pos = positional(call, 2)  # DataLoader(dataset, batch_size, shuffle)
    shuffle = shuffle_arg.value if shuffle_arg is not None else (shuffle_pos.value if shuffle_pos is not None else None)
    if shuffle is not None and is_literal(shuffle, True):
        sampler_args = ds_expr
        loader_shuffle = f"({sampler} is None)"
    elif shuffle is None or is_literal(shuffle, False):
        sampler_args = f"{ds_expr}, shuffle=False"
        loader_shuffle = None
    else:
        sampler_args = f"{ds_expr}, shuffle={code_of(shuffle)}"
        loader_shuffle = f"({sampler} is None and {code_of(shuffle)})"
    if exact:
        new_stmts += plan.statements(
            "{s} = range({r}, len({ds}), {w}) if {d} else None  # every sample on one rank",
            s=sampler,
            r=ctx.env("RANK"),
            ds=ds_expr,
            w=ctx.env("WORLD_SIZE"),
            d=dist_flag,
        )
    else:
        new_stmts += plan.statements(
            "{s} = {cls}({args}) if {d} else None", s=sampler, cls=sampler_cls, args=sampler_args, d=dist_flag
        )
    plan.insert_before(stmt, new_stmts, order=Order.SAMPLER)

    def rewrite(node: cst.Call) -> cst.Call:
        if loader_shuffle is not None:
            expr = cst.parse_expression(loader_shuffle)
            if shuffle_arg is None and shuffle_pos is not None:
                node = node.with_changes(
                    args=[a.with_changes(value=expr) if a is _same(node, shuffle_pos) else a for a in node.args]
                )
            else:
                node = with_kwarg(node, "shuffle", expr)
        return with_kwarg(node, "sampler", cst.parse_expression(sampler))

    plan.replace(call, rewrite)
    return sampler


def _same(node: cst.Call, original: cst.Arg) -> cst.Arg | None:
    for a in node.args:
        if a.deep_equals(original):
            return a
    return None


def add_set_epoch(ctx: Context, loader: Loader, batch_loop: cst.CSTNode, sampler: str | None) -> None:
    """`set_epoch(epoch)` first in the epoch loop around `batch_loop`: on the variable `sampler` when
    the loop sees it, else through the loader (`if isinstance(loader.sampler, DistributedSampler):`);
    `sampler` None: the sampler is built elsewhere (a factory of the script's own modules), so always
    through the loader."""
    facts = ctx.facts
    handoff = facts.data.handoff(batch_loop)
    if handoff is not None and handoff.engine is not None:  # an ignite trainer runs the epochs
        if sampler is not None and loader.binding is loader.site.stmt:  # the sampler variable is at hand
            engine_set_epoch(ctx, handoff, sampler, test="optional")
        else:
            engine_set_epoch(ctx, handoff, f"{loader.target}.sampler", test="loader")
        return
    epoch_loop = facts.data.epoch_loop_for(batch_loop)
    if epoch_loop is None:
        if handoff is not None and handoff.epochs_there and not handoff.sets_epoch and ctx.rule is not None:
            if set_epoch_blocker(ctx, ctx.rule, handoff)[0] is None:  # a function of the script's own modules
                keep_set_epoch(ctx, ctx.rule, handoff)
        elif handoff is None:  # batches drawn with next() from an iterator made again when it runs out
            count_passes(ctx, batch_loop)
        return
    epoch = epoch_name(ctx, epoch_loop)
    if epoch is None:
        return
    same_scope = (
        facts.index.scope_of(epoch_loop) is facts.index.scope_of(loader.site.node)
        and loader.binding is loader.site.stmt
    )
    same_class = (
        sampler is not None
        and sampler.startswith("self.")
        and facts.index.enclosing(epoch_loop, cst.ClassDef) is loader.site.cls
    )
    if sampler is not None and (same_scope or same_class):
        stmts = set_epoch_statements(ctx, sampler, epoch, optional=True)
    else:
        reach = loader.target if sampler is None and same_scope else facts.data.loader_reach(loader, epoch_loop)
        if reach is None:
            return
        cls = ctx.plan.ref(SAMPLER, "DistributedSampler")
        stmts = ctx.plan.statements(
            """
            if isinstance({l}.sampler, {cls}):
                {l}.sampler.set_epoch({e})
            """,
            l=reach,
            cls=cls,
            e=epoch,
        )
    ctx.plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)


def is_iterable_dataset(facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` (a dataset given to a loader) an instance of a class of this file that derives from
    IterableDataset?"""
    name = dotted(expr.func) if isinstance(expr, cst.Call) else None
    for cls in facts.index.classes:
        if name == cls.name.value or (
            isinstance(expr, cst.Name) and _bound_to_class(facts, expr.value, cls.name.value)
        ):
            return any("IterableDataset" in code_of(b.value) for b in cls.bases)
    return False


def taken_per_rank(facts, expr: cst.BaseExpression, depth: int = 3) -> bool:
    """Is the dataset a part each rank takes for itself: its value, an argument of the call that builds
    it, or what its name was assigned from depends on the rank (`partitioner.use(dist.get_rank())`,
    `Subset(ds, range(rank, n, world_size))`)?"""
    if facts.ranks.depends_on_rank(expr):
        return True
    if depth == 0:
        return False
    if type(expr) is cst.Call:
        return any(taken_per_rank(facts, a.value, depth - 1) for a in expr.args)
    if type(expr) is cst.Name:
        site = facts.index.site(expr)
        scope = site.func or facts.index.module
        for line in facts.names.assignments(scope, expr.value):
            for small in getattr(line.node, "body", ()):
                if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                    if taken_per_rank(facts, small.value, depth - 1):
                        return True
    return False


def _bound_to_class(facts, var: str, cls_name: str) -> bool:
    for assign in facts.index.assigns:
        if any(dotted(t.target) == var for t in assign.targets) and isinstance(assign.value, cst.Call):
            if dotted(assign.value.func) == cls_name:
                return True
    return False


__all__ = ["add_sampler", "add_set_epoch", "is_iterable_dataset", "taken_per_rank"]
