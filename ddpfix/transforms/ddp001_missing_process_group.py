"""DDP001: the script trains a model but never joins a process group."""

from __future__ import annotations

import libcst as cst

from ..analysis.dataparallel import conversion_blocked, converts_keeping_plain_path, dataparallel_trains
from ..analysis.flow import binds
from ..analysis.unseen_models import why_no_wrap
from ..edits import backend_choice, torch_name
from ..examples import clean, fixes
from ..handed_wraps import withheld as handed_withheld
from ..module_wraps import withheld
from ..rule import NONE, UNSAFE, Context, Order, Rule
from ..syntax import anchor_of, dotted, single_small, strip_docstring


class MissingProcessGroup(Rule):
    code = "DDP001"
    name = "missing-process-group"
    provides = frozenset({"joins"})
    message = "trains a model but never joins a process group: add init_process_group/destroy_process_group"
    docs = """
## What
A training script with no `torch.distributed.init_process_group()` call, neither in the file nor in
a helper of the script's own modules (`utils.init_distributed_mode(args)`, read from the files next
to the script). A module other files import (no `__main__` block, no module-level training, also
none through a function or class of the script's own modules: `Trainer(model, loader).fit(2)`) is
not a program: it gets no process group of its own, and no rule inserts a wrap or sampler into it;
its findings offer no fix, in `check` as in `apply`.

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

Where it goes: at the top of the entry point (the function `__main__` calls or hands to `fire.Fire`
/ `typer.run`, the `__main__` block, or the `main()` a console entry point calls), after any import
that function makes of what the setup uses. When the model or the training loader is built at module
level (a script without `main()`, or globals that functions read), the setup goes at module level:
after the imports and before the first statement that needs it, including statements other fixes
insert (a sampler built before a mid-file import) and functions called at module level. The
constants are placed the same way: never above the binding of a name they read, always above their
first use. `destroy_process_group` goes at the end of the entry point, unless the script (or a helper
of its modules) already destroys the group.

## Fix safety
Safe. Where the setup would have to read a name the script imports only after the first statement
that needs the process group, the finding has no fix, and neither do the DDP wrap and sampler that
would need the group (no wrap without a process group on its path). A script whose helper may join
(an import that could not be read) gets no second process group; what other rules add there is
decided at run time (`dist.is_initialized()`). So is what they add where DDP001 is silenced
(`# ddpfix: ignore[DDP001]`): the process group, if any, is set up where ddpfix does not see it.

Unsafe where every trained model is in `nn.DataParallel`: a process group beside a DataParallel
model would run one unsynchronised copy per process, so the group comes only with DDP302's
conversion (`--unsafe-fixes`), and no fix at all where that conversion cannot be made. The fixes
that mean something only in a distributed script (rank-0 guards on prints, saves, log files and
trackers, the per-rank device, `map_location`, the makedirs race) follow at the same level: a
safe `apply` leaves such a script as it was.
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
        elif facts.training.backward_calls:
            where = facts.index.site(facts.training.backward_calls[0]).stmt
        else:  # trained only through the script's own modules: the first call that trains there
            where = facts.index.site(facts.training.module_training_calls[0]).stmt
        entry = launch.entry
        needs = process_group_needs(facts)
        module_level = isinstance(entry, cst.Module) or any(_runs_before(facts, n, entry) for n in needs)
        first = min((facts.flow.runs_at(n) for n in needs), default=len(facts.module.body))
        if module_level:
            imported = (facts.names.alias_for("torch"), facts.names.alias_for("torch.distributed"))
            late = _bound_late(facts, tuple(n for n in imported if n), first)
            if late is not None:
                line = facts.index.position(facts.module.body[late]).start.line
                ctx.report(
                    anchor_of(where),
                    f"{self.message}; the setup must run before line "
                    f"{facts.index.position(facts.module.body[first]).start.line}, but what it uses is imported "
                    f"only at line {line}: move that import up",
                    fix=NONE,
                )
                ctx.block()  # no wrap or sampler without a process group on their path
                ctx.distributes_at(NONE)
                return
        if ctx.silenced(anchor_of(where)):
            ctx.joins_elsewhere()  # no process group here, by the author's choice: the rest decides at run time
            return
        ctx.joins_at = facts.module if module_level else entry  # (DDP210 broadcasts after it)
        level, message = _dataparallel_level(ctx)
        if level is not None:
            ctx.distributes_at(level)  # rank-0 guards only where the process group comes
        if not ctx.report(anchor_of(where), message and f"{self.message}; {message}", fix=level):
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
        tears_down = launch.tears_down is not False  # the script (or a helper of its modules) destroys it
        if module_level:
            ctx.setup_at_module_level(setup, before=first)
            if not tears_down:
                ctx.plan.insert_after(facts.module.body[-1], teardown, order=Order.TEARDOWN)
            return
        block = entry.body
        body = list(block.body)
        first_stmt = max(strip_docstring(body), _after_bindings(facts, body, (torch, dist)))
        if first_stmt < len(body):
            ctx.plan.insert_before(body[first_stmt], setup, order=Order.PROCESS_GROUP, blank_after=True)
        else:
            ctx.plan.insert_after(body[-1], setup, order=Order.PROCESS_GROUP)
        if tears_down:
            return
        last = body[-1]
        if isinstance(single_small(last), cst.Return):
            ctx.plan.insert_before(
                last, [teardown[0].with_changes(leading_lines=[])], order=Order.TEARDOWN, blank_after=True
            )
        else:
            ctx.plan.insert_after(last, teardown, order=Order.TEARDOWN)


def process_group_needs(facts) -> list[cst.CSTNode]:
    """Where the script's distributed work starts: the trained models (wrapped after their definition),
    the training loaders (their sampler), and any DDP wrap, sampler or collective already written."""
    out: list[cst.CSTNode] = [m.definition.stmt for m in facts.models.trained]
    out += [loader.site.stmt for loader, _ in facts.data.training_loaders]
    out += facts.models.ddp_calls + facts.data.sampler_calls
    out += [c for c in facts.index.calls if facts.ranks.collective_op(c)]
    return out


def _dataparallel_level(ctx: Context) -> tuple[str | None, str | None]:
    """A trained model is in nn.DataParallel (`dataparallel_trains`): a process group is right only
    together with its conversion to DDP (DDP302, an unsafe fix; none where that conversion cannot be made). A process
    group beside the DataParallel would run N unsynchronised copies. (None, None) otherwise."""
    facts = ctx.facts
    models = facts.models
    built = None if models.trained else withheld(ctx)
    if built is not None:
        return NONE, (
            f"{built}: wrap them there first; a process group without the wrap would train one unsynchronised "
            "copy per rank"
        )
    blocked = why_no_wrap(facts) or handed_withheld(ctx)
    if blocked is not None:
        return NONE, f"{blocked}; a process group without the wrap would train one unsynchronised copy per rank"
    if not dataparallel_trains(models) or converts_keeping_plain_path(facts.index, facts.names, models, facts.launch):
        return None, None
    if conversion_blocked(facts.index, facts.names, models):
        return (
            NONE,
            "the model is nn.DataParallel, which cannot be converted automatically (DDP302): convert it by hand",
        )
    return UNSAFE, "the model is nn.DataParallel: the process group comes with its conversion to DDP (DDP302)"


def _runs_before(facts, node: cst.CSTNode, entry) -> bool:
    """Might `node` run before the entry point's setup (outside the entry, no later than it)?"""
    flow = facts.flow
    if flow.only_within(node, entry):
        return False
    where = entry.body if isinstance(entry, cst.FunctionDef) else entry
    return flow.runs_at(node) <= flow.runs_at(where)


def _bound_late(facts, names, first: int) -> int | None:
    """The top-level statement that first binds one of the script's `names` (its own imports of
    torch and torch.distributed), when that is at or after statement `first`."""
    late = None
    for name in names:
        if name in facts.names.aliases:  # the script's own import (a name ddpfix imports goes above `first`)
            i = facts.flow.first_binding([name])
            if i is not None and i >= first and not _movable_import(facts.module.body[i]):
                late = max(i, late or 0)
    return late


def _movable_import(stmt: cst.CSTNode) -> bool:
    """A plain `import torch...` / `from torch... import` line, which the setup can take up with it."""
    small = single_small(stmt)
    if isinstance(small, cst.Import):
        return all((dotted(a.name) or "").split(".")[0] == "torch" for a in small.names)
    return isinstance(small, cst.ImportFrom) and not small.relative and (dotted(small.module) or "").startswith("torch")


def _after_bindings(facts, body: list, names) -> int:
    """The first statement of `body` after those binding one of `names` (a function's own import of
    torch.distributed): the setup reads them."""
    out = 0
    for i, stmt in enumerate(body):
        if binds(stmt) & set(names):
            out = i + 1
    return out


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
