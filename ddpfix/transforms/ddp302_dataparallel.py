"""DDP302: `nn.DataParallel`: single-process multi-GPU, replaced by DistributedDataParallel."""

from __future__ import annotations

import libcst as cst

from ..analysis.dataparallel import dataparallel_conversions
from ..diagnostic import UNSAFE
from ..edits import cuda_test
from ..examples import clean, fixes
from ..handles import raw_handle
from ..plan import PlannedWrap
from ..rule import Context, Order, Rule
from ..syntax import dotted, walk

DDP = "torch.nn.parallel.DistributedDataParallel"


class DataParallelToDdp(Rule):
    code = "DDP302"
    name = "dataparallel"
    message = "nn.DataParallel: one process drives every GPU; use DistributedDataParallel under torchrun"
    fix = UNSAFE
    requires = ("DDP001",)
    provides = frozenset({"wraps"})
    docs = """
## What
`model = nn.DataParallel(model)` (also with `device_ids=`, a trailing `.to(device)` / `.cuda()`,
inside `if torch.cuda.device_count() > 1:` with other statements, under a flag that is off by
default, in an `elif`, or in dead code such as `if False:`). A DataParallel line in one branch of an
`if` whose other branch wraps the model in DDP is a choice the script offers on purpose
(`if args.dataparallel: ... else: model = DDP(model, ...)`) and is left alone.

## Why
DataParallel is single-process and multi-threaded: it scatters every batch from GPU 0, replicates
the model on each forward and gathers the outputs back, so GPU 0 is the bottleneck, and the GIL
limits the rest. PyTorch recommends DistributedDataParallel even on a single machine. Under
`torchrun`, a DataParallel script starts N processes that each grab every GPU.

## Example
```python
model = Net().to(device)
if torch.cuda.device_count() > 1:
    print("using", torch.cuda.device_count(), "GPUs")
    model = nn.DataParallel(model)
...
torch.save(model.module.state_dict(), "model.pt")
```
becomes
```python
model = Net().to(device)
if torch.cuda.device_count() > 1:
    print("using", torch.cuda.device_count(), "GPUs")
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
...
torch.save(raw_model.state_dict(), "model.pt")
```
Every DataParallel line of a model gives way to one wrap, placed after the outermost `if` around
them, so it runs whatever that test was (on a CPU machine the GPU count is 0, and a wrap left under
it would leave N unsynchronised copies). The rest of the `if` stays; an `if` that held only the
DataParallel line goes. `model.module` (which a plain run no longer has) becomes the kept
`raw_model`; the process group, `DistributedSampler` and the rank-0 guards come from the other rules.

## Fix safety
Unsafe: the batch size changes meaning. DataParallel splits one batch of `batch_size` across the
GPUs; under DDP every process loads `batch_size` samples, so the global batch grows by the number of
processes (see DDP207). Halve the per-process batch or scale the learning rate deliberately. A
plain `python train.py` now runs on one GPU only. Diagnostic only, and then DDP201 shards no data
(no process group and sampler without the wrap): a DataParallel line inside a loop, alone in a branch
of an `if`/`else`, followed in its `if` block by code that uses the DataParallel model, or wrapping
the same model in several places.

The rest of the conversion never comes without the wrap: wherever a trained model is in
DataParallel (also a part of it, `model.encoder = nn.DataParallel(model.encoder)`; a wrapper under
another name, `wrapper = nn.DataParallel(model)`; or a model a helper builds and returns), the
process group (DDP001), the sampler (DDP201) and the rank-0 guards are made only together with this
fix, so a safe apply leaves the script whole rather than half converted.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        models = {m.handle: m for m in facts.models.trained}
        for conv in dataparallel_conversions(facts.index, facts.names, facts.models):
            if all(facts.models.beside_ddp(line.call) for line in conv.lines):
                continue  # DataParallel offered beside the script's own DDP path: a flag picks
            if conv.blocker is not None or conv.handle is None:
                for line in conv.lines:
                    why = "" if conv.blocker in (None, "shape") else f" ({conv.blocker})"
                    ctx.report(line.call, self.message + why, fix="none")
                continue
            handle = conv.handle
            applied = [ctx.report(line.call, f"{self.message}; {BATCH}") for line in conv.lines]
            if not all(applied):
                continue
            model = models.get(handle)
            raw = raw_handle(ctx, model) if model is not None else ctx.plan.fresh("raw_model")
            last = conv.lines[-1]
            wrap = ctx.plan.statements(
                """
                if {D}:
                    {m} = {ddp}({m}, device_ids=[{L}] if {cuda} else None)
                """,
                D=ctx.env("DISTRIBUTED"),
                m=handle,
                ddp=ctx.plan.ref(DDP, "DDP"),
                L=ctx.env("LOCAL_RANK"),
                cuda=cuda_test(ctx, handle, last.top),
            )[0]
            for line in conv.lines[:-1]:
                _drop(ctx, line, handle)
            if conv.later is not None or not last.whole:
                _drop(ctx, last, handle)
                ctx.plan.insert_after(conv.target, [*ctx.plan.statements(f"{raw} = {handle}"), wrap], order=Order.WRAP)
            else:  # the line (or the if it alone filled) becomes the wrap, keeping its place and comments
                lines = [] if last.unwrapped == handle else [f"{handle} = {last.unwrapped}"]
                ctx.plan.insert_before(
                    last.top, ctx.plan.statements("\n".join([*lines, f"{raw} = {handle}"])), order=Order.WRAP
                )
                if last.top is last.stmt and isinstance(last.stmt, cst.SimpleStatementLine):
                    wrap = wrap.with_changes(body=wrap.body.with_changes(header=last.stmt.trailing_whitespace))
                ctx.plan.replace(last.top, lambda n, wrap=wrap: wrap.with_changes(leading_lines=n.leading_lines))
            ctx.plan.wraps[handle] = PlannedWrap(raw, conv.target)
            for node in walk(facts.module):  # model.module: a plain run has no .module any more
                if (
                    isinstance(node, cst.Attribute)
                    and dotted(node) == f"{handle}.module"
                    and facts.wraps.after_wrap(node, handle, conv.target)
                ):
                    ctx.plan.replace(node, lambda n, raw=raw: cst.parse_expression(raw))


BATCH = "DataParallel's batch is global, DDP's is per process"


def _drop(ctx: Context, line, handle: str) -> None:
    """A DataParallel line that the one wrap replaces: it goes (with the `if` it alone filled), or
    keeps what it builds or moves (`model = Net()`, `model = model.to(device)`)."""
    if line.whole and line.unwrapped == handle:
        ctx.plan.moved.add(line.top)
    elif line.delete is not None:
        outer = ctx.facts.index.parent.get(line.delete)
        if isinstance(outer, cst.If):  # an elif: the if goes on with the elif's own else
            ctx.plan.replace(outer, lambda n: n.with_changes(orelse=n.orelse.orelse))
        else:
            ctx.plan.moved.add(line.delete)
    else:
        stmt = ctx.plan.statements(f"{handle} = {line.unwrapped}")[0]
        ctx.plan.replace(line.stmt, lambda n, stmt=stmt: stmt.with_changes(leading_lines=n.leading_lines))


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1).to(device)
            if torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            torch.save(model.module.state_dict(), "model.pt")


        if __name__ == "__main__":
            main()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1


        def main():
            if DISTRIBUTED:
                if torch.cuda.is_available():
                    torch.cuda.set_device(LOCAL_RANK)
                dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1).to(device)
            raw_model = model
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            torch.save(raw_model.state_dict(), "model.pt")

            if DISTRIBUTED:
                dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note=(
            "One process per GPU instead of one thread per GPU; `model.module` (which a plain run no longer "
            "has) becomes the kept `raw_model`:"
        ),
    ),
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn


        def main():
            dist.init_process_group("gloo")
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1).to(device)
            if torch.cuda.device_count() > 1:
                print(f"using {torch.cuda.device_count()} GPUs")
                model = nn.DataParallel(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1


        def main():
            dist.init_process_group("gloo")
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1).to(device)
            if torch.cuda.device_count() > 1:
                print(f"using {torch.cuda.device_count()} GPUs")
            raw_model = model
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note="A DataParallel wrap that shares its `if` block with other statements: the block keeps them, the DDP wrap goes after it:",
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
        note="DistributedDataParallel already:",
    ),
    clean(
        """
        import argparse
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--dataparallel", action="store_true")
        args = parser.parse_args()
        model = nn.Linear(4, 1)
        if args.dataparallel:
            model = nn.DataParallel(model)
        elif int(os.environ.get("WORLD_SIZE", 1)) > 1:
            dist.init_process_group("gloo")
            model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="DataParallel offered beside the script's own DDP path, a flag picking one:",
    ),
)
