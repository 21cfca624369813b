"""DDP401: torch.save on every rank."""

from __future__ import annotations

from ..edits import guard_site
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import dotted, method_name


class UnguardedSave(Rule):
    code = "DDP401"
    name = "unguarded-save"
    message = "torch.save runs on every rank: all processes write the same file"
    requires = ()
    docs = """
## What
`torch.save(...)` outside any rank-0 condition.

## Why
Every process writes the same path at the same time: the checkpoint is clobbered or torn, and N
processes do the I/O of one.

## Example
```python
torch.save(raw_model.state_dict(), "checkpoint.pt")
```
becomes
```python
if RANK == 0:
    torch.save(raw_model.state_dict(), "checkpoint.pt")
```
Adjacent statements that need the same guard (a print, a log line) share the one `if`. A
`with open(path, "wb") as f: torch.save(..., f)` is guarded as a whole, since the `open` truncates.

## Fix safety
Safe. Uses the global `RANK` (one writer per job, not per node).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.index.statement_calls(lambda c: _writes_file(facts, c)):
            name = "torch.save" if facts.names.call_qual(call) == "torch.save" else (dotted(call.func) or "this call")
            guard_site(
                ctx,
                call,
                None if name == "torch.save" else f"{name} runs on every rank: all processes write the same file",
            )


WRITERS = {
    "torch.save",
    "torchvision.utils.save_image",
    "numpy.save",
    "numpy.savez",
    "numpy.savez_compressed",
    "numpy.savetxt",
    "matplotlib.pyplot.savefig",
}


def _writes_file(facts, call) -> bool:
    """torch.save and the other common writers of checkpoints and artefacts (`save_pretrained` too)."""
    if facts.names.call_qual(call) in WRITERS:
        return True
    return method_name(call) == "save_pretrained"


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
        for epoch in range(3):
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            if RANK == 0:
                torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
        """,
        note="One writer per job: the global rank 0:",
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
        for epoch in range(3):
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            if dist.get_rank() == 0:
                torch.save(model.module.state_dict(), f"epoch{epoch}.pt")
        """,
        note="Saved on rank 0 only:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def save(model, path):
            torch.save(model.module.state_dict(), path)


        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            save(model, "model.pt")
        """,
        note="A helper that saves, called on rank 0 only:",
    ),
)
