"""DDP201 across files: the training DataLoader a class of the script's own modules builds for itself,
beside the models it builds and trains (`Solver(args).train()`, with `self.data_loader =
DataLoader(dataset, batch_size=args.batch_size, shuffle=True)` in `Solver.__init__` of solver.py).

The script holds no loader to shard, so the sampler goes where the class builds it, decided at run
time like the class's wrap (module_wraps.py), and its epoch is set where the class's loop passes over it
(module_epochs.epoch_loop_planner; a `while` loop counting steps gets a count of its passes):

    sampler = DistributedSampler(dataset) if dist.is_initialized() else None
    self.data_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=(sampler is None), sampler=sampler)
    ...
    while step < self.max_iter:
        if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
            self.data_loader.sampler.set_epoch(epoch)

A plain run, or any other caller without a process group, builds no sampler and skips the call. The
loader is sharded only where the class's models are wrapped there too (and those are wrapped only
where their data is sharded): every edit is tried on the module first, and where one cannot be made
(its arguments come from a dict, it has a sampler of its own, no loop around the pass names an epoch,
the module may not be edited) none is kept and the finding says why.
"""

from __future__ import annotations

import libcst as cst

from .analysis.class_loaders import OwnLoader, own_loaders
from .module_epochs import epoch_loop_planner
from .module_trials import Edit, keep, sampler_planner, tried
from .rule import Context, Rule
from .syntax import dotted


def shard_blocker(ctx: Context, rule: Rule, summary, cls) -> str | None:
    """Why the training loaders `cls` builds for itself cannot be sharded there (None: they can, or it
    builds none: `loaders(...)` says which)."""
    if ctx.fixing and "DDP201" not in ctx.fixing:
        return "DDP201 is not fixed"
    return tried(ctx, rule, _edits(loaders(summary, cls)))[0]


def loaders(summary, cls) -> list[OwnLoader]:
    return own_loaders(summary.path, cls.name)


def shard(ctx: Context, rule: Rule, wrapped) -> None:
    """Report the training loaders each class of `ctx`'s script builds for itself beside the models it
    trains, and shard them where `wrapped(summary, cls)` says the fix wraps those models there."""
    facts = ctx.facts
    others = ctx.others
    for call, summary, cls in facts.training.models_built_in_modules:
        own = loaders(summary, cls)
        if not own or others is None:
            continue
        where = ", ".join(f"{o.reach} at {others.shown(summary.path)}:{o.line}" for o in own)
        head = f"{dotted(call.func) or cls.name}() trains on a DataLoader {cls.name} builds itself ({where}) without a DistributedSampler"
        why, places, edits = tried(ctx, rule, _edits(own))
        if why is None and not wrapped(summary, cls):
            why = f"the models of {cls.name} are not wrapped there (DDP301)"
        if why is not None:
            ctx.report(call, f"{head}: give it one there, and set its epoch (the fix does not: {why})", fix="none")
        elif ctx.report(
            call, f"{head}: the fix gives it one there when distributed, and sets its epoch ({', '.join(places)})"
        ):
            keep(ctx, rule, edits)


def _edits(own: list[OwnLoader]) -> list[Edit]:
    edits: list[Edit] = []
    for o in own:
        edits.append(
            (
                o.path,
                ("sampler", o.path, o.cls, o.line),
                lambda lines, o=o: sampler_planner(o.cls, o.line, lines, _loader),
            )
        )
        member = f"{o.cls}.{o.method}"
        edits.append(
            (
                o.path,
                ("set_epoch", o.path, member, o.reach),
                lambda lines, m=member, r=o.reach: epoch_loop_planner(m, r, lines),
            )
        )
    return edits


def _loader(call: cst.Call) -> bool:
    return (dotted(call.func) or "").split(".")[-1] == "DataLoader"


__all__ = ["loaders", "shard", "shard_blocker"]
