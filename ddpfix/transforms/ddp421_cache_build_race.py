"""DDP421: a file cache every rank tests for and loads, built and saved on rank 0 at the same time."""

from __future__ import annotations

import libcst as cst

from ..analysis.after_join import why_not_after_join
from ..analysis.spawn_parent import runs_before_spawn
from ..analysis.summaries import LOAD, SAVE
from ..examples import clean, fixes
from ..file_io_paths import file_paths
from ..rank_first import after_barrier, in_first_context, rank_first
from ..rule import Context, Rule
from ..syntax import calls_in, dotted, walk

CHECKS = ("exists", "isfile", "isdir", "is_file", "is_dir", "lexists")
LEAVES = (cst.Return, cst.Yield, cst.Break, cst.Continue, cst.Raise)


class CacheBuildRace(Rule):
    code = "DDP421"
    distributed_only = True
    name = "cache-build-race"
    message = (
        "cache file loaded by every rank that finds it and saved by rank 0 that does not: "
        "a rank that looks while rank 0 writes reads it half-written"
    )
    requires = ("DDP001",)
    docs = """
## What
A file used as a cache: an `if` that tests whether it is there (`os.path.exists(fn)`, `isfile`,
pathlib's `p.exists()`, ...) and loads it in one branch while the other branch builds what it holds
and saves it, on rank 0 (guarded by the script, or by DDP401's fix). Also the `try:` form: the load
in the `try`, the build and the save in an `except` of it. The load and the save are matched by the
file they name, as DDP410 matches them (`torch.save`/`torch.load`, `np.save`/`np.load`,
`pickle` through `open`, a helper of the script that saves or loads).

## Why
Every rank runs the test at its own moment. Rank 0 finds no file, builds the data and starts
writing; a rank that tests a moment later finds the file rank 0 is still writing and loads it:
`EOFError: Ran out of input`, `PytorchStreamReader failed reading zip archive`, or silently less
data. Whether it happens depends on timing, so a run that worked once fails the next time, most
often on the first run, when there is no cache yet.

## Example
```python
fn = "corpus.data"
if os.path.exists(fn):
    corpus = torch.load(fn)
else:
    corpus = data.Corpus(args.data)
    torch.save(corpus, fn)
```
becomes
```python
fn = "corpus.data"
if DISTRIBUTED and RANK != 0:
    dist.barrier()  # the other ranks wait while rank 0 builds the cache
if os.path.exists(fn):
    corpus = torch.load(fn)
else:
    corpus = data.Corpus(args.data)
    if RANK == 0:
        torch.save(corpus, fn)
if DISTRIBUTED and RANK == 0:
    dist.barrier()
```
Rank 0 runs the `if` first and writes the cache; the other ranks wait at the barrier, then find the
whole file and load it (they no longer build the data themselves). The test is the script's own
rank variable where it has one. A plain run (`DISTRIBUTED` false) runs exactly as before.

## Fix safety
Safe where the `if` (or `try`) runs on every rank after the process group is joined: every rank
reaches both barriers, and the data each rank ends with is the same as before (the cache holds what
the build made). Otherwise the diagnostic says why there is no fix: the statement can leave early
(`return`, `break`, `raise`: the rank would skip the second barrier), issues a collective itself,
runs before the process group exists, or the script starts its own processes (`mp.spawn`). A cache
already inside a "main process first" context manager, or after a barrier only the other ranks wait
at, is not reported. Several nodes without a shared file system each build their own cache on
ranks other than 0 and do not save it: correct, but built once per node.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        saved_on_rank0 = bool(  # DDP401 guards every save of a script that runs distributed
            facts.launch.init_calls or facts.models.ddp_calls or facts.models.trained or facts.training.trains
        )
        seen: set[int] = set()
        for load in facts.index.calls:
            loaded = file_paths(facts, load, LOAD)
            if not loaded or facts.ranks.rank_guarded(load):
                continue
            stmt = _cache_statement(facts, load, loaded, saved_on_rank0)
            if stmt is None or id(stmt) in seen:
                continue
            seen.add(id(stmt))
            if in_first_context(facts, stmt) or after_barrier(facts, stmt):
                continue  # the script already lets rank 0 go first
            if runs_before_spawn(facts.index, facts.launch, stmt):
                continue  # the launching process builds the cache once, before it starts the workers
            why = _why_not(facts, stmt) or why_not_after_join(facts, stmt)
            if why is None and facts.launch.spawn_calls:
                why = "mp.spawn starts the ranks: let the worker's rank 0 build the cache first, behind a barrier, by hand"
            if why is not None:
                ctx.report(load, f"{self.message}; {why}", fix="none")
                continue
            if ctx.report(load):
                rank_first(ctx, stmt, stmt, ctx.not_rank0(stmt), ctx.rank0(stmt), "rank 0 builds the cache")


def _cache_statement(facts, load: cst.Call, loaded: set[str], saved_on_rank0: bool) -> cst.BaseStatement | None:
    """The `if` (the first of its `elif` chain) or `try` in `load`'s function that loads the cache in
    one branch and saves it, on rank 0, in another; None when there is none."""

    def saves_it(node: cst.CSTNode) -> bool:
        return any(
            file_paths(facts, c, SAVE) & loaded and (saved_on_rank0 or facts.ranks.rank_guarded(c))
            for c in calls_in(node)
        )

    index = facts.index
    for anc in index.ancestors(load):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, cst.If) and _tests_existence(anc.test) and not index.contains(anc.test, load):
            other = anc.orelse if index.contains(anc.body, load) else anc.body
            if other is not None and saves_it(other):
                while isinstance(index.parent.get(anc), cst.If) and index.parent.get(anc).orelse is anc:
                    anc = index.parent.get(anc)  # an `elif`: the chain's first `if`
                return anc
        if isinstance(anc, cst.Try) and index.contains(anc.body, load):
            if any(saves_it(handler) for handler in anc.handlers):
                return anc
    return None


def _tests_existence(test: cst.BaseExpression) -> bool:
    return any((dotted(c.func) or "").rsplit(".", 1)[-1] in CHECKS for c in calls_in(test))


def _why_not(facts, stmt: cst.BaseStatement) -> str | None:
    """Why the barriers cannot go around `stmt`, if they cannot."""
    if facts.index.in_one_line_suite(stmt):
        return "it shares its line with other code: move it to a line of its own"
    for node in walk(stmt):
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, LEAVES) and not _inside_nested(facts, node, stmt):
            return "it can leave early, and a rank that leaves would skip the second barrier: build the cache in a statement of its own"
    if facts.ranks.collectives_in(stmt):
        return "it also issues collectives: build the cache in a statement of its own"
    return None


def _inside_nested(facts, node: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """Is `node` in a function, class or lambda defined inside `stmt`, or (a `break`/`continue`) in a
    loop inside it?"""
    for anc in facts.index.ancestors(node):
        if anc is stmt:
            return False
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return True
        if isinstance(node, (cst.Break, cst.Continue)) and isinstance(anc, (cst.For, cst.While)):
            return True
    return False


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        dist.init_process_group("gloo")
        fn = "features.pt"
        if os.path.exists(fn):
            x = torch.load(fn)
        else:
            x = torch.randn(64, 4)
            if RANK == 0:
                torch.save(x, fn)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1
        dist.init_process_group("gloo")
        fn = "features.pt"
        if DISTRIBUTED and RANK != 0:
            dist.barrier()  # the other ranks wait while rank 0 builds the cache
        if os.path.exists(fn):
            x = torch.load(fn)
        else:
            x = torch.randn(64, 4)
            if RANK == 0:
                torch.save(x, fn)
        if DISTRIBUTED and RANK == 0:
            dist.barrier()
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        """,
        note="Rank 0 builds and saves the cache while the others wait; then they load the whole file:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist

        RANK = int(os.environ.get("RANK", 0))
        dist.init_process_group("gloo")
        fn = "features.pt"
        if RANK != 0:
            dist.barrier()
        if os.path.exists(fn):
            x = torch.load(fn)
        else:
            x = torch.randn(64, 4)
            torch.save(x, fn)
        if RANK == 0:
            dist.barrier()
        """,
        note="The script already lets rank 0 go first:",
    ),
)
