"""DDP201 and DDP204 across files: a training loader handed to a function or method of the script's
own modules that runs the epochs over it (`simclr.train(train_loader)`, with `SimCLR.train` of
simclr.py looping `for epoch in range(...): for images, _ in tqdm(train_loader): ...`).

The sampler is the script's (DDP201 adds it where the loader is built); its `set_epoch` belongs at
the start of the module's epoch loop, so the fix puts it there:

    for epoch_counter in range(self.args.epochs):
        if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):
            train_loader.sampler.set_epoch(epoch_counter)
        for images, _ in tqdm(train_loader):

A loader a class keeps (`Learner(model, optimizer, train_loader).fit()`, with `self.train_loader =
train_loader` in `__init__`) gets the call through that attribute, in the loop of the method that
iterates it per epoch (or of the method whose loop calls the one that does).

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
from .syntax import dotted, iterated_by, walk

SAMPLER = "torch.utils.data.distributed.DistributedSampler"


def set_epoch_blocker(ctx: Context, rule: Rule, handoff: Handoff) -> tuple[str | None, str]:
    """Why the modules `handoff` names (itself and `also`) cannot get the set_epoch call (None: they
    can, checked on a trial), and where it goes (`simclr.py:68`, the epoch loop)."""
    found = [_blocker(ctx, rule, h) for h in handoff.each()]
    why = next((w for w, _ in found if w is not None), None)
    return why, ", ".join(where for _, where in found if where)


def _blocker(ctx: Context, rule: Rule, handoff: Handoff) -> tuple[str | None, str]:
    others = ctx.others
    if others is None:
        return "cross-file edits are off", ""
    if handoff.path is None or handoff.member is None or handoff.param is None:
        return "the function that runs the epochs is not known", ""
    lines: list[int] = []
    why = others.why_not(handoff.path) or others.trial(
        handoff.path, rule, epoch_loop_planner(handoff.member, handoff.param, lines)
    )
    return why, f"{others.shown(handoff.path)}:{lines[0]}" if lines else others.shown(handoff.path)


def keep_set_epoch(ctx: Context, rule: Rule, handoff: Handoff) -> None:
    """Make the edits `set_epoch_blocker` allowed part of this pass's fix (each once, whichever rule asks)."""
    others = ctx.others
    for each in handoff.each():
        assert others is not None and each.path is not None and each.member and each.param
        key = ("set_epoch", each.path, each.member, each.param)
        if key not in others.planned:
            others.planned.add(key)
            others.keep(each.path, rule, epoch_loop_planner(each.member, each.param, []))


def epoch_loop_planner(member: str, param: str, lines: list[int]):
    """Prepend the loader's set_epoch to the epoch loop of `member` over its parameter `param`, or, for
    a class's `__init__` that keeps it (`self.train_loader = train_loader`), to the epoch loop of the
    method that iterates that attribute (`lines` gets that loop's line)."""

    def plan(ctx: Context) -> str | None:
        func = function_of(ctx.facts.module, member)
        if func is None:
            return f"{member} is not a function at the top level of the module or of one of its classes"
        cls = ctx.facts.index.enclosing(func, cst.ClassDef)
        methods = [m for m in cls.body.body if isinstance(m, cst.FunctionDef)] if isinstance(cls, cst.ClassDef) else []
        searched = [(func, param)]
        if func.name.value == "__init__":  # the class keeps the loader: its methods iterate the attribute
            attr = _kept_as(func, param)
            if attr is None:
                return f"{member}() does not keep {param} as an attribute of its own"
            searched = [(m, attr) for m in methods]
        found = [(loop, name) for f, name in searched for loop in [_epoch_loop(ctx, f, name, methods)] if loop]
        if not found:  # handed to a generator that passes over it again and again: its loop runs the epochs
            found = [
                (loop, name)
                for f, handed in searched
                for g, name in _handed_to(ctx.facts.module, cls, f, handed)
                for loop in [_epoch_loop(ctx, g, name, [])]
                if loop
            ]
        if not found:
            drawn = [(f, name) for f, name in searched if _draws_with_next(f, name)]
            if drawn:
                return next_drawn_set_epoch(ctx, *drawn[0], lines)
            return f"{member}() has no loop around its pass over {searched[0][1]}"
        loop, reach = found[0]  # the loader as the epoch loop names it: `train_loader`, `self.train_loader`
        line = ctx.facts.index.position(loop).start.line
        if epoch_name(ctx, loop, plan=False) is None:
            where = ctx.facts.index.enclosing(loop, cst.FunctionDef)
            owner = f"{cls.name.value}." if isinstance(cls, cst.ClassDef) else ""
            name = f"{owner}{where.name.value}" if isinstance(where, cst.FunctionDef) else member
            return f"the epoch loop of {name}() (line {line}) has no epoch variable to pass"
        ctx.plan.prepend(loop.body, through_loader(ctx, reach, epoch_name(ctx, loop)), order=Order.SET_EPOCH)
        lines.append(line)
        return None

    return plan


REEXPORTED = "torch.utils.data.DistributedSampler"  # the same class, as torch.utils.data exports it


def through_loader(ctx: Context, reach: str, epoch: str, count: str = "") -> list[cst.BaseStatement]:
    """`set_epoch(epoch)` on the sampler of the loader `reach`, where it is a DistributedSampler (a plain
    run's loader, or any other caller's iterable, skips it); `count`: how the count of the passes
    changes first, `= 0` or `+= 1`."""
    template = """
        if isinstance(getattr({l}, "sampler", None), {cls}):
            {l}.sampler.set_epoch({e})
        """
    if count:
        template = "\n        {e} " + count + template
    # the sampler class as the module already names it (`from torch.utils.data import DistributedSampler`,
    # `data.DistributedSampler`), else imported
    cls = _spelled_already(ctx.facts.names) or ctx.plan.ref(SAMPLER, "DistributedSampler")
    return ctx.plan.statements(template, l=reach, cls=cls, e=epoch)


def _spelled_already(names) -> str | None:
    """The shortest spelling of the DistributedSampler class through what the module imports: the class
    itself, or a module holding it (`data.DistributedSampler` after `from torch.utils import data`)."""
    found = []
    for local, full in names.aliases.items():
        for qualified in (SAMPLER, REEXPORTED):
            if full == qualified:
                found.append(local)
            elif qualified.startswith(full + ".") and full != "torch":
                found.append(local + qualified[len(full) :])
    return min(found, key=len) if found else None


def next_drawn_set_epoch(ctx: Context, func: cst.FunctionDef, reach: str, lines: list[int]) -> str | None:
    """Batches drawn with next() from `data_iter = iter(self.data_loader)`, made once before the loop and
    again in it when it runs out (`except StopIteration:`): each pass over the loader is an epoch. A
    counter of the passes starts at 0 where the iterator is first made and counts up where it is made
    again; the sampler's epoch is set from it before each `iter()`, so the shards are reshuffled per
    pass and stay disjoint across the ranks. Why not, or None (planned; `lines` gets the first line)."""
    passes = drawn_passes(ctx.facts.index, func, reach)
    if isinstance(passes, str) or passes is None:
        return drawn_how(func, reach, passes or "made once in the method's body before the loop, and again inside it")
    plan_drawn_passes(ctx, reach, *passes)
    lines.append(ctx.facts.index.position(passes[0]).start.line)
    return None


def drawn_how(func: cst.FunctionDef, reach: str, why: str) -> str:
    return (
        f"{func.name.value}() draws its batches with next() from iter({reach}), made again when it runs out: "
        f"set the epoch where it makes the iterator, with a count of the passes ({why})"
    )


Passes = tuple[cst.SimpleStatementLine, list[cst.SimpleStatementLine]]


def drawn_passes(index, func: cst.FunctionDef, reach: str) -> Passes | str | None:
    """Where `func` makes `iter(reach)`: once in its body, then again in a loop (each pass an epoch).
    None: no iterator made again (one pass); a string: why the passes cannot be counted."""
    makes = [c for c in walk(func.body) if isinstance(c, cst.Call) and _over(c, reach)]
    stmts = [_own_statement(index, c) for c in makes]
    if any(s is None for s in stmts):
        return f"an iter({reach}) is not a statement of its own"
    first = [s for s in stmts if index.parent.get(s) is func.body]
    again = [s for s in stmts if s not in first and _loop_around(index, func, s) is not None]
    if not again and len(stmts) <= 1:
        return None
    if len(first) != 1 or len(first) + len(again) != len(stmts) or not again:
        return "made once in the method's body before the loop, and again inside it"
    start = index.position(first[0]).start.line
    if any(index.position(s).start.line < start for s in again):
        return "made again before it is first made"
    return first[0], again  # type: ignore[return-value]


def plan_drawn_passes(ctx: Context, reach: str, first: cst.CSTNode, again: list[cst.SimpleStatementLine]) -> None:
    """A count of the passes from 0 before the first `iter(reach)`, up by one before each other one,
    and the loader's sampler set to it each time."""
    epoch = ctx.plan.fresh("epoch")
    ctx.plan.insert_before(first, through_loader(ctx, reach, epoch, "= 0"), order=Order.SET_EPOCH)
    for stmt in again:
        ctx.plan.insert_before(stmt, through_loader(ctx, reach, epoch, "+= 1"), order=Order.SET_EPOCH)


def _over(call: cst.Call, reach: str) -> bool:
    """`iter(reach)` or `reach.__iter__()`."""
    over = iterated_by(call)
    return over is not None and dotted(over) == reach


def _own_statement(index, call: cst.Call) -> cst.SimpleStatementLine | None:
    """`data_iter = iter(loader)` on a line of its own: the statement, else None."""
    assign = index.parent.get(call)
    line = index.parent.get(assign) if isinstance(assign, cst.Assign) and assign.value is call else None
    return line if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None


def function_of(module: cst.Module, member: str) -> cst.FunctionDef | None:
    """`train` or `SimCLR.train`: a function at the top level of `module`, or a method of a class there."""
    *owner, name = member.split(".")
    body: list = list(module.body)
    if owner:
        cls = next((s for s in body if isinstance(s, cst.ClassDef) and s.name.value == owner[0]), None)
        if cls is None or len(owner) > 1:
            return None
        body = list(cls.body.body)
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def owner_of(module: cst.Module, name: str, function: bool = False) -> cst.ClassDef | cst.FunctionDef | None:
    """The class `name` at the top level of `module`; with `function`, the function `name` there (a
    module-level function read as the owner of one method, ClassSummary.function)."""
    kind = cst.FunctionDef if function else cst.ClassDef
    return next((s for s in module.body if isinstance(s, kind) and s.name.value == name), None)


def _epoch_loop(ctx: Context, func: cst.FunctionDef, param: str, methods: list) -> cst.For | cst.While | None:
    """The innermost loop of `func` around its pass over `param` (a parameter, or an attribute
    `self.train_loader`): a loop iterating it (also through `enumerate(tqdm(...))`), or a call handing
    it on (`self.train_epoch(loader)`); for a method with no loop around it, the loop of another of
    `methods` that calls it (`for epoch in ...: self.train_epoch()`)."""
    index = ctx.facts.index
    for node in walk(func.body):
        if isinstance(node, cst.For) and _iterates(node.iter, param):
            start: cst.CSTNode = node
        elif isinstance(node, cst.Call) and any(dotted(a.value) == param for a in node.args):
            if (dotted(node.func) or "").split(".")[-1] in COUNTING or dotted(node.func) == "iter":
                continue  # `iter(loader)`, drawn with next(): the loop around it counts steps, not epochs
            start = node
        else:
            continue
        loop = _loop_around(index, func, start)
        if loop is not None:
            return loop
        for other in methods:
            for call in walk(other.body):
                if isinstance(call, cst.Call) and dotted(call.func) == f"self.{func.name.value}":
                    loop = _loop_around(index, other, call)
                    if loop is not None:
                        return loop
    return None


def _handed_to(
    module: cst.Module, cls: cst.CSTNode | None, func: cst.FunctionDef, param: str
) -> list[tuple[cst.FunctionDef, str]]:
    """(function, its parameter) for each call in `func` that hands `param` on as a positional argument
    to a method of the same class (`self.get_infinite_batches(train_loader)`) or to a function at the
    top level of the module."""
    out = []
    for call in walk(func.body):
        if not isinstance(call, cst.Call):
            continue
        at = [i for i, a in enumerate(call.args) if a.keyword is None and not a.star and dotted(a.value) == param]
        name = dotted(call.func) or ""
        if not at:
            continue
        if name.startswith("self.") and name.count(".") == 1 and isinstance(cls, cst.ClassDef):
            callee, skip = function_of(module, f"{cls.name.value}.{name[5:]}"), 1
        elif "." not in name:
            callee, skip = function_of(module, name), 0
        else:
            continue
        params = [p.name.value for p in callee.params.params] if callee is not None else []
        if callee is not None and at[0] + skip < len(params):
            out.append((callee, params[at[0] + skip]))
    return out


def _loop_around(index, func: cst.FunctionDef, start: cst.CSTNode) -> cst.For | cst.While | None:
    """The innermost loop of `func` around `start` (not one whose header holds it)."""
    for anc in index.ancestors(start):
        if anc is func:
            return None
        if isinstance(anc, (cst.For, cst.While)) and not (isinstance(anc, cst.For) and _inside(anc.iter, start)):
            return anc
    return None


def _kept_as(init: cst.FunctionDef, param: str) -> str | None:
    """`self.train_loader` where `__init__` runs `self.train_loader = train_loader`."""
    for node in walk(init.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Name) and node.value.value == param:
            for target in node.targets:
                name = dotted(target.target)
                if name is not None and name.startswith("self.") and name.count(".") == 1:
                    return name
    return None


def _iterates(expr: cst.BaseExpression, param: str) -> bool:
    """Does a loop over `expr` iterate `param` (itself, or the first argument of the calls around it)?"""
    while isinstance(expr, cst.Call) and expr.args and (dotted(expr.func) or "") not in COUNTING:
        expr = expr.args[0].value
    return dotted(expr) == param


def _draws_with_next(func: cst.FunctionDef, param: str) -> bool:
    return any(
        isinstance(n, cst.Call) and dotted(n.func) == "iter" and any(dotted(a.value) == param for a in n.args)
        for n in walk(func.body)
    )


def _inside(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(n is node for n in walk(tree))


__all__ = [
    "drawn_how",
    "drawn_passes",
    "epoch_loop_planner",
    "function_of",
    "owner_of",
    "keep_set_epoch",
    "plan_drawn_passes",
    "set_epoch_blocker",
    "through_loader",
]
