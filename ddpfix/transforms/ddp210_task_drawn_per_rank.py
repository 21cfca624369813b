"""DDP210: data or targets drawn at random with no seed: every rank draws its own task."""

from __future__ import annotations

import libcst as cst

from ..analysis.flow import reads
from ..analysis.random_batches import seed_calls, seeds_alike
from ..diagnostic import NONE
from ..examples import clean, fixes, reports
from ..rule import Context, Rule
from ..syntax import assign_targets, calls_in, code_of, dotted, kwarg, method_name, positional, walk
from ..task_broadcast import RANDOM, apply_broadcasts, plan_broadcasts

IN_PLACE = ("numpy.random.shuffle", "random.shuffle")  # shuffle their first argument in place
LOOPS = (cst.For, cst.While)


class TaskDrawnPerRank(Rule):
    code = "DDP210"
    name = "task-drawn-per-rank"
    message = (
        "drawn at random with no seed: under torchrun every rank draws its own, so the ranks train on different tasks"
    )
    requires = ("DDP001",)
    distributed_only = True
    reads = frozenset({"joins"})
    docs = """
## What
Training data, targets or anything else the training reads, drawn from a random generator once
before training (`W_target = torch.randn(8, 1)`, `X = np.random.rand(1000, 8)`), in a script that
never seeds a generator alike on every rank (no `torch.manual_seed`, `np.random.seed`,
`random.seed`, `set_seed(...)` or other call named `*seed*` whose argument does not depend on the
rank: `torch.manual_seed(seed + rank)` draws differently on each rank) and never hands the value to
a collective (`dist.broadcast(W, 0)`).
A list shuffled in place (`np.random.shuffle(indices)`, `random.shuffle(files)`) counts as drawn, and
so does a pandas sample with no `random_state` (`df.sample(frac=1)`): a split or a `Subset` cut from
it holds different samples on each rank, so a `DistributedSampler`'s disjoint positions are not
disjoint samples.
Draws inside the training loop (noise, augmentation, dropout masks) are left alone: each step may
differ between ranks by design. Where the loop calls `backward()` itself, only what its loss is
computed from counts (followed back through the loop's assignments), with what its loops iterate
over: fixed noise the loop only samples from under `torch.no_grad()` or puts in a checkpoint
(`x_T = torch.randn(64, 3, 32, 32)`, `ema_sampler(x_T)`) is not the task.

## Why
Each process of `torchrun` starts its generators from a different, unpredictable state. A synthetic
dataset, a target function or a vocabulary drawn that way is a different one on every rank: each
rank fits its own task, the averaged gradients pull towards none of them, and a loss threshold meant
to stop the run may never be reached (a run that never ends). `python train.py` shows nothing wrong.

## Example
```python
W_target = torch.randn(8, 1)
X = torch.randn(1024, 8)
y = X @ W_target
```
becomes, below the process group's setup,
```python
W_target = torch.randn(8, 1)
X = torch.randn(1024, 8)
if DISTRIBUTED:
    dist.broadcast(W_target, src=0)
    dist.broadcast(X, src=0)
y = X @ W_target
```
A draw made at import, when the setup is at the top of `main()`, is broadcast right after that setup
(in place: the module's own tensor, so every function that reads it sees rank 0's draw). Seeding
alike (`torch.manual_seed(0)` before the draws) is the other way; it also makes `python train.py`
deterministic where it was not, which is the author's choice, not a conversion's.

## Fix safety
Safe: what the fix sends runs only under torchrun, on every rank (never under a test that differs by
rank), once the process group this conversion sets up is joined; a plain run draws as before. A
torch tensor bound to one name (a draw, a tensor method of one, or arithmetic with one) is broadcast
in place (`dist.broadcast`); any other value the drawing statement binds to names (a NumPy array, a
tuple of draws, a dataset built around one: `TensorDataset(x, torch.randn(100, 1))`), or a list
shuffled in place (`np.random.shuffle(indices)`), is sent whole from rank 0 and bound again:
```python
np.random.shuffle(indices)
if DISTRIBUTED:
    shared = [indices]
    dist.broadcast_object_list(shared, src=0)
    indices = shared[0]
```
The finding comes without a fix, and says why, for a tensor that requires grad (a parameter, not
data), a value on a device or a loader (which may not travel between processes as it is), a draw not
bound to names, a draw in a function other than the one the setup goes in, a draw at import that a
statement at module level reads before `main()` runs (`scale = W_target.abs().max()`) or that is no
single tensor and is read from `main()` (bound again there, it would need `global`), and a script
that joins its process group itself.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not facts.training.trains:
            return
        if seeds_alike(facts):
            return  # the script seeds a generator with the same value on every rank: every rank draws alike
        shared = collective_names(facts)
        index, module = facts.index, facts.module
        # (the scope that binds a name, the name) -> the draws its value comes from: a name of a function
        # is that function's own, and reads of it look there first, then at module level
        origin: dict[tuple[cst.CSTNode, str], set[cst.Call]] = {}
        drawn: dict[cst.Call, str] = {}  # a draw -> the name it is assigned to

        def sources_of(scope: cst.CSTNode, name: str) -> set[cst.Call]:
            return origin.get((scope, name)) or origin.get((module, name)) or set()

        for call in facts.names.calls_to(*IN_PLACE):  # `np.random.shuffle(indices)`: a draw into `indices`
            target = positional(call, 0)
            name = dotted(target.value) if target is not None else None
            if name and name not in shared and not any(isinstance(a, LOOPS) for a in index.ancestors(call)):
                origin.setdefault((index.scope_of(call), name), set()).add(call)
                drawn[call] = name
        for assign in index.assigns:
            if any(isinstance(a, LOOPS) for a in index.ancestors(assign)):
                continue
            scope = index.scope_of(assign)
            draw = next((c for c in calls_in(assign.value) if _random(facts, c)), None)
            sources = {draw} if draw is not None else set()
            for r in reads(assign.value):
                sources |= sources_of(scope, r)
            if not sources:
                continue
            targets = assign_targets(index.site(assign).stmt)
            if draw is not None and targets:
                drawn.setdefault(draw, targets[0])
            for target in targets:
                if target not in shared:
                    origin.setdefault((scope, target), set()).update(sources)
        if not origin:
            return
        used: set[cst.Call] = set()
        seeds = seed_calls(facts)
        per_rank = code_of(seeds[0]) if seeds else None
        for loop in index.loops:
            if not facts.training.trains_in(loop):
                continue
            own = {t for n in walk(loop) if isinstance(n, cst.Assign) for t in assign_targets(index.site(n).stmt)}
            for name in _feeding(index, loop) - own:  # a name the loop binds itself reads the loop's value
                used |= sources_of(index.scope_of(loop), name)
        ordered = sorted(used, key=facts.index.order)
        planned = plan_broadcasts(ctx, ctx.joins_at, drawn, ordered)
        made: set[str] = set()
        for draw in ordered:
            what = drawn.get(draw, "this value")
            why = planned.why_not.get(draw)
            if facts.names.call_qual(draw) in IN_PLACE:
                message = (
                    f"`{what}` is shuffled in place with no seed: under torchrun every rank shuffles it its own way, "
                    "so whatever is cut from it (a split, a Subset) holds different samples on each rank; "
                    + (
                        "send rank 0's order to every rank"
                        if why is None
                        else "seed the generator first (np.random.seed, random.seed) or broadcast it from rank 0"
                    )
                )
            elif why is None:
                message = (
                    f"`{what}` is {self.message[0].lower()}{self.message[1:]}; broadcast rank 0's draw to every rank"
                )
            else:
                message = (
                    f"`{what}` is {self.message[0].lower()}{self.message[1:]}; seed the generator first "
                    "(torch.manual_seed) or broadcast it from rank 0"
                )
            if per_rank:
                message += f" (`{per_rank}` seeds each rank differently)"
            if why is not None:
                ctx.report(draw, f"{message} (no fix: {why})", fix=NONE)
            elif ctx.report(draw, message):
                made.add(what)
        if made:
            apply_broadcasts(ctx, ctx.joins_at, planned.keeping(made))


def collective_names(facts) -> set[str]:
    """The names the script hands to a collective (`dist.broadcast(W_target, src=0)`), and those it binds
    to what one received (`indices = shared[0]` after `dist.broadcast_object_list(shared, src=0)`): the
    same value on every rank once it has run, however each rank drew it."""
    sent = {
        n.value for call, _ in facts.ranks.collectives_in(facts.module) for n in walk(call) if isinstance(n, cst.Name)
    }
    index = facts.index
    received = {t for a in index.assigns if reads(a.value) & sent for t in assign_targets(index.site(a).stmt)}
    return sent | received


def _feeding(index, loop: cst.CSTNode) -> set[str]:
    """The names a training loop reads for what it trains on: where the loop itself calls `backward()`,
    those its loss is computed from, followed back through the loop's assignments, and those its
    loops iterate over; a value read only to sample, log or save (`ema_sampler(x_T)` under no_grad,
    `ckpt = {"x_T": x_T}`) is none of them. Elsewhere (the backward in a function the loop calls),
    every name the loop reads."""
    backs = [c for c in calls_in(loop) if method_name(c) == "backward" and isinstance(c.func, cst.Attribute)]
    if not backs:
        return reads(loop)
    assigns = [n for n in walk(loop) if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and n.value]
    work = [(n, call) for call in backs for n in reads(call.func.value)]  # type: ignore[union-attr]
    work += [(n, call) for call in backs for a in call.args for n in reads(a.value)]
    work += [(n, node) for node in walk(loop) if isinstance(node, cst.For) for n in reads(node.iter)]
    names: set[str] = set()
    seen: set[tuple[str, int]] = set()
    while work:  # back from each read to the assignments that reach it: the last ones before it in the
        name, at = work.pop()  # loop's body, else (a value carried from the pass before) all of them
        if (name, id(at)) in seen:
            continue
        seen.add((name, id(at)))
        names.add(name)
        defs = [a for a in assigns if name in assign_targets(index.site(a).stmt)]
        earlier = [a for a in defs if index.before(a, at)]
        work += [(n, a) for a in (earlier or defs) for n in reads(a.value)]
    return names


def _random(facts, call: cst.Call) -> bool:
    """A draw from a global random generator (not one handed its own `generator=`)."""
    if method_name(call) == "sample" and kwarg(call, "frac") is not None:  # pandas' `df.sample(frac=1)`
        return kwarg(call, "random_state") is None
    return facts.names.call_qual(call) in RANDOM and kwarg(call, "generator") is None


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn

        W_target = torch.randn(8, 1)


        def main():
            model = nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                x = torch.randn(32, 8)
                loss = (model(x) - x @ W_target).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if loss.item() < 1e-3:
                    break


        if __name__ == "__main__":
            main()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        W_target = torch.randn(8, 1)


        def main():
            if DISTRIBUTED:
                if torch.cuda.is_available():
                    torch.cuda.set_device(LOCAL_RANK)
                dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

            if DISTRIBUTED:
                dist.broadcast(W_target, src=0)
            model = nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                x = torch.randn(32, 8)
                loss = (model(x) - x @ W_target).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if loss.item() < 1e-3:
                    break

            if DISTRIBUTED:
                dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note="A target function drawn once with no seed: rank 0's draw is broadcast once the process group is joined:",
    ),
    reports(
        """
        import numpy as np
        import torch
        import torch.nn as nn

        W_target = torch.from_numpy(np.random.randn(8, 1)).float()


        def main():
            model = nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                x = torch.randn(32, 8)
                loss = (model(x) - x @ W_target).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        note="Drawn by NumPy at import and read from main(): no fix (sent whole, it would have to be bound again as a global):",
    ),
    clean(
        """
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        W_target = torch.randn(8, 1)


        def main():
            model = nn.Linear(8, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                x = torch.randn(32, 8)
                loss = (model(x) - x @ W_target).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        note="Seeded: every rank draws the same target (the batches drawn in the loop may differ):",
    ),
    clean(
        """
        import torch
        import torch.nn as nn


        def sample(model):
            noise = torch.randn(16, 2)
            return model(noise)


        def main():
            model = nn.Linear(2, 2)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                x = torch.ones(16, 2)
                noise = torch.randn(16, 2)
                loss = (model(x + noise) - x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            print(sample(model).shape)


        if __name__ == "__main__":
            main()
        """,
        note="Noise drawn in the loop itself, and a `noise` of another function: no task drawn before training:",
    ),
)
