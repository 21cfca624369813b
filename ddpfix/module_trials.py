"""Edits of the script's own modules that a fix makes whole or not at all: each is tried on its module
first (ModuleEdits.trial), and only when every one holds are they kept, each once (factory_edits.py,
class_loaders.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst

from .analysis import Loader
from .local_samplers import replacement_stream, seed_per_rank
from .module_edits import Planner
from .rule import Context, Rule
from .sampler_edit import add_sampler, is_iterable_dataset
from .syntax import kwarg, positional

Edit = tuple[Path, tuple, Callable[[list[int]], Planner]]  # module, key (kept once), planner collecting lines


def tried(ctx: Context, rule: Rule, edits: list[Edit]) -> tuple[str | None, list[str], list[Edit]]:
    """Why the edits cannot all be made (None: each was tried and holds), where they go, and those
    that change something (an unwrap finds nothing to change in a class that saves no state)."""
    others = ctx.others
    if others is None:
        return "cross-file edits are off", [], []
    places: list[str] = []
    changing: list[Edit] = []
    for edit in edits:
        path, _key, make = edit
        lines: list[int] = []
        why = others.why_not(path) or others.trial(path, rule, make(lines))
        if why is not None:
            return why, [], []
        places += [f"{others.shown(path)}:{n}" for n in lines]
        changing += [edit] if lines else []
    return None, places, changing


def keep(ctx: Context, rule: Rule, edits: list[Edit]) -> None:
    """Make the edits `tried` allowed part of this pass's fix, each once."""
    others = ctx.others
    assert others is not None
    for path, key, make in edits:
        if key not in others.planned:
            others.planned.add(key)
            others.keep(path, rule, make([]))


def sampler_planner(cls_name: str, line: int, lines: list[int], builds: Callable[[cst.Call], bool]) -> Planner:
    """A DistributedSampler for the loader a method of the class `cls_name` (or the module-level function
    `cls_name`: ClassSummary.function) builds at `line` (the call
    there that `builds` picks), when torch.distributed is initialized; for a loader drawing with
    replacement (`sampler=RandomSampler(ds, replacement=True, num_samples=n)`), a generator seeded per
    rank instead."""

    def plan(ctx: Context) -> str | None:
        facts = ctx.facts
        call = next((c for c in facts.index.calls if builds(c) and facts.index.position(c).start.line == line), None)
        site = facts.index.site(call) if call is not None else None
        owner = site.cls or site.func if site is not None else None  # a class, or a module-level function
        if call is None or owner is None or owner.name.value != cls_name:
            return f"{cls_name} does not build its loader at line {line}"
        if any(a.star for a in call.args):
            return f"the loader of {cls_name} (line {line}) takes its arguments from a dict"
        if kwarg(call, "batch_sampler") is not None:
            return f"the loader of {cls_name} (line {line}) has a batch_sampler"
        sampler = kwarg(call, "sampler")
        if sampler is not None and not replacement_stream(sampler.value):
            return f"the loader of {cls_name} (line {line}) has a sampler of its own"
        ds_arg = positional(call, 0) or kwarg(call, "dataset")
        if ds_arg is None or is_iterable_dataset(facts, ds_arg.value):
            return f"the loader of {cls_name} (line {line}) reads an IterableDataset"
        ctx.joins_elsewhere()  # the module does not know how its caller launched: ask the process group
        if sampler is not None:  # an endless stream drawn with replacement: one of its own per rank
            seed_per_rank(ctx, sampler.value)  # type: ignore[arg-type]
            lines.append(line)
            return None
        add_sampler(ctx, Loader(site, None), ds_arg, flag=ctx.env("DISTRIBUTED"))
        lines.append(line)
        return None

    return plan


__all__ = ["Edit", "keep", "sampler_planner", "tried"]
