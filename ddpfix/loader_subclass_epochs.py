"""DDP204 where the sampler is built by a DataLoader subclass of the script and the epochs are run by a
class of the script the loader is handed to:

    class MNISTDataLoader(data.DataLoader):
        def __init__(self, root, batch_size, train=True):
            ...
            sampler = data.DistributedSampler(dataset) if train and dist.is_initialized() else None
            super().__init__(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)

    train_loader = MNISTDataLoader(args.root, args.batch_size, train=True)
    Trainer(model, optimizer, train_loader, test_loader, device).fit(args.epochs)

`Trainer.fit` loops over the epochs and `Trainer.train` over `self.train_loader`: no `set_epoch`, so
every epoch draws the same order. The fix sets it first thing in that epoch loop, through the loader
(the same statements as across files, module_epochs.py):

    for epoch in range(1, epochs + 1):
        if isinstance(getattr(self.train_loader, "sampler", None), DistributedSampler):
            self.train_loader.sampler.set_epoch(epoch)
"""

from __future__ import annotations

import libcst as cst

from .module_epochs import epoch_loop_planner
from .rule import Context
from .syntax import assign_targets, assigned_value, dotted, walk


def subclass_samplers(ctx: Context) -> None:
    facts = ctx.facts
    if facts.names.method_calls("set_epoch"):
        return  # the script sets an epoch somewhere already: its own way, left alone
    samplers = {c.name.value: s for c in facts.index.classes if (s := _own_sampler(facts, c)) is not None}
    if not samplers:
        return
    classes = {c.name.value: c for c in facts.index.classes}
    reported: set[int] = set()
    for call in facts.index.calls:
        site = samplers.get(dotted(call.func) or "")
        stmt = facts.index.site(call).stmt
        targets = assign_targets(stmt) if site is not None else []
        if site is None or id(site) in reported or assigned_value(stmt) is not call or len(targets) != 1:
            continue
        for handed, param in _handed_to(facts, classes, targets[0]):
            if not _trains_over(facts, classes[handed], param):
                continue
            reported.add(id(site))
            head = f"{dotted(call.func)}'s DistributedSampler never gets set_epoch(epoch): {handed} runs the epochs"
            if ctx.silenced(site):
                break
            mine = not ctx.fixing or (ctx.rule is not None and ctx.rule.code in ctx.fixing)
            if not mine:  # another rule's fix run: report, plan no edit
                ctx.report(site, f"{head}: the fix sets it at the start of each epoch there")
                break
            lines: list[int] = []
            why = epoch_loop_planner(f"{handed}.__init__", param, lines)(ctx)  # planned here, when it can be
            if why is None:
                ctx.report(site, f"{head}: the fix sets it at the start of each epoch there (line {lines[0]})")
            else:
                ctx.report(site, f"{head}: call set_epoch(epoch) first thing in its epoch loop ({why})", fix="none")
            break


def subclass_training_loops(facts) -> list[cst.For]:
    """The training loops over a loader of a DataLoader subclass that builds its own DistributedSampler,
    kept by a class of the script it is handed to (`for data, target in self.train_loader:` in
    `Trainer.train`): loops over a sharded loader."""
    samplers = {c.name.value for c in facts.index.classes if _own_sampler(facts, c) is not None}
    if not samplers:
        return []
    classes = {c.name.value: c for c in facts.index.classes}
    out: list[cst.For] = []
    for call in facts.index.calls:
        stmt = facts.index.site(call).stmt
        targets = assign_targets(stmt) if dotted(call.func) in samplers else []
        if assigned_value(stmt) is not call or len(targets) != 1:
            continue
        for handed, param in _handed_to(facts, classes, targets[0]):
            out += [loop for loop in _loops_over(facts, classes[handed], param) if loop not in out]
    return out


def _own_sampler(facts, cls: cst.ClassDef) -> cst.Call | None:
    """The DistributedSampler a DataLoader subclass builds in its `__init__`."""
    if not any((dotted(b.value) or "").endswith("DataLoader") for b in cls.bases):
        return None
    init = facts.index.methods_of(cls).get("__init__")
    if init is None:
        return None
    for node in walk(init):
        if type(node) is cst.Call and (facts.names.call_qual(node) or dotted(node.func) or "").endswith(
            "DistributedSampler"
        ):
            return node
    return None


def _handed_to(facts, classes: dict[str, cst.ClassDef], name: str) -> list[tuple[str, str]]:
    """(class, parameter of its `__init__`) for each construction of a class of the script given `name`."""
    out = []
    for call in facts.index.calls:
        cls = classes.get(dotted(call.func) or "")
        init = facts.index.methods_of(cls).get("__init__") if cls is not None else None
        if init is None:
            continue
        params = [p.name.value for p in init.params.params][1:]  # without self
        for i, arg in enumerate(call.args):
            if dotted(arg.value) != name:
                continue
            if arg.keyword is not None and arg.keyword.value in params:
                out.append((cls.name.value, arg.keyword.value))  # type: ignore[union-attr]
            elif arg.keyword is None and arg.star == "" and i < len(params):
                out.append((cls.name.value, params[i]))  # type: ignore[union-attr]
    return out


def _trains_over(facts, cls: cst.ClassDef, param: str) -> bool:
    """Does a method of `cls` train in a loop over the attribute its `__init__` keeps `param` as?"""
    return bool(_loops_over(facts, cls, param))


def _loops_over(facts, cls: cst.ClassDef, param: str) -> list[cst.For]:
    """The loops of the methods of `cls` that train over the attribute its `__init__` keeps `param` as."""
    init = facts.index.methods_of(cls).get("__init__")
    attrs = {
        f"self.{t.attr.value}"
        for n in walk(init)
        if type(n) is cst.Assign and dotted(n.value) == param
        for t in (x.target for x in n.targets)
        if type(t) is cst.Attribute and dotted(t.value) == "self"
    }
    return [
        loop
        for method in facts.index.methods_of(cls).values()
        for loop in walk(method)
        if type(loop) is cst.For and dotted(loop.iter) in attrs and facts.training.trains_in(loop.body)
    ]


__all__ = ["subclass_samplers", "subclass_training_loops"]
