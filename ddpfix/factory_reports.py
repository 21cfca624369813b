"""What ddpfix reports about objects a config names by class (analysis/config_factory.py): a training
loader or a trainer built by `init_obj(module, config[...], ...)`, a factory of the script's own
modules that calls `getattr(module, cfg["type"])(...)`. The class is chosen at run time; each finding
names the getattr and the classes the module offers, with their files and lines, and its fix edits
every class the factory can pick that needs it (factory_edits.py), or, where one cannot be edited,
none, and the rewrite is incomplete there."""

from __future__ import annotations

import libcst as cst

from .analysis.config_factory import FactoryCall, findings, shown_finding, state_dicts
from .analysis.config_file import configured
from .analysis.factory_classes import loader_builds
from .analysis.local_writes import called
from .factory_edits import sampler_edits, unwrap_edits
from .module_guards import MakePlanner, Match, by_path, guard_statements, keep_guards, why_not_guarded
from .module_trials import keep, tried
from .rule import NONE, Context
from .syntax import assign_targets, dotted

EVAL_WORDS = ("val", "test", "eval")


def trainer_calls(facts) -> list[FactoryCall]:
    """Factory calls handed a model the script trains (`init_obj(module_trainer, cfg, model, ...)`)."""
    trained = {m.handle for m in facts.models.trained}
    return [f for f in facts.factory_calls if any(dotted(a.value) in trained for a in f.call.args)]


def report_factory_loaders(ctx: Context, code_message: str) -> None:
    """DDP201 for `loader = init_obj(module_data, cfg)`, a DataLoader class of the config's choice, handed
    to a trainer built the same way (not as its validation or test loader)."""
    facts = ctx.facts
    assert ctx.rule is not None
    trainers = trainer_calls(facts)
    for fc in facts.factory_calls:
        loaders = [c for c in fc.classes if fc.is_loader(c)]
        targets = assign_targets(facts.index.site(fc.call).stmt)
        handed = [(t, a) for t in trainers for a in t.call.args if targets and _hands_for_training(a, targets[0])]
        if not loaders or not handed or all(_sampled(c) for c in loaders):
            continue
        classes = _classes(facts, fc, loaders)
        head = (
            f"{code_message}: {targets[0]} is built by {called(fc.call)}() from the class the config names "
            f"(getattr at {fc.where}: {classes})"
        )
        why, edits = sampler_edits(loaders, handed)
        places: list[str] = []
        if why is None:
            why, places, edits = tried(ctx, ctx.rule, edits)
        if why is not None:
            ctx.report(
                fc.call,
                f"{head}, so no DistributedSampler can be added from here: give that class one "
                "(DistributedSampler(dataset) when torch.distributed is initialized) and set its epoch there "
                f"(the fix would edit it, and does not: {why})",
                fix=NONE,
            )
        elif ctx.report(
            fc.call,
            f"{head}: the fix gives each such class a DistributedSampler when torch.distributed is initialized "
            f"(shuffle moved into it) and sets its epoch in each trainer class handed it (at {', '.join(places[:4])})",
        ):
            keep(ctx, ctx.rule, edits)


def report_factory_writes(
    ctx: Context, kind: str, what: str, harm: str, match: Match, make: MakePlanner | None = None
) -> None:
    """DDP401/DDP406 for a trainer of the config's choice whose methods run `what` on every rank: each
    statement found, in every class the factory can pick, guarded to rank 0 (module_guards.py)."""
    facts = ctx.facts
    assert ctx.rule is not None
    for fc in trainer_calls(facts):
        if facts.ranks.rank_guarded(fc.call):
            continue
        found = sorted({f for c in fc.classes for f in findings(c, kind)}, key=lambda f: (str(f.path), f.line))
        if not found:
            continue
        where = ", ".join(shown_finding(facts.modules.folder, f) for f in found[:3])
        head = (
            f"{called(fc.call)}() builds the trainer the config names ({_picks(facts, fc)}getattr at {fc.where}), which runs {what} "
            f"on every rank ({where}): {harm}"
        )
        lines = by_path(found)
        made = make or guard_statements
        why = why_not_guarded(ctx, ctx.rule, lines, what, match, [], made)
        if why is not None:
            ctx.report(
                fc.call,
                f"{head}; guard it to rank 0 there (the fix would edit that file, and does not: {why})",
                fix=NONE,
            )
        elif ctx.report(fc.call, f"{head}; the fix guards it to rank 0 there"):
            keep_guards(ctx, ctx.rule, lines, what, match, made)


def report_factory_state_dicts(ctx: Context) -> None:
    """DDP402 for a trainer of the config's choice handed the DDP wrapper, whose methods save
    `self.model.state_dict()`: the wrapper's 'module.' keys; the fix unwraps it in every class the
    wrapper reaches (module_unwrap.py)."""
    facts = ctx.facts
    assert ctx.rule is not None
    wrapped = set(ctx.plan.wraps) | {m.handle for m in facts.models.trained if facts.models.wrapped(m) is not None}
    for fc in trainer_calls(facts):
        handed = [a for a in fc.call.args if dotted(a.value) in wrapped]
        if not handed:
            continue
        saves = sorted({save for c in fc.classes for save in state_dicts(c)})
        if not saves:
            continue
        folder = facts.modules.folder
        at = [shown_finding(folder, _place(path, line)) for path, _attr, line in saves]
        where = ", ".join(f"{attr}.state_dict() at {shown}" for (_p, attr, _n), shown in list(zip(saves, at))[:3])
        head = (
            f"{called(fc.call)}() hands {dotted(handed[0].value)}, the DDP wrapper, to the trainer the config names "
            f"({_picks(facts, fc)}getattr at {fc.where}), which saves {where}: 'module.' keys"
        )
        why, edits = unwrap_edits(ctx.rule, fc, handed[0])
        places: list[str] = []
        if why is None:
            why, places, edits = tried(ctx, ctx.rule, edits)
        missed = [shown for shown in at if shown not in places]
        if why is None and missed:
            why = f"it does not find which attribute of the trainer keeps the model at {missed[0]}"
        if why is not None:
            ctx.report(
                fc.call,
                f'{head}; save getattr(..., "module", ...).state_dict() there (the fix would edit it, and does not: '
                f"{why})",
                fix=NONE,
            )
        elif ctx.report(fc.call, f'{head}; the fix saves getattr(..., "module", ...).state_dict() there'):
            keep(ctx, ctx.rule, edits)


def _classes(facts, fc: FactoryCall, classes: list) -> str:
    """The classes a finding names, the one the script's default config file names first, labelled."""
    named = configured(facts, fc)
    first = sorted(classes, key=lambda c: named is None or c.name != named[0])
    return ", ".join(
        (f"{named[1]}'s " if named is not None and c.name == named[0] else "")
        + f"{c.name} at {shown_finding(facts.modules.folder, _at(c))}"
        for c in first[:3]
    )


def _picks(facts, fc: FactoryCall) -> str:
    named = configured(facts, fc)
    return f"{named[0]} in {named[1]}; " if named is not None else ""


def _place(path, line):
    from .analysis.module_summary import Finding

    return Finding("", path, line, "")


def _hands_for_training(arg: cst.Arg, name: str) -> bool:
    return dotted(arg.value) == name and not (
        arg.keyword is not None and any(w in arg.keyword.value.lower() for w in EVAL_WORDS)
    )


def _sampled(cls) -> bool:
    """Does the class build its loader with a sampler of its own (every class of its chain that builds one)?"""
    builds = loader_builds(cls)
    return builds is not None and all(b.sampled for b in builds)


def _at(cls):
    from .analysis.module_summary import Finding

    return Finding("", cls.summary.path, cls.line, cls.name)


__all__ = ["report_factory_loaders", "report_factory_state_dicts", "report_factory_writes", "trainer_calls"]
