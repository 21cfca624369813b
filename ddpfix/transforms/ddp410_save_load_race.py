"""DDP410: a file saved on rank 0 and read by every rank with no barrier in between."""

from __future__ import annotations

import libcst as cst

from ..analysis.summaries import LOAD, SAVE
from ..edits import distributed_test
from ..examples import clean, fixes
from ..file_io_paths import file_paths
from ..rule import Context, Order, Rule
from ..syntax import dotted


class SaveLoadRace(Rule):
    code = "DDP410"
    distributed_only = True
    name = "save-load-race"
    message = "file saved on rank 0 and loaded by every rank without a barrier: the others can read it half-written"
    reads = frozenset({"hoisted"})
    docs = """
## What
A file saved on rank 0, then loaded by every rank in the same function with no collective in
between that every rank reaches. Saves and loads are `torch.save` / `torch.load` and the other
common writers and readers of files (`np.save`/`np.load`, `joblib.dump`/`joblib.load`, `plt.savefig`/`plt.imread`,
`imageio.mimsave`/`imageio.imread`, `cv2.imwrite`/`cv2.imread`, `PIL.Image.open`, ...), or a helper that
does one, of this file (`save_checkpoint(state, path)`, matched by a path-like argument or the file
the helper names itself) or of the script's own modules (`utils.save_on_master(state, path)`).
A helper of the script's modules that builds its file's path from what it is given is matched by
that path at each call: `utils.save_checkpoint(model, epoch, args)` (saving to
`os.path.join(args.save_dir, args.name)`) and `utils.load_checkpoint(model, args.save_dir,
args.name)` (loading `os.path.join(folder_dir, filename)`) name the same file; so does a function
of this file that calls such a helper (`model = train(loader)`, saving each epoch, then the load).
The collective may come through a module of the script that imports torch.distributed
(`from utils import dist`, then `dist.barrier()`).

A path built around a loop's number is compared by its literal parts: a sample saved each epoch
as `"out/epoch_" + str(epoch + 1) + ".png"` is the file read back later as
`"out/epoch_" + str(e + 1) + ".png"`, names followed to the value they were assigned; so is one made
from a literal template (`'{}.pkl'.format(epoch)`, read back as `'{}.pkl'.format(best_epoch)`).

## Why
The other ranks reach the load while rank 0 is still writing: they read a missing or truncated
file (`PytorchStreamReader failed reading zip archive`), or an old checkpoint.

## Example
```python
if rank == 0:
    torch.save(model.module.state_dict(), path)
model.module.load_state_dict(torch.load(path, map_location=device))
```
becomes
```python
if rank == 0:
    torch.save(model.module.state_dict(), path)
if DISTRIBUTED:
    dist.barrier()
model.module.load_state_dict(torch.load(path, map_location=device))
```
A script that starts its own processes (`mp.spawn`) gets `if dist.is_initialized():` instead.

## Fix safety
Safe: every rank reaches the barrier (it is outside any rank condition), and a plain run has no
process group and skips it. Loads in a loop that does not also save (reading back every
epoch's images) get one barrier before the loop. A load inside `with open(path, "rb") as f:` gets its barrier before the
`with`: the file is opened there, before the load runs.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        # Saves on rank 0: guarded already, or about to be (DDP401 guards every save of a script
        # that runs distributed, or that trains and so gets a process group from DDP001; an unguarded
        # save races the same way, with every rank writing).
        distributed = bool(
            facts.launch.init_calls or facts.models.ddp_calls or facts.models.trained or facts.training.trains
        )
        saves = []  # (the save, the texts naming its file)
        for call in facts.index.calls:
            paths = file_paths(facts, call, SAVE)
            if paths and (ranks.rank_guarded(call) or distributed):
                saves.append((call, paths))
        if not saves:
            return
        hoisted = ctx.plan.hoisted
        syncs = [  # a collective every rank reaches: rank 0 is past its save when the others pass it
            c
            for c, _ in ranks.collectives_in(facts.module)
            if not ranks.rank_guarded(c) or any(c is h for h in hoisted)
        ]
        planned: list[cst.CSTNode] = []  # statements a barrier goes before (one serves the loads after it)
        for load in facts.index.calls:
            paths = file_paths(facts, load, LOAD)
            if not paths or ranks.rank_guarded(load) or _inside_print(facts, load):
                continue
            for save, saved in saves:
                if not (saved & paths) or not facts.index.before(save, load) or save is load:
                    continue
                if facts.index.scope_of(save) is not facts.index.scope_of(load):
                    continue
                if any(facts.index.before(save, b) and facts.index.before(b, load) for b in syncs):
                    continue
                stmt = _outside_loops(facts, _opening(facts, load) or facts.index.site(load).stmt, save)
                scope = facts.index.scope_of(load)
                if any(
                    facts.index.scope_of(b) is scope and facts.index.before(save, b) and not facts.index.before(stmt, b)
                    for b in planned
                ):
                    break  # a barrier planned for an earlier load already separates them
                message = None
                if facts.names.call_qual(load) != "torch.load" or facts.names.call_qual(save) != "torch.save":
                    message = (
                        f"{dotted(load.func)}() reads what {dotted(save.func)}() saved on rank 0, with no barrier "
                        "in between: the others can read it half-written"
                    )
                planned.append(stmt)  # reported or fixed alike: check and apply name the same findings
                if ctx.report(load, message):
                    dist = ctx.plan.ref("torch.distributed", "dist", style="import")
                    stmts = ctx.plan.statements("if {D}:\n    {dist}.barrier()", D=distributed_test(ctx), dist=dist)
                    ctx.plan.insert_before(stmt, stmts, order=Order.BARRIER)
                break


def _outside_loops(facts, stmt: cst.CSTNode, save: cst.Call) -> cst.CSTNode:
    """The outermost loop around `stmt` in its function that does not also hold the save (`for e in
    range(epochs): images.append(imageio.imread(...))`): one barrier before it serves every pass."""
    found = stmt
    for anc in facts.index.ancestors(stmt):
        kind = type(anc)
        if kind is cst.FunctionDef or kind is cst.ClassDef or kind is cst.Lambda:
            break
        if kind is cst.For or kind is cst.While:
            if facts.index.contains(anc, save):
                break
            found = anc
    return found


def _opening(facts, load: cst.Call) -> cst.With | None:
    """The outermost `with open(...)` (of the load's own function) the load runs in: the file is opened
    there, so the barrier goes before it, not inside it."""
    found = None
    for anc in facts.index.ancestors(load):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(anc, cst.With) and any(
            isinstance(item.item, cst.Call) and (dotted(item.item.func) or "").split(".")[-1] == "open"
            for item in anc.items
        ):
            found = anc
    return found


def _inside_print(facts, node) -> bool:
    """`print(torch.load(p))`: the print (and so the load) goes to rank 0 only (DDP406)."""
    return any(isinstance(a, cst.Call) and dotted(a.func) == "print" for a in facts.index.ancestors(node))


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        model.module.load_state_dict(torch.load("model.pt", map_location="cpu"))
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        if DISTRIBUTED:
            dist.barrier()
        model.module.load_state_dict(torch.load("model.pt", map_location="cpu"))
        """,
        note="The other ranks wait until rank 0 has written the file:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        dist.barrier()
        model.module.load_state_dict(torch.load("model.pt", map_location="cpu"))
        """,
        note="A barrier between the write and the reads:",
    ),
)
