"""DDP201 and DDP204 across files: a training loader handed to a function or method of the script's
own modules that runs the epochs over it (`simclr.train(train_loader)`, with `SimCLR.train` of
simclr.py looping `for epoch in range(...): for images, _ in tqdm(train_loader): ...`).

The sampler is the script's (DDP201 adds it where the loader is built); its `set_epoch` belongs at
the start of the module's epoch loop, so the fix puts it there:

    for epoch_counter in range(self.args.epochs):
        if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):
            train_loader.sampler.set_epoch(epoch_counter)
        for images, _ in tqdm(train_loader):

The test is decided at run time by the loader itself: a plain run's loader (no sampler, or a
RandomSampler) and any other caller's iterable skip it, so the module keeps working for every entry
point that imports it. The module is edited only where `ModuleEdits` allows it (module_edits.py) and
where its epoch loop names an epoch; otherwise the finding comes without a fix, saying why.
"""

from __future__ import annotations

import libcst as cst

from .analysis.handoffs import Handoff
from .analysis.loader_params import COUNTING
from .edits import epoch_name
from .rule import Context, Order, Rule
from .syntax import dotted, walk

SAMPLER = "torch.utils.data.distributed.DistributedSampler"


def set_epoch_blocker(ctx: Context, rule: Rule, handoff: Handoff) -> tuple[str | None, str]:
    """Why the module `handoff` names cannot get the set_epoch call (None: it can, checked on a trial),
    and where it goes (`simclr.py:68`, the epoch loop)."""
    others = ctx.others
    if others is None:
        return "cross-file edits are off", ""
    if handoff.path is None or handoff.member is None or handoff.param is None:
        return "the function that runs the epochs is not known", ""
    lines: list[int] = []
    why = others.why_not(handoff.path) or others.trial(
        handoff.path, rule, _planner(handoff.member, handoff.param, lines)
    )
    return why, f"{others.shown(handoff.path)}:{lines[0]}" if lines else others.shown(handoff.path)


def keep_set_epoch(ctx: Context, rule: Rule, handoff: Handoff) -> None:
    """Make the edit `set_epoch_blocker` allowed part of this pass's fix (once, whichever rule asks)."""
    others = ctx.others
    assert others is not None and handoff.path is not None and handoff.member and handoff.param
    key = ("set_epoch", handoff.path, handoff.member, handoff.param)
    if key not in others.planned:
        others.planned.add(key)
        others.keep(handoff.path, rule, _planner(handoff.member, handoff.param, []))


def _planner(member: str, param: str, lines: list[int]):
    """Prepend the loader's set_epoch to the epoch loop of `member` over its parameter `param`
    (`lines` gets that loop's line)."""

    def plan(ctx: Context) -> str | None:
        func = _function(ctx.facts.module, member)
        if func is None:
            return f"{member} is not a function at the top level of the module or of one of its classes"
        loop = _epoch_loop(ctx, func, param)
        if loop is None:
            return f"{member}() has no loop around its pass over {param}"
        line = ctx.facts.index.position(loop).start.line
        if epoch_name(ctx, loop, plan=False) is None:
            return f"the epoch loop of {member}() (line {line}) has no epoch variable to pass"
        epoch = epoch_name(ctx, loop)
        cls = ctx.plan.ref(SAMPLER, "DistributedSampler")
        stmts = ctx.plan.statements(
            """
            if isinstance(getattr({l}, "sampler", None), {cls}):
                {l}.sampler.set_epoch({e})
            """,
            l=param,
            cls=cls,
            e=epoch,
        )
        ctx.plan.prepend(loop.body, stmts, order=Order.SET_EPOCH)
        lines.append(line)
        return None

    return plan


def _function(module: cst.Module, member: str) -> cst.FunctionDef | None:
    """`train` or `SimCLR.train`: a function at the top level of `module`, or a method of a class there."""
    *owner, name = member.split(".")
    body: list = list(module.body)
    if owner:
        cls = next((s for s in body if isinstance(s, cst.ClassDef) and s.name.value == owner[0]), None)
        if cls is None or len(owner) > 1:
            return None
        body = list(cls.body.body)
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _epoch_loop(ctx: Context, func: cst.FunctionDef, param: str) -> cst.For | cst.While | None:
    """The innermost loop of `func` around its pass over `param`: a loop iterating it (also through
    `enumerate(tqdm(...))`), or a call handing it on (`self.train_epoch(loader)`)."""
    index = ctx.facts.index
    for node in walk(func.body):
        if isinstance(node, cst.For) and _iterates(node.iter, param):
            start: cst.CSTNode = node
        elif isinstance(node, cst.Call) and any(dotted(a.value) == param for a in node.args):
            if (dotted(node.func) or "").split(".")[-1] in COUNTING:
                continue
            start = node
        else:
            continue
        for anc in index.ancestors(start):
            if anc is func:
                break
            if isinstance(anc, (cst.For, cst.While)) and not (isinstance(anc, cst.For) and _inside(anc.iter, start)):
                return anc
    return None


def _iterates(expr: cst.BaseExpression, param: str) -> bool:
    """Does a loop over `expr` iterate `param` (itself, or the first argument of the calls around it)?"""
    while isinstance(expr, cst.Call) and expr.args and (dotted(expr.func) or "") not in COUNTING:
        expr = expr.args[0].value
    return isinstance(expr, cst.Name) and expr.value == param


def _inside(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(n is node for n in walk(tree))


__all__ = ["keep_set_epoch", "set_epoch_blocker"]
