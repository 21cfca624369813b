"""DDP406: print on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.local_writes import EVERY_RANK_PRINT
from ..analysis.summaries import TRAINS
from ..analysis.training import HELPER_DEPTH
from ..edits import guard_site
from ..examples import clean, fixes
from ..factory_reports import report_factory_writes
from ..hoisted_calls import to_hoist
from ..module_guards import guard_module_writes, is_print
from ..rule import Context, Rule
from ..syntax import calls_in, dotted

COLLECTIVE_INSIDE = (
    "print on every rank, of a value whose computation issues a collective every rank must join (or trains, "
    "which does once the model is DDP-wrapped): compute it on every rank first, then print it on rank 0"
)


class UnguardedPrint(Rule):
    code = "DDP406"
    distributed_only = True
    provides = frozenset({"hoisted"})  # its guards take training and collectives out first (guard_site)
    name = "unguarded-print"
    message = "print runs on every rank: output is duplicated once per process"
    docs = """
## What
A `print(...)` statement that every rank runs. In a script ddpfix converts, every such print: the
converted script prints each line once, as the single-process run did. In a script that already
runs distributed (it joins a process group itself, through a helper of its own modules, or starts
its ranks with `mp.spawn`), only the prints that repeat with training: inside a loop that trains
(a backward or an optimizer step in its body, also through the script's own functions and modules),
or in a function called from one (`evaluate()` once per epoch). A message printed once per process
at start-up is noise the author chose to keep, not a defect; N copies of every step's log line are.

Left alone everywhere:
- prints under a rank-0 test (any the rank detector knows: `if rank == 0:`,
  `if args.local_rank in [-1, 0]:`, `if is_main_process():`, `if master_process:`, a node-0 test
  `if args.nr == 0:`, a name bound from one), after an early return on the other ranks, in a
  function only called from such places (a `print0()` helper);
- prints whose text differs per rank: they name the rank or a value computed from it
  (`print(f"[rank {rank}] ...")`, `print(f"using device: {device}")` with `device = f"cuda:{local_rank}"`);
- prints after the script replaced `builtins.print` on the other ranks (`setup_for_distributed(is_master)`,
  in this file or in one of its own modules, a package's `__init__.py` included), earlier in the
  print's function or before every call of that function;
- error messages right before the script gives up (`print(...)` then `sys.exit(1)`, `exit(1)` or
  `raise` in the same block): each failing rank says why;
- prints in the process that starts the ranks with `mp.spawn` (its `__main__` block and the
  functions only it calls): that code runs once.

In a script ddpfix converts, a print inside one of its own modules that the script's calls reach
(`Trainer(...).fit(2)` with `Trainer.log()` printing, in trainer.py) is reported at the call and
guarded in the module, like DDP401's saves there: `if not dist.is_initialized() or dist.get_rank() == 0:`.

## Why
With N processes every line appears N times, interleaved, and per-rank values (a rank's own loss)
read as if they were global.

## Example
```python
print(f"epoch {epoch}: loss {loss.item():.4f}")
```
becomes
```python
if RANK == 0:
    print(f"epoch {epoch}: loss {loss.item():.4f}")
```
Inside a block the fix guards already (a `with open(...)` rank 0 writes), the print gets no guard of
its own. A print that shares its line with other code (`msg = f(x); print(msg)`,
`except ImportError: HAS_X = False; print(...)`) is reported without a fix: a guard around the whole
statement would hide its other work from the other ranks.
A trainer a config names by class and builds through a factory of the script's modules (see
DDP401) that prints on every rank is reported at the factory call; the fix guards the prints of
every class the module offers, in whichever file (a base class's epoch loop), to rank 0.

## Fix safety
Safe: a plain run has RANK 0 and prints exactly as before. A script whose own rank variable a plain
run sets to -1 (`int(os.environ.get("RANK", -1))`) is guarded with `in (-1, 0)`. A value whose
computation issues a collective (`print(f"{evaluate(model, val_loader):.3f}")`, where `evaluate()`
all-reduces its count) is computed first on every rank, `evaluate_result = evaluate(model, val_loader)`,
and only the print is rank 0's: a collective under the guard would wait for the other ranks forever.
So is a call of the script's that trains (`print(f"loss {run_epoch(model, loader, opt):.4f}")` becomes
`run_epoch_result = run_epoch(model, loader, opt)` before the guarded print): under DDP its backward
all-reduces the gradients, and rank 0 alone training would hang.
Inside a lambda or a comprehension it cannot be taken out: that print stays on every rank, reported.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if "print" in facts.names.aliases:
            return  # `from rich import print` and friends: leave alone
        ranks, launch = facts.ranks, facts.launch
        distributed = bool(launch.init_calls or launch.spawn_calls or launch.joins_elsewhere)
        for call in facts.index.statement_calls(lambda c: dotted(c.func) == "print"):
            if any(ranks.depends_on_rank(a.value) for a in call.args if a.keyword is None):
                continue  # print(f"[rank {rank}] ...") reports per rank on purpose
            if ranks.print_silenced(call):
                continue  # setup_for_distributed(is_master) replaced print on the other ranks
            if _gives_up(facts, call):
                continue  # print("ERROR: ..."); sys.exit(1): each failing rank says why
            if distributed and not _repeats_with_training(facts, call):
                continue  # a start-up message of a script that already runs distributed
            if to_hoist(facts, call) is None:
                ctx.report(call, COLLECTIVE_INSIDE, fix="none")
            else:  # the guard takes a collective or training out of the print first
                guard_site(ctx, call)
        if not distributed:  # what a module of the script prints for it (`trainer.log()`): guarded there
            harm = "output is duplicated once per process"
            guard_module_writes(ctx, self, EVERY_RANK_PRINT, "print", harm, is_print, ranks.print_silenced)
            report_factory_writes(ctx, EVERY_RANK_PRINT, "print", harm, is_print)


def _gives_up(facts, call: cst.Call) -> bool:
    """Is `call` in a block that ends by giving up: `raise ...`, or `sys.exit(...)` / `exit(...)` with
    a status other than 0?"""
    stmt = facts.index.site(call).stmt
    block = facts.index.parent.get(stmt)
    body = getattr(block, "body", None)
    if not isinstance(body, (list, tuple)) or not body or body[-1] is stmt:
        return False
    last = body[-1]
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1:
        return False
    small = last.body[0]
    if isinstance(small, cst.Raise):
        return True
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    exit_call = small.value
    if (facts.names.call_qual(exit_call) or dotted(exit_call.func)) not in EXITS or not exit_call.args:
        return False
    status = exit_call.args[0].value
    return not (isinstance(status, cst.Integer) and status.evaluated_value == 0)


def _repeats_with_training(facts, node: cst.CSTNode, depth: int = 0) -> bool:
    """Does `node` run again and again while the script trains: inside a loop that trains, or in a
    function called from one?"""
    child = node
    for anc in facts.index.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)) and child is anc.body and _trains(facts, anc.body):
            return True
        if isinstance(anc, cst.FunctionDef):
            if depth >= HELPER_DEPTH:
                return False
            return any(_repeats_with_training(facts, c, depth + 1) for c in facts.index.callers_of(anc))
        if isinstance(anc, (cst.ClassDef, cst.Lambda)):
            return False
        child = anc
    return False


def _trains(facts, body: cst.CSTNode) -> bool:
    return facts.training.trains_in(body) or any(facts.modules.call_does(c, TRAINS) for c in calls_in(body))


EXITS = {"sys.exit", "exit", "quit", "os._exit"}


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
            print(f"step {step}: loss {loss.item():.4f}")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if RANK == 0:
                print(f"step {step}: loss {loss.item():.4f}")
        """,
        note="One copy of each line, from rank 0:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] final loss {loss.item():.4f}")
        """,
        note="A line that names its rank is meant to come from every rank:",
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
                print(f"step {step}: loss {loss.item():.4f}")
        """,
        note="Printed on rank 0 only:",
    ),
    clean(
        """
        import sys

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        if not torch.distributed.is_gloo_available():
            print("ERROR: this script needs the gloo backend")
            sys.exit(1)
        print("Initializing a new model from scratch")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0:
                print(f"step {step}: loss {loss.item():.4f}")
        """,
        note="A script that already runs distributed keeps its start-up message and its error message on every rank:",
    ),
)
