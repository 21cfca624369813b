"""DDP411: console logging at INFO or DEBUG on every rank of a script the conversion distributes."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import code_of, kwarg

VERBOSE = frozenset({"logging.INFO", "logging.DEBUG", "logging.NOTSET"})
VERBOSE_NAMES = frozenset({"INFO", "DEBUG", "NOTSET"})
WARNING = 30  # logging.WARNING


class UnguardedConsoleLog(Rule):
    code = "DDP411"
    distributed_only = True
    name = "unguarded-console-log"
    message = "logging to the console at INFO on every rank: each record is printed once per process"
    docs = """
## What
`logging.basicConfig(level=logging.INFO)` (or `DEBUG`, `"INFO"`, `20`) with no `filename=` and no
`handlers=`: the root logger writes every record of INFO and above to the console, in a script that
the conversion makes distributed. Under `torchrun` each rank configures the same logger, so every
`logger.info(...)` line comes out once per process.

Left alone: a level that already depends on the rank (`logging.INFO if rank == 0 else
logging.WARN`), a call only some ranks make, a log file (`filename=`, DDP405's), handlers the
script builds itself, and a script that runs distributed already (its author chose what each rank
logs, as DDP406 leaves its start-up prints).

## Why
With N processes every line appears N times, interleaved, and per-rank values read as if they were
global: the same noise as a `print` on every rank (DDP406), through the logging module.

## Example
```python
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
```
becomes
```python
logging.basicConfig(level=logging.INFO if RANK == 0 else logging.WARNING, format="%(asctime)s %(message)s")
```

## Fix safety
Safe: a plain run has RANK 0 and logs as before. The other ranks still log warnings and errors,
each for itself (a rank that fails says why). A script rank variable a plain run sets to -1 is
tested with `in (-1, 0)`.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        launch = facts.launch
        if launch.init_calls or launch.spawn_calls or launch.joins_elsewhere:
            return  # already distributed: what each rank logs is the author's choice
        for call in facts.names.calls_to("logging.basicConfig"):
            if kwarg(call, "filename") is not None or kwarg(call, "handlers") is not None:
                continue  # a log file (DDP405), or the script's own handlers
            level = kwarg(call, "level")
            if level is None or not _verbose(facts, level.value):
                continue
            if facts.ranks.rank_guarded(call) or facts.ranks.depends_on_rank(level.value):
                continue
            if ctx.report(level.value):
                logging = ctx.plan.ref("logging", "logging", style="import")
                quiet = f"{code_of(level.value)} if {ctx.rank0(call)} else {logging}.WARNING"
                ctx.plan.replace(level.value, lambda n, e=quiet: cst.parse_expression(e))


def _verbose(facts, value: cst.BaseExpression) -> bool:
    """Is `value` a logging level below WARNING (INFO, DEBUG, NOTSET) spelled as a constant?"""
    if facts.names.qualname(value) in VERBOSE:
        return True
    if type(value) is cst.SimpleString:
        return str(value.evaluated_value).upper() in VERBOSE_NAMES
    if type(value) is cst.Integer:
        return int(value.evaluated_value) < WARNING
    return False


EXAMPLES = (
    fixes(
        """
        import logging

        import torch
        import torch.nn as nn

        logging.basicConfig(level=logging.INFO, format="%(message)s")
        log = logging.getLogger(__name__)

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.info("step %d: loss %.4f", step, loss.item())
        """,
        """
        import logging
        import os

        import torch
        import torch.nn as nn

        RANK = int(os.environ.get("RANK", 0))

        logging.basicConfig(level=logging.INFO if RANK == 0 else logging.WARNING, format="%(message)s")
        log = logging.getLogger(__name__)

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.info("step %d: loss %.4f", step, loss.item())
        """,
        note="Rank 0 logs at INFO; the other ranks keep their warnings and errors:",
    ),
    clean(
        """
        import logging

        import torch
        import torch.nn as nn

        logging.basicConfig(level=logging.INFO, filename="train.log")
        log = logging.getLogger(__name__)

        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            log.info("step %d: loss %.4f", step, loss.item())
        """,
        note="A log file is DDP405's (rank 0 opens it):",
    ),
)
