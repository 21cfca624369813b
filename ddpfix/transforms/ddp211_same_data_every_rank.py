"""DDP211: the model trains on the whole of the same tensors on every rank: nothing to shard by rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.flow import binds, reads
from ..diagnostic import NONE, UNSAFE
from ..examples import clean, fixes, reports
from ..full_batch import closure_loop, converted, outermost_loop, shard, targets_of
from ..rule import Context, Rule
from ..syntax import assign_targets, calls_in, dotted, walk
from .ddp210_task_drawn_per_rank import RANDOM, collective_names

LOOPS = (cst.For, cst.While)
ITERATORS = {"zip", "enumerate", "reversed"}  # `for x, y in zip(inputs, labels)` walks inputs and labels


class SameDataEveryRank(Rule):
    code = "DDP211"
    name = "same-data-every-rank"
    message = "the model trains on the whole of the same tensors on every rank: nothing cuts them by rank"
    fix = UNSAFE
    distributed_only = True
    requires = ("DDP001",)
    docs = """
## What
A training step fed from tensors the script builds once, before training, and hands whole to the
model at every step: full-batch training (`for t in range(200): prediction = net(x)`) or a walk over
one fixed sequence (`for input, label in zip(inputs, labels): hidden, out = model(hidden, input)`),
with no DataLoader, no batches cut by hand (DDP209) and nothing that depends on the rank. Arrays
made tensors again at every step (`inputs = torch.from_numpy(x_train)` in the loop) are the same
full batch, and so are tensors a helper of the script returns once before the loop (`x, y =
load_points()`), and a full batch an optimizer's closure trains on (`optimizer.step(closure)`, as
LBFGS takes it: reported with no fix, since the optimizer evaluates the closure as many times as the
data makes it, and ranks with different parts would run different numbers of backward passes).

## Why
Under `torchrun` every process holds the same tensors and takes the same steps on them: the gradient
average is the gradient of one process, so N processes do the work of one, with nothing gained.
Where the samples are independent, each rank can take its own part (a DataLoader with a
DistributedSampler, or `x[RANK::WORLD_SIZE]`, cut to the same length on every rank); where they are
one sequence whose order matters (a hidden state carried from one element to the next), there is
nothing to split by rank, and the script gains nothing from more processes.

## Example
```python
x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
y = x.pow(2)
for t in range(200):
    loss = loss_func(net(x), y)
```
becomes, with `--unsafe-fixes`,
```python
x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]  # this rank's part of the full batch, one size on every rank
y_shard = y[RANK::WORLD_SIZE][: len(y) // WORLD_SIZE]
for t in range(200):
    loss = loss_func(net(x_shard), y_shard)
```
The parts are cut right before the training loop, and only the loop reads them: what runs after it
(an evaluation, a plot) still sees every sample. The targets are the whole tensors the loss compares
the model's output with (positional arguments beside it, or the other side of arithmetic with it);
keyword arguments (`weight=class_weights`) stay whole.

## Fix safety
Unsafe: it takes the first dimension of each tensor for the sample dimension (a sequence-first
tensor would be cut along time), and the average of the parts' gradients, which DDP computes, is the
whole batch's only for a loss that averages over samples (parts of one size: up to WORLD_SIZE - 1
samples are left out). A plain run takes every sample, as before. No fix where the loss is known to
sum (`reduction="sum"` or `size_average=False`, in the loss call or in the criterion it calls), where
the model takes several whole tensors (a graph's features and adjacency: rows that are not
independent samples), where the loss compares rows an index picks (`output[idx_train]`), and none
for a sequence walked one element at a time, whose order the steps follow: there is nothing to split
by rank. Tensors drawn at random with no seed differ between ranks (DDP210 reports those).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not facts.training.trains or facts.data.training_loaders or facts.data.foreign_loaders():
            return  # a loader feeds the training: DDP201/202 judge its sharding
        handles = {m.handle for m in facts.models.trained} | {m.each for m in facts.models.trained if m.each}
        if not handles:
            return
        seeded = any("seed" in (dotted(c.func) or "").split(".")[-1].lower() for c in facts.index.calls)
        alike = None if seeded else collective_names(facts)  # drawn alike on every rank: all, or those broadcast
        reported: set[str] = set()
        found_in: dict[cst.CSTNode, list[tuple[str, cst.CSTNode, bool, cst.Call]]] = {}  # epoch loop -> findings
        closures: set[cst.CSTNode] = set()  # loops that train through an optimizer's closure (LBFGS)
        for backward in facts.training.backward_calls:
            epoch = outermost_loop(facts.index, backward)
            if epoch is None and (epoch := closure_loop(facts, backward)) is not None:
                closures.add(epoch)
            if epoch is None or facts.ranks.depends_on_rank(epoch):
                continue
            for forward in _training_forwards(epoch, backward, handles):
                for arg in forward.args:
                    found = _whole_source(facts, epoch, arg.value, alike)
                    if found is None or found[0] in reported or found[0] in handles:
                        continue  # a model's own weights handed on (`criterion(model.decoder.weight, ...)`)
                    reported.add(found[0])
                    found_in.setdefault(epoch, []).append((*found, forward))
        for epoch, findings in found_in.items():
            names, why = _parts(facts, epoch, findings, handles)
            if epoch in closures:
                names, why = (
                    [],
                    (
                        "the optimizer evaluates a closure as many times as the data makes it (LBFGS): ranks with "
                        "different parts would run different numbers of backward passes"
                    ),
                )
            made = True
            for name, node, _, _ in findings:
                message = (
                    f"the model trains on all of `{name}` at every step, on every rank: nothing cuts it by rank, "
                    "so each process repeats the same steps; give each rank its own part (a DataLoader with a "
                    "DistributedSampler, or rank-strided slices) where the samples are independent"
                )
                if why is None:
                    made = ctx.report(node, message) and made
                else:
                    ctx.report(node, f"{message} (no fix: {why})", fix=NONE)
            if why is None and made:
                shard(ctx, epoch, names)


def _parts(facts, epoch, findings, handles: set[str]) -> tuple[list[str], str | None]:
    """The names the fix cuts by rank in `epoch` (the model's inputs, then the targets its loss compares
    their output with), or why there is no fix."""
    if any(walked for _, _, walked, _ in findings):
        return [], "it is walked one element at a time, a sequence whose steps follow each other"
    inputs = [name for name, _, _, _ in findings]
    # every tensor built before the loop, drawn alike on every rank or not (a target DDP210 broadcasts
    # is cut with the inputs all the same), and what the loop makes of one at every step
    whole = {n: n for n in reads(epoch) - handles if _built_before(facts, epoch, n, None)}
    whole |= {n: source for n in _bound_in(epoch) if (source := converted(epoch, n)) in whole}
    targets: set[str] = set()
    for _, _, _, forward in findings:
        given = [n for a in forward.args if (n := _input_of(epoch, a.value)) in whole]
        if len(given) > 1:
            return (
                [],
                f"the model takes several whole tensors ({', '.join(given)}): whether their rows are samples to split is the author's call",
            )
        more, why = targets_of(facts, epoch, forward, whole)
        if why is not None:
            return [], why
        targets |= more
    return inputs + sorted(targets - set(inputs)), None


def _assignments(loop: cst.CSTNode):
    """(targets, value) of every assignment in `loop`, nested functions and classes left out."""
    for node in walk(loop):
        if isinstance(node, cst.Assign):
            yield {t for target in node.targets for t in _names(target.target)}, node.value
        elif isinstance(node, cst.AugAssign):
            yield set(_names(node.target)), node.value


def _names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _names(el.value)]
    d = dotted(target)
    return [d] if d else []


def _training_forwards(loop: cst.CSTNode, backward: cst.Call, handles: set[str]) -> list[cst.Call]:
    """The calls of a trained model in `loop` whose output reaches the loss that `backward` runs on."""
    sources: list[cst.CSTNode] = [backward.func.value] if isinstance(backward.func, cst.Attribute) else []
    assigned = list(_assignments(loop))
    seen: set[str] = set()
    out: list[cst.Call] = []
    while sources:
        expr = sources.pop()
        out.extend(c for c in calls_in(expr) if dotted(c.func) in handles and c not in out)
        for name in reads(expr) - seen:
            seen.add(name)
            sources.extend(value for targets, value in assigned if name in targets)
    return out


def _whole_source(
    facts, loop: cst.CSTNode, arg: cst.BaseExpression, alike: set[str] | None
) -> tuple[str, cst.CSTNode, bool] | None:
    """(name, node to report, walked) when `arg` is a tensor built before `loop` (or made again at every
    step from one: `inputs = torch.from_numpy(x_train)`), or an element of one walked by a loop inside it
    (walked: True); None when it is cut, drawn or loaded per step."""
    arg = _root(arg)
    if arg is None:
        return None
    for node in walk(loop):
        if isinstance(node, cst.For) and arg.value in _names(node.target):
            walked = _walked(node.iter)
            if not walked:
                return None
            for name in walked:
                if _built_before(facts, loop, name, alike):
                    return name, node.iter, True
            return None
    name = converted(loop, arg.value) if arg.value in _bound_in(loop) else arg.value
    if name is None:
        return None  # cut, drawn or loaded per step
    return (name, arg, False) if _built_before(facts, loop, name, alike) else None


def _input_of(loop: cst.CSTNode, expr: cst.BaseExpression) -> str | None:
    """The name a model input is read from, through what the loop makes of it at every step."""
    root = _root(expr)
    if root is None:
        return None
    return converted(loop, root.value) if root.value in _bound_in(loop) else root.value


def _root(expr: cst.BaseExpression) -> cst.Name | None:
    """The name a value is read from through method calls and attributes (`x.unsqueeze(0).to(device)`
    reads `x`); None for anything else (a slice `x[idx]` is a cut)."""
    while isinstance(expr, (cst.Call, cst.Attribute)):
        if isinstance(expr, cst.Call):
            if not isinstance(expr.func, cst.Attribute):
                return None
            expr = expr.func
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def _walked(it: cst.BaseExpression) -> list[str]:
    """The names a `for` walks: `inputs` in `for x in inputs` and `for x, y in zip(inputs, labels)`."""
    if isinstance(it, cst.Name):
        return [it.value]
    if isinstance(it, cst.Call) and dotted(it.func) in ITERATORS:
        return [a.value.value for a in it.args if isinstance(a.value, cst.Name) and a.keyword is None]
    return []


def _bound_in(loop: cst.CSTNode) -> set[str]:
    return binds(loop.body) | (binds(loop) if isinstance(loop, cst.For) else set())


def _built_before(facts, loop: cst.CSTNode, name: str, alike: set[str] | None, depth: int = 0) -> bool:
    """Is `name` a tensor (or a list of tensors) that the script builds outside every loop, the same
    on every rank, and never rebinds inside `loop`?"""
    if depth > 3 or name in _bound_in(loop):
        return False
    index = facts.index
    scope = index.scope_of(loop)
    values = _bindings(index, scope, name) or (
        _bindings(index, facts.module, name) if scope is not facts.module else []
    )
    if not values:
        return False
    made = False  # some binding makes a tensor (`x = torch.LongTensor(x)` after `x, y = make_batch()`)
    for value in values:
        if facts.ranks.depends_on_rank(value):
            return False
        calls = [facts.names.call_qual(c) or dotted(c.func) or "" for c in calls_in(value)]
        if alike is not None and name not in alike and any(q in RANDOM for q in calls):
            return False  # a different draw on every rank: DDP210
        if any(q.startswith(("torch.utils.data", "torch.nn.", "torch.optim")) for q in calls):
            return False
        made = made or any(q.startswith(("torch.", "numpy.")) or q.split(".")[-1] == "Variable" for q in calls)
        made = made or any(_own(facts, c) for c in calls_in(value))  # returned by a helper of the script
        made = made or any(_built_before(facts, loop, r, alike, depth + 1) for r in reads(value) if r != name)
    return made


def _own(facts, call: cst.Call) -> bool:
    """A call of a function (not a class) of this file or of the script's own modules: what it returns
    once, before the loop, is data built once."""
    func = facts.index.callee_of(call)
    if func is not None:
        return facts.index.enclosing(func, cst.ClassDef) is None
    target = facts.modules.target_of(call.func)
    return target is not None and target.summary is not None and target.member not in target.summary.classes


def _bindings(index, scope: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    """The values `name` is assigned in `scope` (its own statements), None where one is in a loop."""
    out = []
    for assign in index.assigns:
        if index.scope_of(assign) is not scope or name not in assign_targets(index.site(assign).stmt):
            continue
        if any(isinstance(a, LOOPS) for a in index.ancestors(assign)):
            return []
        out.append(assign.value)
    return out


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn

        x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
        y = x.pow(2)

        net = nn.Sequential(nn.Linear(1, 10), nn.ReLU(), nn.Linear(10, 1))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
        loss_func = nn.MSELoss()

        for t in range(200):
            prediction = net(x)
            loss = loss_func(prediction, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn

        RANK = int(os.environ.get("RANK", 0))
        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        if DISTRIBUTED:
            if torch.cuda.is_available():
                torch.cuda.set_device(LOCAL_RANK)
            dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

        x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
        y = x.pow(2)

        net = nn.Sequential(nn.Linear(1, 10), nn.ReLU(), nn.Linear(10, 1))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
        loss_func = nn.MSELoss()

        x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]  # this rank's part of the full batch, one size on every rank
        y_shard = y[RANK::WORLD_SIZE][: len(y) // WORLD_SIZE]
        for t in range(200):
            prediction = net(x_shard)
            loss = loss_func(prediction, y_shard)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        if DISTRIBUTED:
            dist.destroy_process_group()
        """,
        note="Full-batch training on fixed points: each rank takes its own part of the 100 points (unsafe):",
    ),
    reports(
        """
        import torch
        import torch.nn as nn

        torch.manual_seed(777)
        inputs = torch.eye(5)[[0, 1, 0, 2, 3, 3]]
        labels = torch.tensor([1, 0, 2, 3, 3, 4])
        rnn = nn.RNNCell(5, 5)
        optimizer = torch.optim.Adam(rnn.parameters(), lr=0.1)
        criterion = nn.CrossEntropyLoss()

        for epoch in range(100):
            optimizer.zero_grad()
            loss = 0
            hidden = torch.zeros(1, 5)
            for x, label in zip(inputs, labels):
                hidden = rnn(x.unsqueeze(0), hidden)
                loss += criterion(hidden, label.unsqueeze(0))
            loss.backward()
            optimizer.step()
        """,
        note="One sequence walked in order, a hidden state carried along it: nothing to split by rank:",
    ),
    clean(
        """
        import torch
        import torch.nn as nn

        x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
        y = x.pow(2)

        net = nn.Sequential(nn.Linear(1, 10), nn.ReLU(), nn.Linear(10, 1))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
        loss_func = nn.MSELoss()

        for t in range(200):
            idx = torch.randint(0, 100, (16,))
            loss = loss_func(net(x[idx]), y[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """,
        note="Batches drawn each step (DDP209 judges how they are cut by rank):",
    ),
    clean(
        """
        import torch
        import torch.nn as nn


        class SplitLoss(nn.Module):
            def __init__(self):
                super().__init__()
                self.tail = nn.Linear(4, 4)

            def forward(self, weight, hidden, targets):
                return nn.functional.cross_entropy(nn.functional.linear(self.tail(hidden), weight), targets)


        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.body = nn.Linear(4, 4)
                self.decoder = nn.Linear(4, n)

            def forward(self, x):
                return self.body(x)


        torch.manual_seed(0)
        data, labels = torch.randn(64, 4), torch.randint(0, 3, (64,))
        model = Net(int(labels.max()) + 1)
        criterion = SplitLoss()
        optimizer = torch.optim.SGD(list(model.parameters()) + list(criterion.parameters()), lr=0.1)
        for epoch in range(3):
            for i in range(0, 64, 8):
                output = model(data[i : i + 8])
                loss = criterion(model.decoder.weight, output, labels[i : i + 8])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        """,
        note="A trained module handed another model's weights (a split softmax's decoder): weights, not data:",
    ),
)
