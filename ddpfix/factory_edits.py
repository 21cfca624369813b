"""The edits that fix what factory_reports.py finds in the classes a config names
(`init_obj(module, config["..."], ...)` returning `getattr(module, cfg["type"])(...)`).

Which class the factory builds is decided at run time, but the classes the module offers are known,
and every edit here is decided at run time too, so the fix edits each class the factory can pick
that needs it, whichever the config names:

- DDP201: each DataLoader class of the module builds its loader with
  `sampler = DistributedSampler(dataset, shuffle=shuffle) if dist.is_initialized() else None`
  (sampler_edit.add_sampler, `shuffle` moved into it), and each trainer class handed that loader sets
  its sampler's epoch where the epoch number and the loader meet (module_epochs.through_loader): in
  the loop of the method that iterates it, or first in the method an epoch loop of its chain calls
  with the epoch (`for epoch in ...: self._train_epoch(epoch)` in a base class of another file);
- DDP402: each `self.model.state_dict()` of the classes the DDP wrapper reaches becomes
  `getattr(self.model, "module", self.model).state_dict()` (module_unwrap.unwrap_planner);
- DDP401/DDP406: saves and prints guarded to rank 0 (module_guards, by factory_reports.py).

A plain run builds no sampler, skips the set_epoch and saves and prints as before. Each finding is
fixed whole or not at all: every edit it needs is tried on the module first (ModuleEdits.trial), and
where one cannot be made (a class builds its loader another way, keeps no loader, has no epoch to
pass, the module may not be edited) none is kept and the finding says why.
"""

from __future__ import annotations

import libcst as cst

from .analysis.config_factory import FactoryCall, FactoryClass
from .analysis.factory_classes import accepts, epoch_meeting, kept, loader_builds, reaches, sets_epoch
from .module_edits import Planner
from .module_epochs import epoch_loop_planner, function_of, through_loader
from .module_trials import Edit, sampler_planner
from .module_unwrap import unwrap_planner
from .rule import Context, Order, Rule
from .syntax import dotted, strip_docstring


def sampler_edits(loaders: list[FactoryClass], handed: list[tuple[FactoryCall, cst.Arg]]) -> tuple[str | None, list]:
    """The edits that shard the loader of the classes `loaders` and set its epoch in the trainers of
    the factory calls `handed` it: why not, or None and the edits."""
    edits: list[Edit] = []
    for cls in loaders:
        builds = loader_builds(cls)
        if builds is None:
            return f"{cls.name} builds its loader without super().__init__(dataset, ...) of DataLoader", []
        for b in builds:
            if not b.sampled:
                edits.append(
                    (b.path, ("sampler", b.path, b.cls), lambda lines, b=b: _sampler_planner(b.cls, b.line, lines))
                )
    for trainer, arg in handed:
        slot = trainer.slot(arg)
        if slot is None:
            return f"{trainer.where} does not hand the loader on as it is", []
        for cls in trainer.classes:
            if not accepts(cls, slot) or sets_epoch(cls):
                continue  # it cannot be built with the loader there, or sets its epoch itself
            attrs = kept(cls, slot)
            if len(attrs) != 1:
                return f"{cls.name} does not keep the loader as one attribute of its own", []
            attr = next(iter(attrs))
            meet = epoch_meeting(cls, attr)
            if meet is None:
                return f"{cls.name} has no epoch loop around its pass over {attr}", []
            if meet.epoch is None:
                member = f"{meet.cls}.{meet.method}"
                edits.append(
                    (
                        meet.path,
                        ("set_epoch", meet.path, member),
                        lambda lines, m=member, a=attr: epoch_loop_planner(m, a, lines),
                    )
                )
            else:
                key = ("set_epoch", meet.path, meet.cls, meet.method)
                edits.append(
                    (meet.path, key, lambda lines, m=meet, a=attr: _first_in(m.cls, m.method, m.epoch, a, lines))
                )
    return None, edits


def unwrap_edits(rule: Rule, trainer: FactoryCall, arg: cst.Arg) -> tuple[str | None, list]:
    """The edits that save the plain module's state_dict() in each class the wrapper `arg` reaches."""
    slot = trainer.slot(arg)
    if slot is None:
        return f"{trainer.where} does not hand the model on as it is", []
    edits: list[Edit] = []
    for cls in trainer.classes:
        if not accepts(cls, slot):
            continue
        reached = reaches(cls, slot)
        if reached is None:
            return f"{cls.name} hands the model on to its base classes in a way the fix does not follow", []
        for path, name, at in reached:
            edits.append((path, (rule.code, path, name), lambda lines, n=name, s=at: unwrap_planner(n, s, lines)))
    return None, edits


def _sampler_planner(cls_name: str, line: int, lines: list[int]) -> Planner:
    """A DistributedSampler for the loader class `cls_name` builds at `line` (its super().__init__),
    when torch.distributed is initialized."""
    return sampler_planner(cls_name, line, lines, _super_init)


def _first_in(cls_name: str, method: str, epoch: str, reach: str, lines: list[int]) -> Planner:
    """set_epoch(`epoch`) through the loader `reach` first in `cls_name.method` (after its docstring)."""

    def plan(ctx: Context) -> str | None:
        func = function_of(ctx.facts.module, f"{cls_name}.{method}")
        if func is None or not isinstance(func.body, cst.IndentedBlock):
            return f"{cls_name}.{method} is not a method of a class at the top level of the module"
        stmts = through_loader(ctx, reach, epoch)
        body = func.body.body
        at = strip_docstring(body)
        if at < len(body):
            ctx.plan.insert_before(body[at], stmts, order=Order.SET_EPOCH)
        else:
            ctx.plan.prepend(func.body, stmts, order=Order.SET_EPOCH)
        lines.append(ctx.facts.index.position(func).start.line)
        return None

    return plan


def _super_init(call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call)
        and dotted(func.value.func) == "super"
    )


__all__ = ["sampler_edits", "unwrap_edits"]
