"""DDP008: the script hands its distribution to a framework; ddpfix leaves it alone (information)."""

from __future__ import annotations

from ..examples import clean, reports
from ..rule import NONE, Context, Rule


class HandledByFramework(Rule):
    code = "DDP008"
    name = "handled-by-framework"
    message = "distribution is handled by a framework: ddpfix leaves this script alone"
    fix = NONE
    info = True
    docs = """
## What
An information line for a script that hands its distribution to a framework: Accelerate
(`Accelerator`), Lightning or Fabric, DeepSpeed, a Hugging Face `Trainer`/`Seq2SeqTrainer` or a TRL
trainer, Horovod, FSDP, a `torch.distributed.elastic` agent or launcher, an MMEngine/MMCV runner,
ColossalAI, FairScale or PyTorch/XLA. It points at the import that brings the framework in; no other
rule runs on the script, and `ddpfix apply` changes nothing.

## Why
Those frameworks create the process group, shard the data and wrap (or shard) the model
themselves: a second `init_process_group`, a `DistributedSampler` or a DDP wrap written over theirs
breaks them (`RuntimeError: trying to initialize the default process group twice!`, models wrapped
twice, loaders sharded twice). Launch the script the framework's way (`accelerate launch`,
`deepspeed`, `torchrun` for a Trainer script).

## Example
```python
from accelerate import Accelerator

accelerator = Accelerator()
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
```
gets `DDP008 distribution is handled by Accelerate: ddpfix leaves this script alone`.

## Fix safety
Nothing to fix. Utilities that do not take over the training (`accelerate.utils.set_seed`,
`torch.distributed.elastic.multiprocessing.errors.record`, a transformers model without a trainer)
do not count: such scripts are converted as usual. Like every finding, the line makes `ddpfix check`
exit 1; where a check over a repository must pass on such scripts, ignore the code there
(`--ignore DDP008`, or `ignore = ["DDP008"]` under `[tool.ddpfix]`).
"""

    def run(self, ctx: Context) -> None:
        names = ctx.facts.names
        framework = names.other_launcher
        node = names.launcher_import
        if framework is not None and node is not None:
            ctx.report(node, f"distribution is handled by {framework}: ddpfix leaves this script alone")


EXAMPLES = (
    reports(
        """
        import torch
        import torch.nn as nn
        from accelerate import Accelerator

        accelerator = Accelerator()
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model, opt = accelerator.prepare(model, opt)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            accelerator.backward(loss)
            opt.step()
        """,
        message="distribution is handled by Accelerate: ddpfix leaves this script alone",
        note="Accelerate sets up the processes, the sampler and the wrapper: one line says so, nothing changes:",
    ),
    clean(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset
        from tqdm import tqdm

        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in tqdm(loader):
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A plain PyTorch script (tqdm is a library, not a framework that distributes):",
    ),
)
