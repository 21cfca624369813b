"""DDP001: the script trains a model but never joins a process group."""

from __future__ import annotations

import libcst as cst

from ..edits import backend_choice, torch_name
from ..examples import clean, fixes
from ..rule import Context, Order, Rule
from ..syntax import anchor_of, single_small, strip_docstring


class MissingProcessGroup(Rule):
    code = "DDP001"
    name = "missing-process-group"
    message = "trains a model but never joins a process group: add init_process_group/destroy_process_group"
    docs = """
## What
A training script with no `torch.distributed.init_process_group()` call.

## Why
Under `torchrun` every process runs the script on its own: without a process group there is no
gradient synchronisation, and `DistributedSampler`/`DistributedDataParallel` fail with
`ValueError: Default process group has not been initialized, please make sure to call init_process_group.`

## Example
```python
def main():
    model = Net().to(device)
```
becomes
```python
RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
    model = Net().to(device)
    ...
    if DISTRIBUTED:
        dist.destroy_process_group()
```
`set_device` comes first so every process creates its CUDA context on its own GPU; the backend
follows the hardware: with CUDA, NCCL for CUDA tensors and gloo for CPU ones (so a model the script
keeps on the CPU still trains; a plain `"nccl"` group fails there with `No backend type associated
with device type cpu`), gloo without CUDA. A plain `python train.py` has WORLD_SIZE 1 and
creates no process group, so it behaves exactly as before.

## Fix safety
Safe. Setup goes at the top of the entry point (the function `__main__` calls, or after the imports
of a module-level script); teardown at its end.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        launch = facts.launch
        if launch.init_calls or launch.spawn_calls or not facts.training.trains or not launch.is_program:
            return  # a module other files import gets no process group of its own
        if launch.joins_elsewhere is not False:
            return  # joined through the script's own modules, or maybe through one that could not be read
        if facts.models.trained:
            where = facts.models.trained[0].definition.stmt
        elif facts.training.optimizer_sites:
            where = facts.training.optimizer_sites[0].stmt
        else:
            where = facts.index.site(facts.training.backward_calls[0]).stmt
        if not ctx.report(anchor_of(where)):
            return
        torch = torch_name(ctx)
        dist = ctx.plan.ref("torch.distributed", "dist", style="import")
        names = dict(torch=torch, dist=dist, D=ctx.env("DISTRIBUTED"), L=ctx.env("LOCAL_RANK"))
        setup = ctx.plan.statements(
            """
            if {D}:
                if {torch}.cuda.is_available():
                    {torch}.cuda.set_device({L})
                {dist}.init_process_group({backend})
            """,
            backend=backend_choice(ctx),
            **names,
        )
        teardown = ctx.plan.statements(
            """

            if {D}:
                {dist}.destroy_process_group()
            """,
            **names,
        )
        entry = facts.launch.entry
        if isinstance(entry, cst.Module):
            setup[0] = setup[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
            anchor = ctx.plan.import_anchor()
            if anchor is not None:
                ctx.plan.insert_after(anchor, setup, order=Order.PROCESS_GROUP)
            else:
                ctx.plan.prepend(facts.module, setup, order=Order.PROCESS_GROUP)
            ctx.plan.insert_after(facts.module.body[-1], teardown, order=Order.TEARDOWN)
            return
        block = entry.body
        body = list(block.body)
        first = strip_docstring(body)
        if first < len(body):
            ctx.plan.insert_before(body[first], setup, order=Order.PROCESS_GROUP, blank_after=True)
        else:
            ctx.plan.insert_after(body[-1], setup, order=Order.PROCESS_GROUP)
        last = body[-1]
        if isinstance(single_small(last), cst.Return):
            ctx.plan.insert_before(
                last, [teardown[0].with_changes(leading_lines=[])], order=Order.TEARDOWN, blank_after=True
            )
        else:
            ctx.plan.insert_after(last, teardown, order=Order.TEARDOWN)


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn


        def main():
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
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


        def main():
            if DISTRIBUTED:
                if torch.cuda.is_available():
                    torch.cuda.set_device(LOCAL_RANK)
                dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()

            if DISTRIBUTED:
                dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note=(
            "The entry point joins a process group first and leaves it last; a plain `python train.py` has "
            "WORLD_SIZE 1 and joins none:"
        ),
    ),
    fixes(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
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

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        if DISTRIBUTED:
            dist.destroy_process_group()
        """,
        note="A script that trains at module level joins after its imports and leaves at its end:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main():
            dist.init_process_group("gloo")
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note="A script that already joins a process group:",
    ),
    clean(
        """
        import torch


        def train(model, batches, lr=0.1):
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            for x, y in batches:
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note=(
            "A module of training helpers that other scripts import: it is not a program, so the script that "
            "runs it joins the group:"
        ),
    ),
)
