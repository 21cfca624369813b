"""What ddpfix reports about objects a config names by class (analysis/config_factory.py): a training
loader or a trainer built by `init_obj(module, config[...], ...)`, a factory of the script's own
modules that calls `getattr(module, cfg["type"])(...)`. The class is chosen at run time, so these
findings have no fix; each names the getattr and the classes the module offers, with their files and
lines, and the rewrite is incomplete there."""

from __future__ import annotations

import libcst as cst

from .analysis.config_factory import FactoryCall, factory_calls, findings, shown_finding, state_dicts
from .analysis.local_writes import called
from .rule import NONE, Context
from .syntax import assign_targets, dotted

EVAL_WORDS = ("val", "test", "eval")


def trainer_calls(facts) -> list[FactoryCall]:
    """Factory calls handed a model the script trains (`init_obj(module_trainer, cfg, model, ...)`)."""
    trained = {m.handle for m in facts.models.trained}
    return [f for f in factory_calls(facts) if any(dotted(a.value) in trained for a in f.call.args)]


def report_factory_loaders(ctx: Context, code_message: str) -> None:
    """DDP201 for `loader = init_obj(module_data, cfg)`, a DataLoader class of the config's choice, handed
    to a trainer built the same way (not as its validation or test loader)."""
    facts = ctx.facts
    trainers = trainer_calls(facts)
    for fc in factory_calls(facts):
        loaders = [c for c in fc.classes if fc.is_loader(c)]
        targets = assign_targets(facts.index.site(fc.call).stmt)
        if not loaders or not targets or not any(_hands_for_training(t.call, targets[0]) for t in trainers):
            continue
        classes = ", ".join(f"{c.name} at {shown_finding(facts.modules.folder, _at(c))}" for c in loaders[:3])
        ctx.report(
            fc.call,
            f"{code_message}: {targets[0]} is built by {called(fc.call)}() from the class the config names "
            f"(getattr at {fc.where}: {classes}), so no DistributedSampler can be added from here: give that "
            "class one (DistributedSampler(dataset) when torch.distributed is initialized) and set its epoch there",
            fix=NONE,
        )


def report_factory_writes(ctx: Context, kind: str, what: str, harm: str) -> None:
    """DDP401/DDP406 for a trainer of the config's choice whose methods run `what` on every rank."""
    facts = ctx.facts
    for fc in trainer_calls(facts):
        if facts.ranks.rank_guarded(fc.call):
            continue
        found = sorted({f for c in fc.classes for f in findings(c, kind)}, key=lambda f: (str(f.path), f.line))
        if not found:
            continue
        where = ", ".join(shown_finding(facts.modules.folder, f) for f in found[:3])
        ctx.report(
            fc.call,
            f"{called(fc.call)}() builds the trainer the config names (getattr at {fc.where}), which runs {what} "
            f"on every rank ({where}): {harm}; guard it to rank 0 there",
            fix=NONE,
        )


def report_factory_state_dicts(ctx: Context) -> None:
    """DDP402 for a trainer of the config's choice handed the DDP wrapper, whose methods save
    `self.model.state_dict()`: the wrapper's 'module.' keys."""
    facts = ctx.facts
    wrapped = set(ctx.plan.wraps) | {m.handle for m in facts.models.trained if facts.models.wrapped(m) is not None}
    for fc in trainer_calls(facts):
        handed = [dotted(a.value) for a in fc.call.args if dotted(a.value) in wrapped]
        if not handed:
            continue
        saves = sorted({save for c in fc.classes for save in state_dicts(c)})
        if not saves:
            continue
        folder = facts.modules.folder
        where = ", ".join(
            f"{attr}.state_dict() at {shown_finding(folder, _place(path, line))}" for path, attr, line in saves[:3]
        )
        ctx.report(
            fc.call,
            f"{called(fc.call)}() hands {handed[0]}, the DDP wrapper, to the trainer the config names (getattr at "
            f"{fc.where}), which saves {where}: 'module.' keys; save getattr(..., \"module\", ...).state_dict() there",
            fix=NONE,
        )


def _place(path, line):
    from .analysis.module_summary import Finding

    return Finding("", path, line, "")


def _hands_for_training(call: cst.Call, name: str) -> bool:
    return any(
        dotted(a.value) == name
        and not (a.keyword is not None and any(w in a.keyword.value.lower() for w in EVAL_WORDS))
        for a in call.args
    )


def _at(cls):
    from .analysis.module_summary import Finding

    return Finding("", cls.summary.path, cls.line, cls.name)


__all__ = ["report_factory_loaders", "report_factory_state_dicts", "report_factory_writes", "trainer_calls"]
