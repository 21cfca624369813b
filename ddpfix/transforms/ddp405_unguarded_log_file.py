"""DDP405: log files opened and written on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.effects import FILE_HANDLERS, LOGGER_METHODS
from ..analysis.local_writes import EVERY_RANK_LOG_FILE
from ..devnull_opens import devnull_open, devnull_or_guard, read_back, reads_too
from ..edits import guard, guard_site, opens_for_writing
from ..examples import clean, fixes, reports
from ..module_guards import guard_module_writes
from ..object_guards import guard_object, rank0_object_statements
from ..rule import Context, Rule
from ..syntax import (
    assign_targets,
    assigned_value,
    code_of,
    dotted,
    kwarg,
    mentions,
    method_name,
    positional,
    receiver,
    walk,
)


class UnguardedLogFile(Rule):
    code = "DDP405"
    distributed_only = True
    name = "unguarded-log-file"
    provides = frozenset({"hoisted"})  # its guards take training and collectives out first (guard_site)
    message = "log file opened on every rank: all processes write the same file"
    docs = """
## What
`logging.basicConfig(filename=...)`, a `logging.FileHandler`, a log record, a write-mode
`with open(...)`, or a file kept open and written as the run goes (`log = open(path, "w")`, then
`log.write(...)`, `log.flush()`, `log.close()`) executed by every rank. The kept-open file is opened
and used on rank 0 only, each statement that uses it guarded, where every use is a call of its own
on it in the same scope; used any other way (`print(..., file=log)`, handed to a function that
writes it) it is opened on rank 0 and the other ranks write theirs to `os.devnull` (`log =
open(path, "w") if RANK == 0 else open(os.devnull, "w")`), unless it is read as well (`"a+"`) or
the script reads that path back: then it is reported without a fix. A `with open(path, "a") as log:`
around code every rank must run (a validation whose forward broadcasts the wrapper's buffers, a
`backward()`, a collective, a `torch.save` that DDP401 guards on its own) is opened the same way
(`with (open(path, "a") if RANK == 0 else open(os.devnull, "a")) as log:`), so the block runs on every
rank and the file gets rank 0's lines only. A file opened inside the one
call of a statement (`pickle.dump(vocab, open(path, "wb"))`, `json.dump(history, open(path, "w"))`,
`open(path, "w").write(text)`) is written there: the statement runs on rank 0, or, where the script reads that path back (`pickle.load(open(path,
"rb"))`), it is reported without a fix (the others would read before rank 0 has written; a barrier
between is for the author to place). Left alone: a file named per rank
(`f"log_rank{rank}.txt"`, `os.path.join(out, f"train_{rank}.log")`, also through a variable), a
handler created or added on rank 0 only (`if is_main_process(): logger.addHandler(handler)`), code
after an early return on the other ranks, and the records of a logger the script quiets on the
other ranks (`logger.setLevel(logging.INFO if is_master else logging.WARN)`, or a `setLevel` only
rank 0 runs).

A log file opened inside one of the script's own modules with no rank test around it there
(`logging.basicConfig(filename=...)` in the `__init__` of a `Trainer` class of `trainer.py`) is
reported at the script's call (`Trainer(...)`), with the module's file and line, and the fix guards
it in the module with a test decided at run time (true in a plain run and on rank 0 however the
ranks were launched):
```python
        if not dist.is_initialized() or dist.get_rank() == 0:
            logging.basicConfig(filename=os.path.join(self.writer.log_dir, "training.log"))
```
The other ranks' log records then reach no file (logging's last-resort handler shows warnings and
errors only). A handler bound to a name there (`handler = logging.FileHandler(...)`) is used beyond
its own statement and is reported without a fix. A file a module opens for writing (`with open(path,
"wb") as f:` in a helper that writes sample images) is reported at the script's call
(`solver.train()`), with the module's file and line, and the fix guards the whole `with` there the
same way. One opened elsewhere than as the one item of a `with` or a statement of its own (`self.csv_file
= open(filename, "w")` in a `CSVLogger.__init__`, used by its other methods) cannot be guarded there:
the fix keeps the object to rank 0 in the script instead, its construction and every use together,
where each use is a call that is a statement of its own after it in the same scope:
```python
if RANK == 0:
    csv_logger = CSVLogger(fieldnames=["epoch", "loss"], filename="log.csv")
for epoch in range(3):
    ...
    if RANK == 0:
        csv_logger.writerow({"epoch": epoch, "loss": f"{loss.item():.4f}"})
```
An object built alike in either branch (`logger = Logger(path, resume=True)` under `if args.resume:`,
`logger = Logger(path)` under `else:`) has each construction guarded, and its uses after the first.
A class taken from a package that re-exports its module with `from .logger import *` is read in that
module. Where the object cannot be kept to rank 0 in the script either, a file the module binds to a
name (`self.file = open("losses.txt", "w")` in a trainer's `train()`, written by its other methods)
is opened by rank 0 there and the other ranks open os.devnull with the same mode, unless the module
reads that file back or opens it for reading too. An object handed on, stored, rebound to anything else or read in an expression is reported
without a fix.

## Why
All processes append to the same file: interleaved, duplicated or clobbered lines.

## Example
```python
logging.basicConfig(filename="train.log", level=logging.INFO)
...
logger.info("epoch %d loss %.4f", epoch, loss)
```
becomes
```python
if RANK == 0:
    logging.basicConfig(filename="train.log", level=logging.INFO)
...
if RANK == 0:
    logger.info("epoch %d loss %.4f", epoch, loss)
```
Log records are guarded too when the script logs to a file every rank would share, so the other
ranks do not print warnings through logging's last-resort handler.

## Fix safety
Safe. A file handler used anywhere but in plain statements of the same block gets the diagnostic only.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        file_logging = False  # a log file every rank would write, reported here
        for call in facts.index.statement_calls(lambda c: facts.names.call_qual(c) == "logging.basicConfig"):
            filename = kwarg(call, "filename")
            if filename is None and kwarg(call, "handlers") is None:
                continue
            if filename is not None and ranks.depends_on_rank(filename.value):
                continue  # one log file per rank
            if not ranks.rank_guarded(call):
                file_logging = True
                guard_site(ctx, call)
        for call in facts.names.calls_matching(lambda q: q in FILE_HANDLERS):
            filename = positional(call, 0) or kwarg(call, "filename")
            if filename is not None and ranks.depends_on_rank(filename.value):
                continue
            if self._guard_handler(ctx, call):
                file_logging = True
        if file_logging:
            quiet = _quiet_loggers(facts)
            for call in facts.index.statement_calls(lambda c: _is_log_record(facts, c)):
                if "" in quiet or dotted(receiver(call) or cst.Name("_")) in quiet:
                    continue  # a logger the script already quiets on the other ranks
                guard_site(ctx, call, "log record emitted on every rank: the log file gets one copy per process")
        guarded, kept = _write_opens(facts)
        for stmt in guarded:
            guard_site(ctx, stmt, "file opened for writing on every rank: all processes write the same file")
        for call in kept:  # `with open(log, "a") as f:` around a validation, a save: every rank runs the block
            _devnull_or_report(ctx, call, "file opened for writing on every rank around code every rank runs")
        for call in _inline_opens(facts):  # `pickle.dump(vocab, open(path, "wb"))`: written where it is opened
            message = "file opened for writing on every rank: all processes write the same file"
            read = read_back(facts, call)
            if read is not None:  # rank 0 alone writing it, the others could read it before it is there
                ctx.report(
                    call,
                    f"{message}; it is read back at line {read}: write it on rank 0 and let the others "
                    "wait at a barrier before they read it (by hand)",
                    fix="none",
                )
            else:
                guard_site(ctx, call, message)
        for call in _handle_opens(facts):  # `log = open(path, "w")`, then `log.write(...)` as the run goes
            statements = rank0_object_statements(ctx, call)
            if statements is None:  # handed on, or used in ways no guard can follow: the others write nowhere
                name = assign_targets(facts.index.site(call).stmt)[0]
                _devnull_or_report(ctx, call, f"{name} is a file every rank opens for writing")
            elif ctx.report(call, "file opened for writing on every rank: all processes write the same file"):
                guard_object(ctx, statements, call)
        harm = "all processes write the same file"
        # `write_samples(images, f"samples_rank{rank}.pgm")`: the call names a file of its own per rank
        per_rank = lambda call: any(ranks.depends_on_rank(a.value) for a in call.args)  # noqa: E731
        guard_module_writes(
            ctx,
            self,
            EVERY_RANK_LOG_FILE,
            "file for writing",
            harm,
            _opens_log_file,
            per_rank,
            verb="opens a",
            instead=rank0_object_statements,
            last=(devnull_or_guard, "the fix has rank 0 write it there, the other ranks os.devnull"),
        )

    def _guard_handler(self, ctx: Context, call: cst.Call) -> bool:
        """Report a file handler every rank creates and uses; True when it is one."""
        facts = ctx.facts
        if facts.ranks.rank_guarded(call):
            return False
        site = facts.index.site(call)
        targets = assign_targets(site.stmt)
        if not targets:  # logger.addHandler(logging.FileHandler(...))
            guard_site(ctx, call)
            return True
        name = targets[0]
        scope_users = [
            n
            for n in walk(facts.index.scope_of(call))
            if isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) == name and not _binds(facts, n)
        ]
        if scope_users and all(facts.ranks.rank_guarded(n) for n in scope_users):
            return False  # `if is_master: logger.addHandler(handler)`: only rank 0 writes to it
        users = [s for s in site.block.body if s is not site.stmt and mentions(s, name)]
        in_block = sum(
            1 for s in users for n in walk(s) if isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) == name
        )
        if in_block != len(scope_users) or not all(_is_statement_call(s) for s in users):
            ctx.report(call, f"{name} writes a log file on every rank: create and use it on rank 0 only", fix="none")
            return True
        if ctx.report(call):
            guard(ctx, site.stmt, ctx.rank0(call))
            for s in users:
                guard(ctx, s, ctx.rank0(call))
        return True


def _devnull_or_report(ctx: Context, call: cst.Call, message: str) -> None:
    """Have the ranks other than 0 open os.devnull instead of the file `call` opens for writing, unless
    the file is read as well (then only the finding, with the edit to make)."""
    if read_back(ctx.facts, call) is not None or reads_too(call):
        ctx.report(call, f"{message}: open and use it on rank 0 only", fix="none")
    elif ctx.report(call, f"{message}: the other ranks write theirs to os.devnull"):
        devnull_open(ctx, call)


def _opens_log_file(facts, call: cst.Call) -> bool:
    """`logging.basicConfig(filename=...)`, `logger.addHandler(logging.FileHandler(...))` or `open(path, "w")`
    as a statement of its own (the `with` it opens, for `open`): what a guard can hold (a handler bound to a
    name is used beyond it, so is not)."""
    q = facts.names.call_qual(call) or ""
    if q == "logging.basicConfig" or (dotted(call.func) == "open" and opens_for_writing(call)):
        return True
    return method_name(call) == "addHandler" and any(
        isinstance(a.value, cst.Call) and facts.names.call_qual(a.value) in FILE_HANDLERS for a in call.args
    )


def _binds(facts, node: cst.CSTNode) -> bool:
    """Is `node` the target of its assignment (`handler = ...`)?"""
    parent = facts.index.parent.get(node)
    return isinstance(parent, cst.AssignTarget) and parent.target is node


def _quiet_loggers(facts) -> set[str]:
    """Loggers the script quiets on the other ranks: `logger.setLevel(logging.INFO if is_master else
    logging.WARN)`, or a `setLevel` / `basicConfig(level=...)` that only some ranks run ("" is the root
    logger, which every logger defers to)."""
    ranks = facts.ranks
    out: set[str] = set()
    for call in facts.index.calls:
        q = facts.names.call_qual(call) or ""
        if method_name(call) == "setLevel" and call.args:
            if ranks.depends_on_rank(call.args[0].value) or ranks.rank_guarded(call):
                recv = receiver(call)
                name = dotted(recv) if recv is not None else None
                root = (
                    isinstance(recv, cst.Call) and not recv.args and facts.names.call_qual(recv) == "logging.getLogger"
                )
                out.add("" if root else name or "")
        elif q == "logging.basicConfig":
            level = kwarg(call, "level")
            if level is not None and (ranks.depends_on_rank(level.value) or ranks.rank_guarded(call)):
                out.add("")
    return out


def _is_statement_call(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)


def _is_log_record(facts, call: cst.Call) -> bool:
    if method_name(call) not in LOGGER_METHODS:
        return False
    recv = receiver(call)
    name = dotted(recv) if recv is not None else None
    if name is None:
        return False
    if facts.names.qualname(recv) == "logging":
        return True
    base = name.split(".")[-1].lower()
    return "log" in base


def _shared_write_opens(facts) -> list[cst.Call]:
    """`open(path, "w")` calls whose path is the same on every rank, outside a class (its callers
    decide which rank runs a method)."""
    out = []
    for call in facts.index.calls:
        if dotted(call.func) != "open" or not opens_for_writing(call):
            continue
        path = positional(call, 0) or kwarg(call, "file")
        if path is not None and facts.ranks.depends_on_rank(path.value):
            continue  # per-rank file name
        if facts.index.enclosing(call, cst.ClassDef) is None:
            out.append(call)
    return out


def _handle_opens(facts) -> list[cst.Call]:
    """`name = open(path, "w")`: a file kept open and written as the run goes, by every rank."""
    out = []
    for call in _shared_write_opens(facts):
        stmt = facts.index.site(call).stmt
        targets = assign_targets(stmt)
        if assigned_value(stmt) is call and len(targets) == 1 and "." not in targets[0]:
            if not facts.ranks.rank_guarded(call):
                out.append(call)
    return out


def _inline_opens(facts) -> list[cst.Call]:
    """`pickle.dump(vocab, open(path, "wb"))`, `json.dump(cfg, open(path, "w"))`, `open(path,
    "w").write(text)`: a file opened inside the one call of an expression statement, written and
    left to close there."""
    out = []
    for call in _shared_write_opens(facts):
        stmt = facts.index.site(call).stmt
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and small.value is not call:
            out.append(call)
    return out


def _write_opens(facts) -> tuple[list[cst.With], list[cst.Call]]:
    """`with open(path, "w") as f:` around a block that neither trains, synchronises nor saves (guarded
    whole), and the opens of those around a block that does (every rank must run it; DDP401 guards a
    save in it): `with open(log_path, "a") as log:` around a validation that writes the log."""
    whole, kept = [], []
    for call in _shared_write_opens(facts):
        parent = facts.index.parent.get(call)
        with_node = facts.index.parent.get(parent) if isinstance(parent, cst.WithItem) else None
        if not isinstance(with_node, cst.With) or len(with_node.items) != 1 or parent.item is not call:
            continue
        body_calls = [c for c in walk(with_node.body) if isinstance(c, cst.Call)]
        handle = parent.asname.name if parent.asname is not None else None
        saves = [c for c in body_calls if facts.names.call_qual(c) == "torch.save"]
        if handle is not None and any(mentions(c, code_of(handle)) for c in saves):
            continue  # `torch.save(state, f)` into the file it opens: DDP401 guards the whole statement
        if saves or any(
            method_name(c) == "backward" or (facts.names.call_qual(c) or "").startswith("torch.distributed")
            for c in body_calls
        ):
            kept.append(call)
        else:
            whole.append(with_node)
    return whole, kept


EXAMPLES = (
    fixes(
        """
        import logging

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        logger = logging.getLogger(__name__)
        dist.init_process_group("gloo")
        logging.basicConfig(filename="train.log", level=logging.INFO)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            logger.info("step %d loss %.4f", step, loss.item())
        """,
        """
        import logging
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))

        logger = logging.getLogger(__name__)
        dist.init_process_group("gloo")
        if RANK == 0:
            logging.basicConfig(filename="train.log", level=logging.INFO)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if RANK == 0:
                logger.info("step %d loss %.4f", step, loss.item())
        """,
        note="The log file is configured and written on rank 0 only:",
    ),
    reports(
        """
        import logging

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        logger = logging.getLogger(__name__)
        handler = logging.FileHandler("train.log")
        for h in (handler, logging.StreamHandler()):
            logger.addHandler(h)
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message="handler writes a log file on every rank: create and use it on rank 0 only",
        note=(
            "Reported without a fix: the handler is used beyond plain calls of the same block, so one `if` "
            "cannot hold it and its uses:"
        ),
    ),
    clean(
        """
        import logging

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        logging.basicConfig(level=logging.INFO)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        with open(f"loss-rank{rank}.txt", "w") as f:
            print(f"{loss.item():.4f}", file=f)
        """,
        note="Logging to the console, and a file per rank, named after the rank:",
    ),
)
