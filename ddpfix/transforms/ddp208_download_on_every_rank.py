"""DDP208: every rank downloads the same dataset or weights into the same place at once."""

from __future__ import annotations

import libcst as cst

from ..analysis.after_join import why_not_after_join
from ..analysis.spawn_parent import runs_before_spawn
from ..examples import clean, fixes
from ..rank_first import after_barrier, in_first_context, rank_first
from ..rule import Context, Rule
from ..syntax import calls_in, dotted, is_literal, kwarg, walk

# Calls that fetch from the network straight into a shared local file or folder (qualified names).
# Not here: downloads that guard themselves. The Hugging Face hub (`from_pretrained` of transformers,
# diffusers, PEFT, sentence-transformers, timm's hub weights, `hf_hub_download`, `snapshot_download`)
# and `datasets.load_dataset` hold a file lock while they fetch, so the other processes wait and then
# read the cache; torch.hub's `load_state_dict_from_url` / `download_url_to_file` (and the pretrained
# weights of torchvision models, which go through it) write to a temporary file of their own and
# rename it into place, so no process reads a half-written file.
DOWNLOADS = {
    "urllib.request.urlretrieve",
    "wget.download",
    "torch.hub.load",  # extracts the repository into the shared hub folder, removing what is there
    "torchvision.datasets.utils.download_url",
    "torchvision.datasets.utils.download_and_extract_archive",
}
# Downloads that write their file again on every call (no check of what is on disk): after rank 0's,
# another rank's would rewrite the file while rank 0 reads it, so they run on local rank 0 only.
OVERWRITES = {"urllib.request.urlretrieve", "wget.download"}
CHECKS = ("exists", "isfile", "isdir", "is_file", "is_dir")


class DownloadOnEveryRank(Rule):
    code = "DDP208"
    distributed_only = True
    name = "download-on-every-rank"
    message = "download runs on every rank at once: the processes write the same files over each other"
    requires = ("DDP001",)
    docs = """
## What
A dataset or code fetched from the network on every rank into the same place: a torchvision
dataset with `download=True`, `torchvision.datasets.utils.download_url` /
`download_and_extract_archive`, `urllib.request.urlretrieve`, `wget.download`, `torch.hub.load`.

Downloads that order themselves are not reported: the Hugging Face hub (`from_pretrained(...)` of
transformers / diffusers / PEFT / sentence-transformers, timm's pretrained weights, `hf_hub_download`,
`snapshot_download`) and `datasets.load_dataset` hold a file lock while they fetch, and torch.hub's
`load_state_dict_from_url` (behind torchvision's pretrained models) writes a temporary file of its own
and renames it into place. Every rank may still fetch once, but none reads a half-written file.

## Why
Every process starts the same download into the same folder at the same moment. They write the same
files over each other, one process reads an archive another is still writing (`EOFError`,
`zipfile.BadZipFile: File is not a zip file`, `RuntimeError: ... failed finding central directory`,
a checksum error), and the dataset is fetched N times.

## Example
```python
train_set = datasets.MNIST("data", train=True, download=True, transform=transform)
```
becomes
```python
if DISTRIBUTED and LOCAL_RANK != 0:
    dist.barrier()  # the other ranks wait while local rank 0 downloads
train_set = datasets.MNIST("data", train=True, download=True, transform=transform)
if DISTRIBUTED and LOCAL_RANK == 0:
    dist.barrier()
```
Local rank 0 of each node downloads while the others wait at a barrier; then it joins the barrier and
the others load what is now on disk. Adjacent downloads share one pair of barriers; an `if` that
checks for the file first (`if not os.path.exists(path): urlretrieve(url, path)`) is kept inside
them. A download that writes its file again on every call, with no such check (`urlretrieve(url,
path)`, `wget.download(url, path)` on a line of their own), runs on local rank 0 only (`if LOCAL_RANK ==
0:` around it, inside the barriers): after rank 0's, another rank's would rewrite the file while rank 0
reads it. The download may be in a function or method the entry point reaches after the join, also
through an instance (`solver = Solver(args)`, then `solver.run()` calling `self.load_data()`). A
plain run (`DISTRIBUTED` false) runs exactly as before. Several nodes that share one file
system still download once per node at the same time: there, test `RANK` instead of `LOCAL_RANK`.

## Fix safety
Safe where the download is one statement of its own (or one existence-checked `if`) that runs after
the process group is joined, on every rank. Otherwise the diagnostic says why there is no fix: the
download runs before the process group exists (at import time, say), is returned straight out of a
function (`return datasets.MNIST(...)`: assign it first), shares a line with other code, or is an
unchecked `urlretrieve` whose result the script keeps (`path, _ = urlretrieve(...)`). Downloads
already under a rank condition, after a barrier or inside a "main process first" context manager are
not reported, nor are those a script launched with `mp.spawn` makes in the launching process before it
starts the workers (once per machine).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        groups: list[list[cst.BaseStatement]] = []
        seen: set[int] = set()
        for call in facts.index.calls:
            if not _downloads(facts, call) or facts.ranks.rank_guarded(call) or in_first_context(facts, call):
                continue
            if runs_before_spawn(facts.index, facts.launch, call):
                continue  # the launching process downloads once, before it starts the workers
            stmt, why = _statement(facts, call)
            if stmt is not None and id(stmt) in seen:
                continue
            if stmt is not None:
                seen.add(id(stmt))
                if after_barrier(facts, stmt):
                    continue  # the script already orders the ranks here
                why = why or why_not_after_join(facts, stmt)
            if why is None and facts.launch.spawn_calls:
                why = "mp.spawn starts the ranks: let the worker's rank 0 download first, behind a barrier, by hand"
            if why is not None:
                ctx.report(call, f"{self.message}; {why}", fix="none")
                continue
            overwrites = (facts.names.call_qual(call) or "") in OVERWRITES and stmt is facts.index.site(call).stmt
            if overwrites and not _bare_call(stmt, call):
                why = (
                    "its result is kept, and a second download would rewrite the file: download on local rank 0 by hand"
                )
                ctx.report(call, f"{self.message}; {why}", fix="none")
                continue
            if not ctx.report(call):
                continue
            if overwrites:
                ctx.plan.guard(stmt, f"{ctx.env('LOCAL_RANK')} == 0")  # the others find the file on disk
            if groups and _adjacent(facts, groups[-1][-1], stmt):
                groups[-1].append(stmt)
            else:
                groups.append([stmt])
        for group in groups:
            local_rank = ctx.env("LOCAL_RANK")
            rank_first(ctx, group[0], group[-1], f"{local_rank} != 0", f"{local_rank} == 0", "local rank 0 downloads")


def _downloads(facts, call: cst.Call) -> bool:
    qual = facts.names.call_qual(call) or ""
    if qual in DOWNLOADS:
        return True
    if qual.startswith("torchvision.datasets.") and kwarg(call, "download") is not None:
        return not is_literal(kwarg(call, "download").value, False)  # type: ignore[union-attr]
    return False


def _statement(facts, call: cst.Call) -> tuple[cst.BaseStatement | None, str | None]:
    """The statement to put between the barriers, or why there is none."""
    index = facts.index
    if index.in_one_line_suite(call):
        return None, "it shares its line with other code: move it to a line of its own"
    stmt = index.site(call).stmt
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return None, "it runs where the rank barriers cannot go (a default argument or decorator)"
    if isinstance(stmt, cst.SimpleStatementLine):
        if len(stmt.body) > 1:
            return None, "it shares its line with other code: move it to a line of its own"
        if isinstance(stmt.body[0], cst.Return):
            return None, "it is returned straight out of the function: assign it to a name first, then return it"
        while True:  # `if not os.path.exists(path): urlretrieve(url, path)`: the check goes between the barriers too
            block = index.parent.get(stmt)
            owner = index.parent.get(block) if isinstance(block, cst.IndentedBlock) else None
            if not (isinstance(owner, cst.If) and _is_existence_check(owner) and owner.orelse is None):
                break
            stmt = owner
        return stmt, None
    if any(isinstance(n, (cst.Return, cst.Yield, cst.Break, cst.Continue)) for n in walk(stmt)):
        return None, "the statement holding it can leave early: download it in a statement of its own"
    if facts.ranks.collectives_in(stmt):
        return None, "the statement holding it also issues collectives: download it in a statement of its own"
    return stmt, None


def _bare_call(stmt: cst.BaseStatement, call: cst.Call) -> bool:
    """Is `stmt` the call alone (`urlretrieve(url, path)`), its result unused?"""
    return (
        isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr) and stmt.body[0].value is call
    )


def _is_existence_check(node: cst.If) -> bool:
    return any((dotted(c.func) or "").rsplit(".", 1)[-1] in CHECKS for c in calls_in(node.test))


def _adjacent(facts, a: cst.BaseStatement, b: cst.BaseStatement) -> bool:
    """`b` follows `a` in the same block, with only plain statements (no collectives) between them."""
    block = facts.index.parent.get(a)
    if block is None or facts.index.parent.get(b) is not block:
        return False
    body = list(block.body)  # type: ignore[attr-defined]
    i, j = body.index(a), body.index(b)
    between = body[i + 1 : j]
    return j > i and all(isinstance(s, cst.SimpleStatementLine) and not facts.ranks.collectives_in(s) for s in between)


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        from torchvision import datasets, transforms

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        dist.init_process_group("gloo")
        train_set = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
        loader = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set))
        model = DDP(nn.Linear(784, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.flatten(1)), y)
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
        from torch.utils.data import DataLoader
        from torch.utils.data.distributed import DistributedSampler
        from torchvision import datasets, transforms

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1
        dist.init_process_group("gloo")
        if DISTRIBUTED and LOCAL_RANK != 0:
            dist.barrier()  # the other ranks wait while local rank 0 downloads
        train_set = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
        if DISTRIBUTED and LOCAL_RANK == 0:
            dist.barrier()
        loader = DataLoader(train_set, batch_size=64, sampler=DistributedSampler(train_set))
        model = DDP(nn.Linear(784, 10))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.flatten(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Every rank downloads into the same folder at once; local rank 0 downloads first, the others wait for it:",
    ),
    clean(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader
        from torchvision import datasets, transforms

        train_set = datasets.MNIST("data", train=True, download=False, transform=transforms.ToTensor())
        loader = DataLoader(train_set, batch_size=64, shuffle=True)
        model = nn.Linear(784, 10)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.flatten(1)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Data already on disk (download=False): nothing to fetch, nothing to order:",
    ),
)
