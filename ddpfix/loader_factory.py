"""DDP201 across files: a training DataLoader built by a factory function of one of the script's own
modules (`train_loader, val_loader = build_loaders(batch_size=9)`, `build_loaders` in data_utils.py).

The factory gets a keyword parameter `distributed=False`; inside it, when `distributed` is true, the
loader the script trains on gets a DistributedSampler, with `shuffle` moved into it (the same edit as
in the script: sampler_edit.add_sampler). The script's calls that train on that loader pass
`distributed=DISTRIBUTED`, and its epoch loop sets the sampler's epoch through the loader. Every other
caller keeps what it had (another entry point, a validation loader of the same factory): the module
works for each of them, distributed or not. A factory that already takes such a parameter
(`sampler=... if distributed else None`) only needs the script to pass it.

The module is edited only where `ModuleEdits` allows it (inside the script's folder, not installed,
writable) and where the edit is safe to make: the factory is a function at the module's top level that
builds the loader itself from plain arguments (no `**kwargs` dict, no `batch_sampler`, no
IterableDataset), does not use the name `distributed` already, and is not run by the module itself as
a program. Otherwise the finding is reported without a fix, saying why.
"""

from __future__ import annotations

import libcst as cst

from .analysis import Loader
from .edits import with_kwarg
from .module_edits import shown
from .rule import Context, Rule
from .sampler_edit import add_sampler, add_set_epoch, is_iterable_dataset
from .syntax import dotted, kwarg, positional, walk

PARAM = "distributed"
HAND_FIX = (
    "give that DataLoader sampler=DistributedSampler(dataset) when distributed (shuffle moved into it) and call "
    "set_epoch(epoch) at the start of each epoch"
)


def shard_factories(ctx: Context, rule: Rule, unwrapped: str | None = None) -> None:
    """Report (and fix, where allowed) each training loader a factory of the script's modules builds;
    `unwrapped`: why the models it feeds stay unwrapped and where to wrap them (module_wraps.withheld,
    unseen_models.why_no_wrap), so no sampler goes in."""
    facts = ctx.facts
    groups: dict[tuple, list] = {}
    for foreign, loop in facts.data.foreign_loaders():
        built = foreign.built
        if built.sampled and (built.gate is None or _passes(foreign.call, built.gate)):
            continue  # it has its sampler, or gets one when asked and this call asks
        groups.setdefault((foreign.path, foreign.func), []).append((foreign, loop))
    reported: set[int] = set()
    for (path, func), members in groups.items():
        lines = sorted({f.built.line for f, _ in members if not f.built.sampled})
        where_is = shown(facts.modules.folder, path)
        why = _why_not(ctx, rule, path, func, lines) if lines and unwrapped is None else None
        kept = False
        for foreign, loop in members:
            where = f"{where_is}:{foreign.built.line}"
            if unwrapped is not None:
                ctx.report(
                    foreign.call,
                    f"training DataLoader without a DistributedSampler, built by {func}() at {where}; {unwrapped}, "
                    "then shard the data",
                    fix="none",
                )
                continue
            if why is not None:
                if id(foreign.call) not in reported:
                    ctx.report(
                        foreign.call,
                        f"training DataLoader without a DistributedSampler, built by {func}() at {where}: the fix "
                        f"would edit that file, and does not ({why}); {HAND_FIX}",
                        fix="none",
                    )
                reported.add(id(foreign.call))
                continue
            gate = foreign.built.gate or PARAM
            if foreign.built.sampled:
                message = (
                    f"training DataLoader without a DistributedSampler: {func}() ({where}) gives it one only when "
                    f"called with {gate}=True"
                )
            else:
                message = (
                    f"training DataLoader without a DistributedSampler, built by {func}() at {where}: the fix gives "
                    f"{func}() a parameter {PARAM}=False that adds one there, and passes {PARAM}=DISTRIBUTED here"
                )
            first = id(foreign.call) not in reported
            reported.add(id(foreign.call))
            if (first and not ctx.report(foreign.call, message)) or (not first and not _fixing(ctx)):
                continue
            if lines and not kept:
                assert ctx.others is not None
                ctx.others.keep(path, rule, factory_planner(path, func, lines, where_is))
                kept = True
            if first:
                flag = cst.parse_expression(ctx.env("DISTRIBUTED"))
                ctx.plan.replace(foreign.call, lambda node, g=gate, v=flag: with_kwarg(node, g, v))
            handle = Loader(facts.index.site(foreign.call), foreign.target, foreign.binding)
            add_set_epoch(ctx, handle, loop, None)


def _fixing(ctx: Context) -> bool:
    return ctx.rule is not None and ctx.rule.code in ctx.fixing


def _passes(call: cst.Call, gate: str) -> bool:
    """Does the factory call pass `gate` (or may it, through `*args` / `**kwargs`)?"""
    return kwarg(call, gate) is not None or any(a.star for a in call.args)


def _why_not(ctx: Context, rule: Rule, path, func: str, lines: list[int]) -> str | None:
    """Why the factory's module is not edited, or None when the edit is made and checked."""
    others = ctx.others
    if others is None:
        return "cross-file edits are off"
    why = others.why_not(path)
    if why is not None:
        return why
    return others.trial(path, rule, factory_planner(path, func, lines, others.shown(path)))


def factory_planner(path, func: str, lines: list[int], shown: str):
    """The edit of the factory `func` of the module, on that module's own context: why not, or None."""

    def plan(ctx: Context) -> str | None:
        facts = ctx.facts
        node = next((s for s in facts.module.body if isinstance(s, cst.FunctionDef) and s.name.value == func), None)
        if node is None:
            return f"{func}() is not a function at the top level of {shown}"
        if _uses_name(node, PARAM):
            return f"{func}() already uses the name {PARAM}"
        if facts.launch.is_program and any(dotted(c.func) == func for c in facts.index.calls):
            return f"{shown} runs {func}() itself as a program: convert it on its own first"
        found: dict[int, Loader] = {}
        for loader in facts.data.loaders:
            line = facts.index.position(loader.site.node).start.line
            if line in lines and line not in found and facts.index.enclosing(loader.site.node, cst.FunctionDef) is node:
                found[line] = loader
        if sorted(found) != lines:
            return f"the DataLoader at {shown}:{lines[0]} is built where the fix cannot follow it"
        for line, loader in sorted(found.items()):
            call = loader.site.node
            assert isinstance(call, cst.Call)
            ds_arg = positional(call, 0) or kwarg(call, "dataset")
            if any(a.star for a in call.args):
                return f"the DataLoader at {shown}:{line} takes its arguments from a dict"
            if kwarg(call, "batch_sampler") is not None:
                return f"the DataLoader at {shown}:{line} has a batch_sampler"
            if ds_arg is None or is_iterable_dataset(facts, ds_arg.value):
                return f"the DataLoader at {shown}:{line} reads an IterableDataset"
            add_sampler(ctx, loader, ds_arg, flag=PARAM)
        ctx.plan.replace(node.params, _with_param)
        return None

    return plan


def _uses_name(func: cst.FunctionDef, name: str) -> bool:
    attrs = {id(n.attr) for n in walk(func) if isinstance(n, cst.Attribute)}
    keywords = {id(n.keyword) for n in walk(func) if isinstance(n, cst.Arg) and n.keyword is not None}
    return any(
        isinstance(n, cst.Name) and n.value == name and id(n) not in attrs and id(n) not in keywords for n in walk(func)
    )


def _with_param(params: cst.Parameters) -> cst.Parameters:
    """`params` with `distributed=False` last: keyword-only after `*args` (or other keyword-only
    parameters), else before `**kwargs`; a trailing comma and one-per-line layout are kept."""
    new = cst.Param(
        cst.Name(PARAM),
        default=cst.Name("False"),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if isinstance(params.star_arg, cst.Param) or params.kwonly_params:
        return params.with_changes(kwonly_params=_append(list(params.kwonly_params), new))
    return params.with_changes(params=_append(list(params.params), new))


def _append(items: list[cst.Param], new: cst.Param) -> list[cst.Param]:
    if not items:
        return [new]
    last = items[-1]
    if isinstance(last.comma, cst.Comma):  # a trailing comma: the new one takes it, and the layout between
        between = items[-2].comma if len(items) > 1 and isinstance(items[-2].comma, cst.Comma) else None
        items[-1] = last.with_changes(comma=between or cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = new.with_changes(comma=last.comma)
    return [*items, new]


__all__ = ["PARAM", "factory_planner", "shard_factories"]
