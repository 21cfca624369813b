"""DDP302: `nn.DataParallel`: single-process multi-GPU; DistributedDataParallel takes its place under torchrun."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..analysis.dataparallel import (
    CHOICE,
    EVALUATION,
    GUARD,
    built_inside,
    dataparallel_conversions,
    part_of,
    plain_path,
)
from ..analysis.torch_api import READ_ONLY_CALLS
from ..diagnostic import SAFE, UNSAFE
from ..edits import cuda_test
from ..examples import clean, fixes
from ..handles import raw_handle
from ..plan import PlannedWrap
from ..rule import Context, Order, Rule
from ..syntax import code_of, dotted, walk

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
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
elif torch.cuda.device_count() > 1:
    print("using", torch.cuda.device_count(), "GPUs")
    model = nn.DataParallel(model)
...
torch.save(raw_model.state_dict(), "model.pt")
```
The choice is made at run time: under torchrun each process wraps its model in DDP (on a CPU
machine too, where the GPU count is 0 and a wrap left under the old test would leave N
unsynchronised copies), and `python train.py` runs the DataParallel line exactly as before. An
unconditional line becomes `if DISTRIBUTED: model = DDP(...)` / `else:` the line. `model.module`
becomes the kept `raw_model`, the plain module on every path; the process group,
`DistributedSampler` and the rank-0 guards come from the other rules.

A function of the script that builds the model and returns it, called once (`model, criterion =
set_model(opt)`; supervised-learning repositories often write it so), keeps its DataParallel line for
the plain run the same way, and the DDP wrap follows the `if` around the line, inside the function:
it returns the DDP wrapper under torchrun where it returned the DataParallel one.
```python
def set_model():
    model = Net()
    raw_model = model
    if torch.cuda.is_available():
        if torch.cuda.device_count() > 1 and not DISTRIBUTED:
            model = nn.DataParallel(model)
        model = model.cuda()
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    return model
```

A device move after the line (`model = model.cuda()`), or an `if` around it that also binds names,
touches the model or has an `else`, keeps the line too: it runs only in a plain process (`if
torch.cuda.device_count() > 1 and not DISTRIBUTED:`, or the line under `if not DISTRIBUTED:`), and
the DDP wrap follows the outermost `if` around it and the device moves after it.

A DataParallel line on a path that only evaluates and then leaves the program or the function (a
test-only branch: `if args.test_only: net = load(); net = nn.DataParallel(net); evaluate(net);
sys.exit(0)`, nothing on it reaching an optimizer or a backward, also through a function of the
script's modules) wraps no model that trains: it is
kept for the plain run (`if not DISTRIBUTED:` around it) with no DDP wrap, so under torchrun each
process evaluates with its plain model, and it does not count as a second DataParallel line of the
trained model. Where that evaluation reads `net.module` (which the plain model lacks) it is left to
the user. `net.module if use_cuda else net` (either order, with a test that only reads) becomes the
kept `raw_net`: after the conversion the wrapper is there on the CPU path too, so the choice would
pickle or save it.

So is the DataParallel line of a module the script trains nothing with and runs only under
`torch.no_grad()`, where it is bound and in the functions of this file it is handed to (pytorch-ddpm's
`net_sampler` and `ema_sampler` beside its `trainer`): under torchrun each process samples with it
plainly. An `if` that holds only lines kept for the plain run takes the test itself (`if
FLAGS.parallel and not DISTRIBUTED:`), the DDP wrap of the trained model after it.

DataParallel in both branches of an `if`/`else` (`if torch.cuda.is_available(): model =
nn.DataParallel(model).cuda()` / `else: model = nn.DataParallel(model)`) keeps both for the plain run:
`if DISTRIBUTED: model = DDP(model, ...)` goes first and the test becomes its `elif`. A move on a
line (`.cuda()`) is left to that line only where the script has moved the model already before the
`if`; where the line's move is the only one, it is converted by hand.

Where the plain run cannot be kept — several DataParallel lines of one model, a line in an `if` that
also moves the model or builds it in the call (`if n > 1: model = nn.DataParallel(Net()).cuda()`:
torchrun's ranks would not know when to move it), or a DataParallel line in a function that returns
the model with its optimizer (`model, optimizer = build(cfg)`) or is called more than once — every
DataParallel line gives way to one wrap, placed after the outermost `if` around them; the rest of the
`if` stays, an `if` that held only the DataParallel line goes, and a plain run then uses one GPU.

## Fix safety
Safe where the DataParallel line is kept for the plain run (above): `python train.py` is unchanged.
Under torchrun the batch size changes meaning: DataParallel splits one batch of `batch_size` across
the GPUs, DDP loads `batch_size` samples in every process, so the global batch grows by the number of
processes (DDP207 says so). Unsafe where the line is replaced (a plain run then uses one GPU only).
Diagnostic only, and then DDP201 shards no data (no process group and sampler without the wrap): a
DataParallel line inside a loop, alone in one branch of an `if`/`else` (the other holding none),
followed in its `if` block by code that uses the DataParallel model, or wrapping the same model in
several places; also, whatever `--unsafe-fixes` says, a DataParallel around a part of a model that
trains as a whole (`model.features = nn.DataParallel(model.features)`, the optimizer given
`model.parameters()`): a DDP around that part alone would leave the rest of the model's gradients
unsynchronised, so the message says to wrap the whole model and leave the part plain.

The rest of the conversion never comes without the wrap: wherever a trained model is in
DataParallel (also a part of it, `model.encoder = nn.DataParallel(model.encoder)`; a wrapper under
another name, `wrapper = nn.DataParallel(model)`; or a model a helper builds and returns), the
process group (DDP001), the sampler (DDP201) and the rank-0 guards are made only together with this
fix, at its level, so an apply never leaves the script half converted.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        models = {m.handle: m for m in facts.models.trained}
        conversions = dataparallel_conversions(facts.index, facts.names, facts.models)
        paths = {id(c): plain_path(c, facts.models, facts.launch) for c in conversions}
        # the lines kept for the plain run alone: an `if` holding only those takes `and not DISTRIBUTED`
        plain = PlainLines({id(c.lines[0].stmt) for c in conversions if paths[id(c)] in (EVALUATION, GUARD)})
        for conv in conversions:
            if all(facts.models.beside_ddp(line.call) for line in conv.lines):
                continue  # DataParallel offered beside the script's own DDP path: a flag picks
            owner = part_of(conv, facts.models)
            if owner is not None:  # `model.features = DataParallel(model.features)`
                why = (
                    f"around {conv.handle}, a part of {owner}, which trains as a whole: under torchrun DDP must wrap "
                    f"{owner} and leave {conv.handle} plain"
                )
                for line in conv.lines:
                    ctx.report(line.call, f"{self.message} ({why}; convert it by hand)", fix="none")
                continue
            if conv.blocker is not None or conv.handle is None:
                for line in conv.lines:
                    why = "" if conv.blocker in (None, "shape") else f" ({conv.blocker})"
                    ctx.report(line.call, self.message + why, fix="none")
                continue
            handle = conv.handle
            kept = paths[id(conv)]
            if kept == EVALUATION:
                if ctx.report(conv.lines[0].call, f"{self.message}; {EVALUATES}", fix=SAFE):
                    _plain_only(ctx, conv.lines[0].stmt, plain)
                continue
            message, level = (f"{self.message}; {KEPT}", SAFE) if kept else (f"{self.message}; {BATCH}", None)
            applied = [ctx.report(line.call, message, fix=level) for line in conv.lines]
            if kept == CHOICE and isinstance(conv.lines[0].top, cst.If):  # (in `check` too, as apply makes it)
                ctx.plan.plain_only.add(conv.lines[0].top.body)  # its prints need no guard: ranks take the DDP branch
                if conv.both:
                    ctx.plan.plain_only.add(conv.lines[0].top.orelse.body)  # type: ignore[union-attr]
            model = models.get(handle)
            if not all(applied):
                if kept is not None and not ctx.fixing:  # `check`: what reads through the wrap reports as apply does
                    raw = raw_handle(ctx, model) if model is not None else ctx.plan.fresh("raw_model")
                    ctx.plan.wraps[handle] = PlannedWrap(raw, conv.target)
                continue
            raw = raw_handle(ctx, model) if model is not None else ctx.plan.fresh("raw_model")
            if kept is not None:
                if kept == CHOICE:
                    _choose_at_run_time(ctx, conv, raw)
                else:
                    _keep_for_plain_run(ctx, conv, raw, plain)
                continue
            last = conv.lines[-1]
            wrap = _ddp_wrap(ctx, handle, handle, last.top)
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
            ctx.plan.wraps[handle] = PlannedWrap(raw, conv.target, UNSAFE)
            _unwrap_module_reads(ctx, handle, raw, conv.target)


@dataclass
class PlainLines:
    """The DataParallel lines (statement ids) this pass keeps for the plain run alone, and the `if`s whose
    test already says `and not DISTRIBUTED`."""

    lines: set[int]
    tests: set[int] = field(default_factory=set)


BATCH = "DataParallel's batch is global, DDP's is per process"
EVALUATES = (
    "this path only evaluates and leaves: under torchrun each process evaluates with its plain model, "
    "and a plain run keeps DataParallel"
)
KEPT = "under torchrun DDP takes its place, and a plain run keeps it (DDP's batch is per process, see DDP207)"


def _choose_at_run_time(ctx: Context, conv, raw: str) -> None:
    """The DataParallel line stays for the plain run, and under torchrun the DDP wrap runs in its place:
    `model = nn.DataParallel(model)` becomes `if DISTRIBUTED: model = DDP(model, ...)` / `else:` the line;
    an `if torch.cuda.device_count() > 1:` around it becomes the `elif` of that choice (on a CPU machine
    torchrun's ranks are wrapped too). `raw_model` is the plain module on both paths."""
    line, handle = conv.lines[0], conv.handle
    top = line.top
    plan = ctx.plan
    unwrapped, first = (handle, []) if conv.both else _bound_first(ctx, line, handle)
    wrap = _ddp_wrap(ctx, handle, unwrapped, top)

    def choose(node: cst.CSTNode, wrap=wrap) -> cst.If:
        if isinstance(node, cst.If):  # the test around the line: its branch, now an elif
            orelse = node.with_changes(leading_lines=())
        else:
            orelse = cst.Else(body=cst.IndentedBlock(body=[node.with_changes(leading_lines=())]))
        return wrap.with_changes(orelse=orelse, leading_lines=node.leading_lines)

    plan.insert_before(top, plan.statements("\n".join([*first, f"{raw} = {handle}"])), order=Order.WRAP)
    plan.replace(top, choose)
    plan.wraps[handle] = PlannedWrap(raw, top)
    _unwrap_module_reads(ctx, handle, raw, top)


def _keep_for_plain_run(ctx: Context, conv, raw: str, plain: PlainLines) -> None:
    """The DataParallel line runs only in a plain process (`if torch.cuda.device_count() > 1 and not
    DISTRIBUTED:`, or the line under `if not DISTRIBUTED:`), and under torchrun the DDP wrap follows the
    `if` around it and the device moves after it (`model = model.cuda()`), where `DDP302`'s wrap goes."""
    line, handle = conv.lines[0], conv.handle
    plan = ctx.plan
    unwrapped, first = _bound_first(ctx, line, handle)
    _plain_only(ctx, line.stmt, plain)
    wrap = [_ddp_wrap(ctx, handle, unwrapped, conv.target)]
    plan.insert_before(line.top, plan.statements("\n".join([*first, f"{raw} = {handle}"])), order=Order.WRAP)
    plan.insert_after(conv.target, wrap, order=Order.WRAP)
    plan.wraps[handle] = PlannedWrap(raw, conv.target)
    _unwrap_module_reads(ctx, handle, raw, conv.target)


def _plain_only(ctx: Context, stmt: cst.BaseStatement, plain: PlainLines) -> None:
    """The line runs only in a plain process: `if n > 1 and not DISTRIBUTED:` where an `if` holds it
    alone, else the line under `if not DISTRIBUTED:`."""
    plan = ctx.plan
    distributed = ctx.env("DISTRIBUTED")
    owner = _sole_statement_of(ctx, stmt) or _only_plain_lines(ctx, stmt, plain)
    if owner is not None:  # `if n > 1:` around the line alone (or around such lines only): the test says it
        if id(owner) not in plain.tests:
            plain.tests.add(id(owner))
            plan.replace(owner, lambda n, d=distributed: n.with_changes(test=_and_not(n.test, d)))
        return
    guarded = plan.statements(f"if not {distributed}:\n    pass")[0]

    def keep(node: cst.CSTNode, guarded=guarded) -> cst.If:
        body = guarded.body.with_changes(body=[node.with_changes(leading_lines=())])
        return guarded.with_changes(body=body, leading_lines=node.leading_lines)

    plan.replace(stmt, keep)


def _ddp_wrap(ctx: Context, handle: str, module: str, at: cst.CSTNode) -> cst.If:
    """`if DISTRIBUTED: handle = DDP(module, device_ids=[LOCAL_RANK] if <on CUDA> else None)`."""
    wrap = ctx.plan.statements(
        """
        if {D}:
            {m} = {ddp}({u}, device_ids=[{L}] if {cuda} else None)
        """,
        D=ctx.env("DISTRIBUTED"),
        m=handle,
        ddp=ctx.plan.ref(DDP, "DDP"),
        u=module,
        L=ctx.env("LOCAL_RANK"),
        cuda=cuda_test(ctx, handle, at),
    )[0]
    assert isinstance(wrap, cst.If)
    return wrap


def _bound_first(ctx: Context, line, handle: str) -> tuple[str, list[str]]:
    """For a line that wraps a module it builds or names (`model = nn.DataParallel(Net())`): the module
    is bound to the handle first (`model = Net()`) and the line wraps the handle. The expression the
    DDP wrap takes (`model`, `model.cuda()`) and the statements that go first."""
    inner = built_inside(line, handle)
    if inner is None:
        return line.unwrapped, []
    ctx.plan.replace(inner, lambda n, h=handle: cst.Name(h))
    built = code_of(inner)
    return handle + line.unwrapped[len(built) :], [f"{handle} = {built}"]


def _sole_statement_of(ctx: Context, stmt: cst.CSTNode) -> cst.If | None:
    """The `if` (no `else`) whose body is `stmt` alone, if any."""
    block = ctx.facts.index.parent.get(stmt)
    owner = ctx.facts.index.parent.get(block) if isinstance(block, cst.IndentedBlock) else None
    if isinstance(owner, cst.If) and owner.body is block and len(block.body) == 1 and owner.orelse is None:
        return owner
    return None


def _only_plain_lines(ctx: Context, stmt: cst.CSTNode, plain: PlainLines) -> cst.If | None:
    """The `if` (no `else`) around `stmt` whose body holds only DataParallel lines kept for the plain
    run (`if FLAGS.parallel:` around the trainer's and the samplers' lines)."""
    block = ctx.facts.index.parent.get(stmt)
    owner = ctx.facts.index.parent.get(block) if isinstance(block, cst.IndentedBlock) else None
    if not (isinstance(owner, cst.If) and owner.body is block and owner.orelse is None):
        return None
    return owner if all(id(s) in plain.lines for s in block.body) else None


def _and_not(test: cst.BaseExpression, name: str) -> cst.BaseExpression:
    """`test and not name`, with parentheses around a test that binds more loosely than `and`."""
    if isinstance(test, (cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)) and not test.lpar:
        test = test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BooleanOperation(left=test, operator=cst.And(), right=cst.parse_expression(f"not {name}"))


def _unwrap_module_reads(ctx: Context, handle: str, raw: str, target: cst.CSTNode) -> None:
    """`model.module` after the wrap reads `raw_model`: the plain module on every path (a plain run
    whose DataParallel line did not run, or was replaced, has no `.module`)."""
    facts = ctx.facts
    for node in walk(facts.module):
        if (
            isinstance(node, cst.Attribute)
            and dotted(node) == f"{handle}.module"
            and facts.wraps.after_wrap(node, handle, target)
        ):
            either = facts.index.parent.get(node)
            if isinstance(either, cst.IfExp) and _either_module(facts, either, handle):
                node = either  # `net.module if use_cuda else net`: the plain module either way
            ctx.plan.replace(node, lambda n, raw=raw: cst.parse_expression(raw))


READ_ONLY_TESTS = READ_ONLY_CALLS | {"isinstance", "hasattr"}


def _either_module(facts, choice: cst.IfExp, handle: str) -> bool:
    """`handle.module if TEST else handle` (or the other way round) with a TEST that does nothing but
    read: after the conversion both branches are the plain module, and the choice can go."""
    branches = {dotted(choice.body), dotted(choice.orelse)}
    if branches != {handle, f"{handle}.module"}:
        return False
    return not any(
        isinstance(n, (cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda))
        or (isinstance(n, cst.Call) and facts.names.call_qual(n) not in READ_ONLY_TESTS)
        for n in walk(choice.test)
    )


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
            elif torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
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
            "One process per GPU under torchrun, DataParallel as before in a plain run; `model.module` "
            "becomes the kept `raw_model`, the plain module on both paths:"
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
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
            elif torch.cuda.device_count() > 1:
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
        note="A DataParallel line that shares its `if` block with a print: the block becomes the plain run's branch:",
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
            batch = 8
            if torch.cuda.device_count() > 1:
                batch *= torch.cuda.device_count()
                model = nn.DataParallel(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(batch, 4, device=device)).pow(2).mean()
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
            batch = 8
            if torch.cuda.device_count() > 1:
                batch *= torch.cuda.device_count()
                if not DISTRIBUTED:
                    model = nn.DataParallel(model)
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(batch, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note=(
            "An `if` that also binds a name (`batch` grows with the GPUs) still runs under torchrun: the line "
            "runs only in a plain process, and the DDP wrap follows the `if`:"
        ),
    ),
    fixes(
        """
        import torch
        import torch.nn as nn


        def set_model():
            model = nn.Linear(4, 1)
            if torch.cuda.is_available():
                if torch.cuda.device_count() > 1:
                    model = nn.DataParallel(model)
                model = model.cuda()
            return model


        def main():
            model = set_model()
            device = next(model.parameters()).device
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
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
        from torch.nn.parallel import DistributedDataParallel as DDP


        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1


        def set_model():
            model = nn.Linear(4, 1)
            if torch.cuda.is_available():
                if torch.cuda.device_count() > 1 and not DISTRIBUTED:
                    model = nn.DataParallel(model)
                model = model.cuda()
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
            return model


        def main():
            if DISTRIBUTED:
                if torch.cuda.is_available():
                    torch.cuda.set_device(LOCAL_RANK)
                dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

            model = set_model()
            device = next(model.parameters()).device
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()

            if DISTRIBUTED:
                dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note=(
            "A function that builds the model and returns it, called once: the DataParallel line is kept for the "
            "plain run, and the DDP wrap follows the `if` around it inside the function, which returns the wrapper:"
        ),
    ),
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn


        def main(data_parallel=False):
            dist.init_process_group("gloo")
            model = nn.Linear(4, 1)
            if torch.cuda.device_count() > 1:
                model = nn.DataParallel(model)
            if data_parallel:
                model = nn.DataParallel(model)
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
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1


        def main(data_parallel=False):
            dist.init_process_group("gloo")
            model = nn.Linear(4, 1)
            if DISTRIBUTED:
                model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
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
        note=(
            "The model wrapped in two places: one DDP wrap replaces both lines, after the last `if`, and a "
            "plain run then uses one GPU (unsafe):"
        ),
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
