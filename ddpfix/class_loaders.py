"""DDP201 across files: the training DataLoader a class of the script's own modules builds for itself,
beside the models it builds and trains (`Solver(args).train()`, with `self.data_loader =
DataLoader(dataset, batch_size=args.batch_size, shuffle=True)` in `Solver.__init__` of solver.py).

The same holds for a class the script hands the model it trains (`Trainer(model, dataset,
config).run()`, the loader built in `run()`): the script wraps the model, the class shards its loader.
The script holds no loader to shard, so the sampler goes where the class builds it, decided at run
time like the class's wrap (module_wraps.py), and its epoch is set where the class's loop passes over it
(module_epochs.epoch_loop_planner; a `while` loop counting steps gets a count of its passes):

    sampler = DistributedSampler(dataset) if dist.is_initialized() else None
    self.data_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=(sampler is None), sampler=sampler)
    ...
    while step < self.max_iter:
        if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
            self.data_loader.sampler.set_epoch(epoch)

A loader drawing an endless stream with replacement (`sampler=RandomSampler(ds, replacement=True,
num_samples=n)`) gets a generator seeded per rank instead, and no epoch. A loader a function of the
script's modules builds for the class (`self.loader = build_loader(dataset, 8)`) is sharded where that
function builds it (class_factory_loaders.py); one the fix does not follow is reported without a fix,
so the conversion says it is incomplete rather than done.

A plain run, or any other caller without a process group, builds no sampler and skips the call. The
loader is sharded only where the class's models are wrapped there too (and those are wrapped only
where their data is sharded): every edit is tried on the module first, and where one cannot be made
(its arguments come from a dict, it has a sampler of its own, no loop around the pass names an epoch,
the module may not be edited) none is kept and the finding says why.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from .analysis.class_loaders import OwnLoader, foreign_loaders, own_loaders
from .analysis.local_writes import shown
from .analysis.module_summary import Finding
from .class_factory_loaders import factory_edits, factory_loaders
from .loader_factory import PARAM
from .module_epochs import epoch_loop_planner
from .module_trials import Edit, keep, sampler_planner, tried
from .rule import Context, Rule
from .syntax import dotted


def shard_blocker(ctx: Context, rule: Rule, summary, cls) -> str | None:
    """Why the training loaders `cls` builds for itself, or a function builds for it, cannot be sharded
    there (None: they can, or there are none: `trains_on_loaders(...)` says which)."""
    if ctx.fixing and "DDP201" not in ctx.fixing:
        return "DDP201 is not fixed"
    own = loaders(summary, cls)
    return tried(ctx, rule, _edits(own) if own else factory_edits(ctx, factory_loaders(ctx, summary, cls.name)))[0]


def loaders(summary, cls) -> list[OwnLoader]:
    return own_loaders(summary.path, cls.name, cls.function)


def trains_on_loaders(ctx: Context, summary, cls) -> bool:
    """Does `cls` train on DataLoaders the fix can find where they are built: its own, or one a function
    of the script's modules builds for it (class_factory_loaders.py)?"""
    return bool(loaders(summary, cls) or factory_loaders(ctx, summary, cls.name))


def shard(ctx: Context, rule: Rule, unwrapped: Callable[[object, object], str | None]) -> None:
    """Report the training loaders each class of `ctx`'s script's modules builds for itself, where the
    script trains through that class (the models it builds, or the model the script hands it), and
    shard them where `unwrapped(summary, cls)` finds no reason the models it trains stay unwrapped."""
    facts = ctx.facts
    for call, summary, cls in _owners(facts):
        own = loaders(summary, cls) if cls is not None else []
        if not own:
            if cls is not None and not cls.function:
                _shard_foreign(ctx, rule, call, summary, cls, unwrapped)
            continue
        where = ", ".join(f"{o.reach} at {shown(facts.modules, Finding('', summary.path, o.line, ''))}" for o in own)
        builder = "it" if cls.function else cls.name
        owner = f"{dotted(call.func) or cls.name}() trains on a DataLoader {builder} builds itself ({where})"
        if all(o.stream for o in own):
            head = f"{owner} that draws with replacement, the same samples on every rank"
            remedy, done = "seed its generator per rank there", "the fix gives each rank its own random stream there"
        else:
            head = f"{owner} without a DistributedSampler"
            remedy, done = (
                "give it one there, and set its epoch",
                "the fix gives it one there when distributed, and sets its epoch",
            )
        why, places, edits = tried(ctx, rule, _edits(own))
        why = why or unwrapped(summary, cls)
        if why is not None:
            ctx.report(call, f"{head}: {remedy} (the fix does not: {why})", fix="none")
        elif ctx.report(call, f"{head}: {done} ({', '.join(places)})"):
            keep(ctx, rule, edits)


def _owners(facts):
    """(call, module summary, class summary or None) for each call of the script that trains through a
    class of its modules (`Solver(args).train()`), and (call, module summary, owner record) for each call
    of a module-level function that builds and trains its own model (`fit(epochs)`)."""
    for call, summary, method in facts.training.trained_in_modules:
        yield call, summary, summary.classes.get(method.split(".")[0])
    for call, summary, owner in facts.training.models_built_in_modules:
        if owner.function:
            yield call, summary, owner


def _shard_foreign(ctx: Context, rule: Rule, call: cst.Call, summary, cls, unwrapped) -> None:
    """A loader the class trains on that another function builds for it (`self.loader =
    build_loader(dataset, 8)`): sharded where that function builds it (class_factory_loaders.py), or,
    where the fix does not reach, reported so the conversion is not complete (invariant 3)."""
    made = factory_loaders(ctx, summary, cls.name)
    reached = {f.found for f in made}
    if made:
        modules = ctx.facts.modules
        head = ", ".join(
            f"{f.found.reach}, a DataLoader {f.found.builder}() builds for {cls.name} "
            f"({shown(modules, Finding('', f.path, f.found.line, ''))}) without a DistributedSampler"
            for f in made
        )
        head = f"{dotted(call.func) or cls.name}() trains on {head}"
        why, places, edits = tried(ctx, rule, factory_edits(ctx, made))
        why = why or unwrapped(summary, cls)
        if why is not None:
            ctx.report(call, f"{head}: give it one there, and set its epoch (the fix does not: {why})", fix="none")
        elif ctx.report(
            call,
            f"{head}: the fix gives {made[0].found.builder}() a parameter {made[0].built.gate or PARAM}=False that "
            f"adds one, passes it when distributed, and sets its epoch ({', '.join(places)})",
        ):
            keep(ctx, rule, edits)
    for found in foreign_loaders(summary, cls.name):
        if found in reached:
            continue
        where = shown(ctx.facts.modules, Finding("", summary.path, found.line, ""))
        ctx.report(
            call,
            f"{dotted(call.func) or cls.name}() trains on {found.reach}, a DataLoader {found.builder}() builds for "
            f"{cls.name} ({where}) with no DistributedSampler, where the fix does not reach: give it one there "
            "(sampler=DistributedSampler(dataset) when distributed, shuffle moved into it) and set its epoch "
            "each epoch",
            fix="none",
        )


def _edits(own: list[OwnLoader]) -> list[Edit]:
    edits: list[Edit] = []
    for o in own:
        edits.append(
            (
                o.path,
                ("sampler", o.path, o.cls, o.line),
                lambda lines, o=o: sampler_planner(o.cls, o.line, lines, builds_loader),
            )
        )
        if o.stream:
            continue  # an endless stream has no epochs to set
        edits.append(
            (
                o.path,
                ("set_epoch", o.path, o.member, o.reach),
                lambda lines, m=o.member, r=o.reach: epoch_loop_planner(m, r, lines),
            )
        )
    return edits


def builds_loader(call: cst.Call) -> bool:
    """`DataLoader(...)`, however the module names the class."""
    return (dotted(call.func) or "").split(".")[-1] == "DataLoader"


__all__ = ["builds_loader", "loaders", "shard", "shard_blocker", "trains_on_loaders"]
