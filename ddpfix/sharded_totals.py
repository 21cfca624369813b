"""What a script's ranks each compute over their own shard: the loops over sharded data, the totals and
lists those loops accumulate, and whether the script's process group can reduce them on the CPU.

DDP409 (a per-rank total shown as if global) and DDP313 (ReduceLROnPlateau stepped with a per-rank
metric) read the same view. A loop is sharded when it runs over a loader with a DistributedSampler
(the script's own, or the one DDP201 gives it in this pass), or over batches cut by rank (the script's
own cut, or DDP209's in this pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis.flow import reads
from .loader_subclass_epochs import subclass_training_loops
from .syntax import calls_in, code_of, dotted, kwarg, method_name, positional, walk


@dataclass
class ShardView:
    distributed: bool  # the script joins a process group itself (else: a script ddpfix converts)
    loops: list[cst.For]  # loops over a sharded loader, or over batches cut by rank
    cut: list[cst.For]  # ... those cut by rank
    reduced: set[str]  # names whose values reach a collective already
    totals: set[str]  # names the sharded loops accumulate with `+=`, not reduced
    bounds: frozenset[str]  # counts of the whole run's batches that loops cut by rank range over
    loader_names: set[str]  # the names every loader is bound to
    sharded_loaders: set[str]  # ... those of the sharded ones


def shard_view(ctx) -> ShardView | None:
    """The view of `ctx`'s script, or None when its ranks compute nothing over a shard of their own."""
    facts = ctx.facts
    distributed = bool(facts.launch.init_calls or facts.launch.joins_elsewhere)
    cut = _cut_by_rank(facts) if distributed else []  # hand-cut batches each rank takes its own of
    own = subclass_training_loops(facts) if distributed else []  # over a DataLoader subclass's own sampler
    if distributed and (facts.data.sampler_calls or cut):
        loaders = [loader for loader in facts.data.loaders if _sampled(facts, loader)]
        cut = cut + own
    elif not distributed and facts.training.trains and not facts.models.dp_calls:
        # a script ddpfix converts: DDP201 gives each training loader a DistributedSampler (but those it
        # reports with no fix: a sampler of its own, a batch_sampler), DDP209 cuts hand-made batches by rank
        loaders = [loader for loader, _ in facts.data.training_loaders if not _left_unsharded(ctx, loader)]
        cut = [loop for loop in ctx.plan.cut if type(loop) is cst.For]
    elif distributed and facts.training.trains and not facts.models.dp_calls:
        # a script with its own launch path that ddpfix completes: the loaders DDP201 shards in this pass
        loaders = [loader for loader, _ in facts.data.training_loaders if _sharded_in_this_pass(ctx, loader)]
        cut = [loop for loop in ctx.plan.cut if type(loop) is cst.For]
    else:
        return None
    reduced = _reduced(facts)
    loops = _sharded_loops(facts, loaders, cut)
    bounds = frozenset(code_of(stop) for loop in cut for stop in _range_stops(loop.iter))
    bounds |= {count for counts in ctx.plan.cut.values() for count in counts}
    return ShardView(
        distributed,
        loops,
        cut,
        reduced,
        _sharded_totals(facts, loops, reduced) - reduced,
        bounds,
        {loader.target for loader in facts.data.loaders if loader.target},
        {loader.target for loader in loaders if loader.target},
    )


def appended_lists(facts, view: ShardView) -> set[str]:
    """Names of lists a sharded loop appends this rank's values to (`epoch_loss.append(loss.item())`)."""
    modules = set(facts.names.aliases)
    out: set[str] = set()
    for loop in view.loops:
        for call in calls_in(loop.body):
            func = call.func
            if type(func) is not cst.Attribute or func.attr.value != "append" or type(func.value) is not cst.Name:
                continue
            read = {r for a in call.args for r in reads(a.value) if "." not in r} - modules
            if read and not read <= view.reduced:
                out.add(func.value.value)
    return out - view.reduced


MEANS = ("mean", "average", "fmean", "nanmean")  # np.mean(xs), statistics.mean(xs), np.average(xs), ...


def list_means(index, node: cst.CSTNode, lists: set[str]) -> tuple[list[tuple[cst.BaseExpression, str]], bool]:
    """The means of the `lists` read in `node` (`np.mean(xs)`, `statistics.mean(xs)`, `sum(xs) / len(xs)`),
    each with its list's name; and whether every read of those lists in `node` is in one of them."""
    out: list[tuple[cst.BaseExpression, str]] = []
    whole = True
    for n in walk(node):
        if type(n) is not cst.Name or n.value not in lists:
            continue
        call = index.parent.get(index.parent.get(n))
        func = (dotted(call.func) or "").rsplit(".", 1)[-1] if type(call) is cst.Call and len(call.args) == 1 else ""
        division = index.parent.get(call)
        if func in MEANS:
            out.append((call, n.value))
        elif (
            func == "sum"
            and type(division) is cst.BinaryOperation
            and type(division.operator) is cst.Divide
            and division.left is call
            and code_of(division.right) == f"len({n.value})"
        ):
            out.append((division, n.value))
        elif not (
            func == "len" and type(division) is cst.BinaryOperation and code_of(division.left) == f"sum({n.value})"
        ):
            whole = False
    return out, whole


def _sampler_findings(ctx, loader) -> list:
    """DDP201's findings at `loader`, so far in this pass."""
    line = ctx.facts.index.position(loader.site.node).start.line
    return [d for d in ctx.diagnostics if d.code == "DDP201" and d.line == line]


def _sharded_in_this_pass(ctx, loader) -> bool:
    """Does DDP201 give `loader` a DistributedSampler in this pass (or would, in a fix run)?"""
    return any(ctx.offers(d) for d in _sampler_findings(ctx, loader))


def _left_unsharded(ctx, loader) -> bool:
    """Does DDP201 report `loader` with no fix (to shard by hand), so that it stays whole on every rank?"""
    return any(not ctx.offers(d) for d in _sampler_findings(ctx, loader))


def reduces_on_cpu(ctx) -> bool:
    """Can the script's process group all-reduce a CPU tensor (the fix's helper reduces on the CPU)?
    Its backend is left to torch (gloo for CPU tensors, NCCL for CUDA ones), is gloo, names a CPU
    backend (`"cpu:gloo,cuda:nccl"`), or is NCCL that DDP002 makes that in this pass; a group set up
    elsewhere, or NCCL alone, cannot be told or cannot."""
    facts = ctx.facts
    if not facts.launch.init_calls:
        return False
    fixed = {d.line for d in ctx.diagnostics if d.code == "DDP002" and ctx.offers(d)}
    for call in facts.launch.init_calls:
        arg = positional(call, 0) or kwarg(call, "backend")
        if arg is None or facts.index.position(arg.value).start.line in fixed:
            continue
        text = code_of(arg.value)
        if "gloo" not in text or ("nccl" in text and "cpu:gloo" not in text):
            return False
    return True


def _range_stops(it: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The stop of each `range(start, stop, step)` a loop cut by rank iterates (`range(RANK, num_batches,
    WORLD_SIZE)[: num_batches // WORLD_SIZE]`): the whole run's count."""
    return [c.args[1].value for c in calls_in(it) if dotted(c.func) == "range" and len(c.args) >= 2]


REDUCING = ("all_reduce", "reduce", "all_gather", "all_gather_object", "gather", "gather_object", "reduce_scatter")


def _sampled(facts, loader) -> bool:
    """Does `loader` take a DistributedSampler (built in its call, or bound to the name it is given)?"""
    samplers = set(facts.data.sampler_calls)
    sampler = kwarg(loader.site.node, "sampler")
    if sampler is None or loader.target is None:
        return False
    if any(c in samplers for c in calls_in(sampler.value)):
        return True
    return any(
        dotted(target.target) == dotted(sampler.value) and any(c in samplers for c in calls_in(assign.value))
        for assign in facts.index.assigns
        for target in assign.targets
    )


def _cut_by_rank(facts) -> list[cst.For]:
    """Training loops over batches or samples cut by rank (`for i in range(RANK * bs, n, WORLD_SIZE * bs)`,
    `for x, y in samples[RANK::WORLD_SIZE]`)."""
    return [
        loop
        for loop in facts.index.loops
        if isinstance(loop, cst.For) and facts.ranks.depends_on_rank(loop.iter) and facts.training.trains_in(loop.body)
    ]


def _sharded_loops(facts, loaders, cut: list[cst.For]) -> list[cst.For]:
    """The loops over one of `loaders` (the sharded ones), and the loops `cut` by rank."""
    return list(cut) + [
        loop
        for loader in loaders
        for loop in facts.index.loops
        if isinstance(loop, cst.For) and facts.data.iterates(loop, loader)
    ]


def _sharded_totals(facts, loops: list[cst.For], reduced: set[str]) -> set[str]:
    """Names accumulated (`total += ...`, `stats[0] += ...`) inside one of the sharded `loops`; not a
    count of steps (`step += 1`: the same on every rank), nor a sum of values the ranks reduced already
    (`dist.all_reduce(loss)`, then `epoch_loss += loss.item()`)."""
    modules = set(facts.names.aliases)
    out: set[str] = set()
    for loop in loops:
        for n in walk(loop.body):
            if not isinstance(n, cst.AugAssign):
                continue
            item = isinstance(n.target, cst.Subscript)  # `stats[0] += ...`: a number added, whatever `stats` is
            target = n.target.value if item else n.target
            if isinstance(target, cst.Name) and not _concatenates(facts, n, target.value, by_binding=not item):
                read = {r for r in reads(n.value) if "." not in r} - modules
                if read and not read <= reduced:
                    out.add(target.value)
    return out


SEQUENCES = (cst.List, cst.ListComp, cst.Tuple, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)


def _concatenates(facts, aug: cst.AugAssign, name: str, by_binding: bool = True) -> bool:
    """Does `name += ...` grow a list or a string (`y_true += labels.tolist()`, `line += f"..."`) rather than
    add numbers: the value, or (`by_binding`) what the name is first bound to in the function, is a list or
    a string?"""
    value = aug.value
    if type(value) in SEQUENCES or (
        type(value) is cst.Call and (dotted(value.func) in ("list", "str") or method_name(value) == "tolist")
    ):
        return True
    if not by_binding:
        return False
    index = facts.index
    scope = index.scope_of(aug)
    return any(
        type(a.value) in SEQUENCES
        for a in index.assigns
        if index.scope_of(a) is scope and any(dotted(t.target) == name for t in a.targets)
    )


def _reduced(facts) -> set[str]:
    """Names whose values reach a collective (`dist.all_reduce(total)`, `stats = torch.tensor([correct,
    total]); dist.all_reduce(stats)`, `loss = utils.reduce_value(loss)`), or the script's own helper
    that issues one."""
    out: set[str] = set()
    for call, op in facts.ranks.collectives_in(facts.module):
        if op in REDUCING or op.endswith("()"):
            out |= {n.value for a in call.args for n in walk(a.value) if isinstance(n, cst.Name)}
    values: dict[str, list[cst.BaseExpression]] = {}
    for assign in facts.index.assigns:
        for target in assign.targets:
            if isinstance(target.target, cst.Name):
                values.setdefault(target.target.value, []).append(assign.value)
    todo = list(out)
    while todo:  # what a reduced name was built from is reduced with it
        for value in values.get(todo.pop(), []):
            for n in walk(value):
                if isinstance(n, cst.Name) and n.value not in out:
                    out.add(n.value)
                    todo.append(n.value)
    return out


__all__ = ["MEANS", "REDUCING", "ShardView", "appended_lists", "list_means", "reduces_on_cpu", "shard_view"]
