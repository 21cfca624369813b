"""DDP302: `nn.DataParallel`: single-process multi-GPU, replaced by DistributedDataParallel."""

from __future__ import annotations

import libcst as cst

from ..analysis.models import DP_NAMES, moves_device
from ..diagnostic import UNSAFE
from ..edits import cuda_test
from ..examples import clean, fixes, reports
from ..handles import raw_handle
from ..plan import PlannedWrap
from ..rule import Context, Order, Rule
from ..syntax import assign_targets, assigned_value, code_of, dotted, kwarg, mentions, positional, walk

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
`model = nn.DataParallel(model)` (also with `device_ids=`, a trailing `.to(device)` / `.cuda()`, or
inside `if torch.cuda.device_count() > 1:`).

## Why
DataParallel is single-process and multi-threaded: it scatters every batch from GPU 0, replicates
the model on each forward and gathers the outputs back, so GPU 0 is the bottleneck, and the GIL
limits the rest. PyTorch recommends DistributedDataParallel even on a single machine. Under
`torchrun`, a DataParallel script starts N processes that each grab every GPU.

## Example
```python
model = Net().to(device)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
...
torch.save(model.module.state_dict(), "model.pt")
```
becomes
```python
model = Net().to(device)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
...
torch.save(raw_model.state_dict(), "model.pt")
```
`model.module` (which a plain run no longer has) becomes the kept `raw_model`; the process group,
`DistributedSampler` and the rank-0 guards come from the other rules.

## Fix safety
Unsafe: the batch size changes meaning. DataParallel splits one batch of `batch_size` across the
GPUs; under DDP every process loads `batch_size` samples, so the global batch grows by the number of
processes (see DDP207). Halve the per-process batch or scale the learning rate deliberately. A
plain `python train.py` now runs on one GPU only. Not fixed when the wrap shares an `if` block with
other statements.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        models = {m.handle: m for m in facts.models.trained}
        for call in facts.names.calls_matching(lambda q: q in DP_NAMES):
            site = facts.index.site(call)
            stmt = site.stmt
            value = assigned_value(stmt)
            targets = assign_targets(stmt)
            module = positional(call, 0) or kwarg(call, "module")
            if (
                len(targets) != 1
                or value is None
                or module is None
                or not _chain_holds(value, call)
                or facts.index.in_one_line_suite(stmt)
            ):
                ctx.report(call, fix="none")
                continue
            handle = targets[0]
            target = stmt
            owner = facts.index.parent.get(site.block)
            if isinstance(owner, cst.If) and owner.body is site.block:
                if len(site.block.body) != 1 or owner.orelse is not None:
                    ctx.report(call, self.message + " (the wrap shares its if block: convert it by hand)", fix="none")
                    continue
                target = owner  # `if torch.cuda.device_count() > 1:` goes: torchrun decides the process count
            if not ctx.report(call, f"{self.message}; DataParallel's batch is global, DDP's is per process"):
                continue
            model = models.get(handle)
            raw = raw_handle(ctx, model) if model is not None else ctx.plan.fresh("raw_model")
            unwrapped = code_of(value.deep_replace(call, module.value))  # type: ignore[arg-type]
            lines = [] if unwrapped == handle else [f"{handle} = {unwrapped}"]
            lines.append(f"{raw} = {handle}")
            before = ctx.plan.statements("\n".join(lines))
            wrap = ctx.plan.statements(
                """
                if {D}:
                    {m} = {ddp}({m}, device_ids=[{L}] if {cuda} else None)
                """,
                D=ctx.env("DISTRIBUTED"),
                m=handle,
                ddp=ctx.plan.ref(DDP, "DDP"),
                L=ctx.env("LOCAL_RANK"),
                cuda=cuda_test(ctx, handle, target),
            )[0]
            if isinstance(stmt, cst.SimpleStatementLine) and target is stmt and isinstance(wrap, cst.If):
                wrap = wrap.with_changes(
                    body=wrap.body.with_changes(header=stmt.trailing_whitespace)
                )  # keep a trailing comment
            later = _later_device_move(facts, target, handle)
            if later is not None and unwrapped == handle:
                # `model = nn.DataParallel(model)` then `model.to(device)`: DDP must wrap the moved
                # module, so the DataParallel line goes and the wrap follows the move
                ctx.plan.moved.add(target)
                ctx.plan.insert_after(later, [*before, wrap.with_changes(leading_lines=[])], order=Order.WRAP)
                target = later
            else:
                ctx.plan.insert_before(target, before, order=Order.WRAP)
                ctx.plan.replace(target, lambda n, wrap=wrap: wrap.with_changes(leading_lines=n.leading_lines))
            ctx.plan.wraps[handle] = PlannedWrap(raw, target)
            for node in walk(facts.module):  # model.module: a plain run has no .module any more
                if (
                    isinstance(node, cst.Attribute)
                    and dotted(node) == f"{handle}.module"
                    and facts.wraps.after_wrap(node, handle, target)
                ):
                    ctx.plan.replace(node, lambda n, raw=raw: cst.parse_expression(raw))


def _later_device_move(facts, target: cst.CSTNode, handle: str) -> cst.BaseStatement | None:
    """The last statement after `target` in its block that moves `handle` to a device, before the
    model is first used (`model = model.to(device)`, `model.cuda()`)."""
    block = facts.index.parent.get(target)
    body = list(getattr(block, "body", []))
    idx = next((i for i, s in enumerate(body) if s is target), None)
    if idx is None:
        return None
    found = None
    for stmt in body[idx + 1 :]:
        if isinstance(stmt, (cst.For, cst.While)):
            break
        if not mentions(stmt, handle):
            continue
        kind = facts.models.use_of(stmt, handle)
        if kind == "use":
            break
        if kind == "prep" and moves_device(stmt, handle):
            found = stmt
    return found


def _chain_holds(value: cst.BaseExpression, call: cst.Call) -> bool:
    """`DataParallel(m)`, `DataParallel(m).to(device)`, `DataParallel(m).cuda()`: the wrap and device moves only."""
    while value is not call:
        if not (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("to", "cuda")
        ):
            return False
        value = value.func.value
    return True


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


        RANK = int(os.environ.get("RANK", 0))
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
    reports(
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
        message=(
            "nn.DataParallel: one process drives every GPU; use DistributedDataParallel under torchrun (the "
            "wrap shares its if block: convert it by hand)"
        ),
        note="Reported without a fix: the wrap shares its `if` block with other statements:",
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
)
